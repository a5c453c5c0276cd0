/**
 * `pods/<name>/eviction` (policy/v1 Eviction, POST): a pod deletion that respects PodDisruptionBudgets, as
 * upstream's pkg/registry/core/pod/storage/eviction.go.
 *
 * - A pod that is Succeeded, Failed, Pending or already being deleted is deleted without asking a budget.
 * - More than one budget selecting the pod: a 500 Failure Status (upstream does not support it).
 * - One budget: a Ready pod needs `disruptionsAllowed > 0` — else 429 TooManyRequests with the
 *   `DisruptionBudget` cause — and decrements it, recording the pod in `disruptedPods`. A pod that is not
 *   Ready is deleted without a decrement while the budget is met (or with `unhealthyPodEvictionPolicy:
 *   AlwaysAllow`).
 * - The pod gets the `DisruptionTarget` condition (reason `EvictionByEvictionAPI`), then is deleted with
 *   the Eviction's `deleteOptions` (grace period, preconditions, dryRun).
 */
import { isObject, rfc3339, type KubeObject } from '../object.js';
import { budgetSelects } from '../resources/pod-disruption-budgets.js';
import { isPodReady } from '../controllers/pod-control.js';
import { disruptionAllowedCondition } from '../controllers/disruption-status.js';
import type { Registry } from './registry.js';
import type { DeleteOptions } from './registry-types.js';
import type { RequestUser } from './resource-type.js';
import { ApiError, badRequest, conflict, forbidden, type Status } from './status.js';

/** Beyond this many evictions the disruption controller has not yet seen, evictions are refused. */
const maxDisruptedPods = 2000;
const propagationPolicies = ['Foreground', 'Background', 'Orphan'] as const;
const violates = "Cannot evict pod as it would violate the pod's disruption budget.";

function tooManyRequests(why: string, retryAfterSeconds: number): ApiError {
  return new ApiError(429, 'TooManyRequests', violates, {
    ...(retryAfterSeconds ? { retryAfterSeconds } : {}),
    causes: [{ reason: 'DisruptionBudget', message: why }],
  });
}

const stillProcessing = (pdb: string) =>
  tooManyRequests(`The disruption budget ${pdb} is still being processed by the server.`, 10);

export interface EvictOptions {
  /** `?dryRun=All` on the request. */
  dryRun: boolean;
  user?: RequestUser | undefined;
}

/** The Eviction's deleteOptions, with the request's dryRun (they must agree when both are given). */
function evictionDeleteOptions(eviction: Record<string, any>, options: EvictOptions): DeleteOptions {
  const d = isObject(eviction.deleteOptions) ? eviction.deleteOptions : {};
  const bodyDryRun = Array.isArray(d.dryRun) ? (d.dryRun as unknown[]) : [];
  if (bodyDryRun.some((v) => v !== 'All'))
    throw badRequest(`dryRun: Unsupported value: ${JSON.stringify(bodyDryRun)}: supported values: "All"`);
  const grace = d.gracePeriodSeconds;
  if (grace !== undefined && grace !== null && (typeof grace !== 'number' || !Number.isInteger(grace)))
    throw badRequest('deleteOptions.gracePeriodSeconds: must be an integer');
  const pre = isObject(d.preconditions) ? d.preconditions : undefined;
  const policy: unknown = d.propagationPolicy;
  if (policy !== undefined && policy !== null && !propagationPolicies.includes(policy as never))
    throw badRequest(
      `propagationPolicy: Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan"`,
    );
  return {
    ...(typeof grace === 'number' ? { gracePeriodSeconds: grace } : {}),
    ...(pre
      ? { preconditions: { uid: pre.uid ?? undefined, resourceVersion: pre.resourceVersion ?? undefined } }
      : {}),
    ...(typeof policy === 'string'
      ? { propagationPolicy: policy as DeleteOptions['propagationPolicy'] }
      : {}),
    dryRun: options.dryRun || bodyDryRun.includes('All'),
    user: options.user,
  };
}

/** Evicts pod `namespace/name`; the Status to answer with (201 Success, or the 500 of two budgets). */
export function evictPod(
  registry: Registry,
  namespace: string,
  name: string,
  body: unknown,
  options: EvictOptions,
): Status {
  if (!isObject(body)) throw badRequest('the body of an eviction must be a policy/v1 Eviction object');
  if (body.kind !== undefined && body.kind !== 'Eviction')
    throw badRequest(`${String(body.kind)} cannot be handled as an Eviction`);
  if (body.metadata?.name !== name) throw badRequest('name in URL does not match name in Eviction object');
  const bodyNamespace = body.metadata?.namespace;
  if (bodyNamespace && bodyNamespace !== namespace)
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  const deleteOptions = evictionDeleteOptions(body, options);
  const pods = registry.byStorage('pods');
  const pod = registry.get(pods, namespace, name);
  const rvUnset = !deleteOptions.preconditions?.resourceVersion;

  if (canIgnoreBudget(pod)) {
    // Terminal, not yet running, or already going: deleting it disrupts nothing more.
    const enforce = !isTerminal(pod) && !pod.metadata.deletionTimestamp && rvUnset;
    deleteWithCondition(
      registry,
      namespace,
      name,
      enforce ? withResourceVersion(deleteOptions, pod) : deleteOptions,
    );
    return success();
  }

  const budgets = registry.store
    .listAll('poddisruptionbudgets', namespace)
    .map((s) => s.object)
    .filter((pdb) => budgetSelects(pdb, pod));
  if (budgets.length > 1) {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
      code: 500,
    };
  }
  let guardReadiness = false;
  const pdb = budgets[0];
  if (pdb) {
    const status = pdb.status ?? {};
    const unhealthyMayGo =
      pdb.spec?.unhealthyPodEvictionPolicy === 'AlwaysAllow' ||
      ((status.currentHealthy ?? 0) >= (status.desiredHealthy ?? 0) && (status.desiredHealthy ?? 0) > 0);
    if (!isPodReady(pod) && unhealthyMayGo) guardReadiness = true;
    else checkAndDecrement(registry, pdb, name, deleteOptions.dryRun === true);
  }
  const chosen = guardReadiness ? withResourceVersion(deleteOptions, pod) : deleteOptions;
  try {
    deleteWithCondition(registry, namespace, name, chosen);
  } catch (err) {
    // The pod changed (became Ready?) since it was judged: the client should ask again.
    if (err instanceof ApiError && err.code === 409 && guardReadiness && rvUnset)
      throw stillProcessing(pdb!.metadata.name!);
    throw err;
  }
  return success();
}

function success(): Status {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
}

function isTerminal(pod: KubeObject): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

function canIgnoreBudget(pod: KubeObject): boolean {
  return (
    isTerminal(pod) || (pod.status?.phase ?? 'Pending') === 'Pending' || !!pod.metadata.deletionTimestamp
  );
}

function withResourceVersion(options: DeleteOptions, pod: KubeObject): DeleteOptions {
  return {
    ...options,
    preconditions: { ...options.preconditions, resourceVersion: pod.metadata.resourceVersion },
  };
}

/** Verifies the budget allows one more disruption and takes it (upstream's checkAndDecrement). */
function checkAndDecrement(registry: Registry, pdb: KubeObject, podName: string, dryRun: boolean): void {
  const name = pdb.metadata.name!;
  const status = pdb.status ?? {};
  if ((status.observedGeneration ?? 0) < (pdb.metadata.generation ?? 1)) throw stillProcessing(name);
  const gr = { group: 'policy', resource: 'poddisruptionbudget' };
  const allowed: number = status.disruptionsAllowed ?? 0;
  if (allowed < 0) throw forbidden(gr, name, 'pdb disruptions allowed is negative');
  if (Object.keys(status.disruptedPods ?? {}).length > maxDisruptedPods)
    throw forbidden(
      gr,
      name,
      'DisruptedPods map too big - too many evictions not confirmed by PDB controller',
    );
  if (allowed === 0) {
    const why = `The disruption budget ${name} needs ${status.desiredHealthy ?? 0} healthy pods and has ${status.currentHealthy ?? 0} currently`;
    throw tooManyRequests(why, 0);
  }
  if (dryRun) return;
  const next: Record<string, any> = { ...status, disruptionsAllowed: allowed - 1 };
  if (next.disruptionsAllowed === 0)
    next.conditions = disruptionAllowedCondition(pdb, next, registry.context.now());
  next.disruptedPods = { ...(status.disruptedPods ?? {}), [podName]: rfc3339(registry.context.now()) };
  registry.update(
    registry.byStorage('poddisruptionbudgets'),
    pdb.metadata.namespace!,
    name,
    { ...pdb, status: next },
    { subresource: 'status' },
  );
}

/** Adds the DisruptionTarget condition (unless dry run), then deletes (upstream's addConditionAndDeletePod). */
function deleteWithCondition(
  registry: Registry,
  namespace: string,
  name: string,
  options: DeleteOptions,
): void {
  let chosen = options;
  if (!options.dryRun) {
    const gr = { group: '', resource: 'Pod' };
    const { uid, resourceVersion } = options.preconditions ?? {};
    const stored = registry.store.update('pods', namespace, name, (pod) => {
      if (uid && uid !== pod.metadata.uid)
        throw conflict(
          gr,
          name,
          `the UID in the precondition (${uid}) does not match the UID in record (${pod.metadata.uid}). The object might have been deleted and then recreated`,
        );
      if (resourceVersion && resourceVersion !== pod.metadata.resourceVersion)
        throw conflict(
          gr,
          name,
          `the ResourceVersion in the precondition (${resourceVersion}) does not match the ResourceVersion in record (${pod.metadata.resourceVersion}). The object might have been modified`,
        );
      pod.status = {
        ...(pod.status ?? {}),
        conditions: withDisruptionTarget(pod.status?.conditions, registry.context.now()),
      };
      return pod;
    });
    // The condition is this eviction's own write: the precondition moves to it.
    if (resourceVersion)
      chosen = {
        ...options,
        preconditions: { ...options.preconditions, resourceVersion: stored.object.metadata.resourceVersion },
      };
  }
  registry.delete(registry.byStorage('pods'), namespace, name, chosen);
}

function withDisruptionTarget(conditions: unknown, now: number): Record<string, unknown>[] {
  const list: Record<string, any>[] = Array.isArray(conditions) ? conditions.filter(isObject) : [];
  const next = {
    type: 'DisruptionTarget',
    status: 'True',
    reason: 'EvictionByEvictionAPI',
    message: 'Eviction API: evicting',
  };
  const i = list.findIndex((c) => c.type === 'DisruptionTarget');
  const old = i >= 0 ? list[i]! : undefined;
  const lastTransitionTime = old && old.status === next.status ? old.lastTransitionTime : rfc3339(now);
  const condition = { ...next, lastProbeTime: null, lastTransitionTime };
  return i >= 0 ? list.map((c, j) => (j === i ? condition : c)) : [...list, condition];
}

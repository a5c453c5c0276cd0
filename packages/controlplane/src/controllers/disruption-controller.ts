import type { Clock, Logger } from '@nodelet/kernel';
import { rfc3339, type KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { apiVersionOf } from '../apiserver/resource-type.js';
import { budgetSelects } from '../resources/pod-disruption-budgets.js';
import type { EventRecorder } from './event-recorder.js';
import {
  countHealthy,
  disruptionAllowedCondition,
  expectedCount,
  pendingDisruptions,
} from './disruption-status.js';
import { controllerRefOf, type OwnerReference } from './pod-control.js';
import { writeStatusIfChanged } from './status-write.js';
import { KeyedController } from './keyed-controller.js';

/**
 * The disruption controller (upstream's pkg/controller/disruption): keeps each PodDisruptionBudget's
 * status from the pods it selects —
 *
 * - `expectedPods` / `desiredHealthy`: see `expectedCount` (a pod's controller scale: a Deployment for its
 *   ReplicaSet's pods, else the ReplicaSet, else any served kind with a `scale` subresource);
 * - `currentHealthy`: Ready pods not being deleted and not just evicted;
 * - `disruptionsAllowed = currentHealthy − desiredHealthy` (0 when negative or nothing expected);
 * - `disruptedPods`: evictions not yet seen as deletions, dropped after 2 minutes (re-checked then);
 * - `observedGeneration` and the `DisruptionAllowed` condition.
 *
 * When the expected count cannot be computed (a pod without a known controller, for a percentage or
 * maxUnavailable) the budget fails safe: no disruptions allowed, condition reason `SyncFailed`.
 *
 * A pod left with `DisruptionTarget=True` (not set by its kubelet) that is neither terminal nor being
 * deleted two minutes later — an eviction whose delete never happened — has the condition set to False.
 */
const stalePodDisruptionTimeoutMs = 2 * 60_000;
/** Queue keys of pods with a possibly stale DisruptionTarget (':' never appears in a namespace). */
const stalePrefix = 'stale-pod:';

export class DisruptionController extends KeyedController {
  constructor(registry: Registry, clock: Clock, logger: Logger, events?: EventRecorder) {
    super(registry, clock, logger, events, 'poddisruptionbudgets', 'disruption');
  }

  protected override watchMore(): (() => void)[] {
    return [
      this.registry.store.subscribe('pods', (e) => {
        for (const pod of e.prev ? [e.object, e.prev] : [e.object]) this.enqueueFor(pod);
        if (e.op !== 'delete') this.checkStaleDisruption(e.object);
      }),
    ];
  }

  override start(): void {
    super.start();
    for (const { object } of this.registry.store.listAll('pods')) this.checkStaleDisruption(object);
  }

  private enqueueFor(pod: KubeObject): void {
    const namespace = pod.metadata.namespace!;
    for (const { object: pdb } of this.registry.store.listAll('poddisruptionbudgets', namespace)) {
      if (budgetSelects(pdb, pod)) this.queue.add(`${namespace}/${pdb.metadata.name}`);
    }
  }

  /** One step: recomputes the status of budget `namespace/name` (or clears a pod's stale DisruptionTarget). */
  sync(key: string): void {
    if (key.startsWith(stalePrefix)) return this.clearStaleDisruption(key.slice(stalePrefix.length));
    const [namespace, name] = key.split('/') as [string, string];
    const pdb = this.registry.store.get('poddisruptionbudgets', namespace, name)?.object;
    if (!pdb) return;
    const pods = this.registry.store
      .listAll('pods', namespace)
      .map((s) => s.object)
      .filter((p) => budgetSelects(pdb, p));
    if (pods.length === 0) this.events?.record(pdb, 'Normal', 'NoPods', 'No matching pods found');
    let counts;
    try {
      counts = expectedCount(pdb, pods, () => this.expectedScale(pods));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.events?.record(
        pdb,
        'Warning',
        'CalculateExpectedPodCountFailed',
        `Failed to calculate the number of expected pods: ${message}`,
      );
      return this.failSafe(pdb, message);
    }
    const now = this.clock.now();
    const { disruptedPods, recheckAt } = pendingDisruptions(pdb, pods, now);
    const currentHealthy = countHealthy(pods, disruptedPods, now);
    const allowed = currentHealthy - counts.desiredHealthy;
    const status: Record<string, any> = {
      currentHealthy,
      desiredHealthy: counts.desiredHealthy,
      expectedPods: counts.expectedPods,
      disruptionsAllowed: counts.expectedPods <= 0 || allowed <= 0 ? 0 : allowed,
      ...(Object.keys(disruptedPods).length ? { disruptedPods } : {}),
      observedGeneration: pdb.metadata.generation ?? 1,
      conditions: pdb.status?.conditions,
    };
    status.conditions = disruptionAllowedCondition(pdb, status, now);
    this.writeStatus(pdb, status);
    if (recheckAt !== undefined) this.queue.addAfter(key, Math.max(0, recheckAt - now));
  }

  /** How long until the pod's DisruptionTarget is stale (0: now), or undefined when it is not one to clear. */
  private staleIn(pod: KubeObject): number | undefined {
    if (pod.metadata.deletionTimestamp || ['Succeeded', 'Failed'].includes(pod.status?.phase))
      return undefined;
    const c = disruptionTarget(pod);
    if (c?.status !== 'True' || c.reason === 'TerminationByKubelet') return undefined;
    const since = Date.parse(c.lastTransitionTime ?? '') || 0;
    return Math.max(0, since + stalePodDisruptionTimeoutMs - this.clock.now());
  }

  private checkStaleDisruption(pod: KubeObject): void {
    const wait = this.staleIn(pod);
    if (wait === undefined) return;
    const key = `${stalePrefix}${pod.metadata.namespace}/${pod.metadata.name}`;
    if (wait === 0) this.queue.add(key);
    else this.queue.addAfter(key, wait);
  }

  private clearStaleDisruption(podKey: string): void {
    const [namespace, name] = podKey.split('/') as [string, string];
    const pod = this.registry.store.get('pods', namespace, name)?.object;
    if (!pod) return;
    const wait = this.staleIn(pod);
    if (wait === undefined) return;
    if (wait > 0) return this.queue.addAfter(`${stalePrefix}${podKey}`, wait);
    const now = rfc3339(this.clock.now());
    this.registry.store.update('pods', namespace, name, (p) => {
      const c = disruptionTarget(p);
      if (c) Object.assign(c, { status: 'False', lastTransitionTime: now });
      return p;
    });
  }

  /** Sum of the scales of the pods' controllers (getExpectedScale). */
  private expectedScale(pods: KubeObject[]): number {
    const scales = new Map<string, number>();
    for (const pod of pods) {
      const ref = controllerRefOf(pod);
      if (!ref) continue; // unmanaged: upstream warns and leaves it out
      if (scales.has(ref.uid)) continue;
      const found = this.controllerScale(pod.metadata.namespace!, ref);
      if (!found) throw new Error(`found no controllers for pod "${pod.metadata.name}"`);
      scales.set(found.uid, found.replicas);
    }
    let sum = 0;
    for (const n of scales.values()) sum += n;
    return sum;
  }

  /** The Deployment over a ReplicaSet, the ReplicaSet, or any served kind with a `scale` subresource. */
  private controllerScale(
    namespace: string,
    ref: OwnerReference,
  ): { uid: string; replicas: number } | undefined {
    const owner = this.lookup(namespace, ref);
    if (!owner) return undefined;
    if (ref.kind === 'ReplicaSet' && ref.apiVersion.startsWith('apps/')) {
      const parent = controllerRefOf(owner);
      if (parent?.kind === 'Deployment') {
        const d = this.lookup(namespace, parent);
        return d ? { uid: d.metadata.uid!, replicas: d.spec?.replicas ?? 1 } : undefined;
      }
    }
    return { uid: owner.metadata.uid!, replicas: owner.spec?.replicas ?? 1 };
  }

  private lookup(namespace: string, ref: OwnerReference): KubeObject | undefined {
    const t = this.registry.types.find(
      (x) =>
        x.kind === ref.kind &&
        apiVersionOf(x) === ref.apiVersion &&
        x.subresources.some((s) => s.name === 'scale'),
    );
    if (!t) return undefined;
    const owner = this.registry.store.get(t.storage, namespace, ref.name)?.object;
    return owner?.metadata.uid === ref.uid ? owner : undefined;
  }

  /** No disruptions while the status cannot be computed (upstream's failSafe). */
  private failSafe(pdb: KubeObject, message: string): void {
    const status: Record<string, any> = { ...(pdb.status ?? {}), disruptionsAllowed: 0 };
    status.conditions = disruptionAllowedCondition(pdb, status, this.clock.now(), message);
    this.writeStatus(pdb, status);
  }

  private writeStatus(pdb: KubeObject, status: Record<string, any>): void {
    if (status.conditions === undefined) delete status.conditions;
    writeStatusIfChanged(this.registry, 'poddisruptionbudgets', pdb, status);
  }
}

function disruptionTarget(pod: KubeObject): Record<string, any> | undefined {
  const conditions: Record<string, any>[] = pod.status?.conditions ?? [];
  return conditions.find((c) => c.type === 'DisruptionTarget');
}

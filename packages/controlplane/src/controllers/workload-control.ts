import type { Clock, Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import type { EventRecorder } from './event-recorder.js';
import { KeyedController } from './keyed-controller.js';
import { controllerRef, controllerRefOf, isPodActive, selectorMatches } from './pod-control.js';

/**
 * What the controllers that own pods directly (ReplicaSet, DaemonSet, StatefulSet) share: claiming pods,
 * the owners a pod event concerns, creating and deleting pods with their events, writing status.
 */

/**
 * ClaimPods (upstream's PodControllerRefManager): an orphan
 * whose labels match the owner's selector is adopted (a controller ownerReference added), a pod the owner
 * controls whose labels no longer match is released; pods controlled by something else are left alone.
 * Nothing is adopted by an owner being deleted. Returns every pod the owner then controls, terminating
 * and finished ones included: each controller decides which of those count.
 */
export function claimPods(
  registry: Registry,
  owner: KubeObject,
  apiVersion: string,
  kind: string,
  logger: Logger,
): KubeObject[] {
  const uid = owner.metadata.uid;
  const deleting = !!owner.metadata.deletionTimestamp;
  const out: KubeObject[] = [];
  for (const { object: pod } of registry.store.listAll('pods', owner.metadata.namespace)) {
    const ref = controllerRefOf(pod);
    const matches = selectorMatches(owner.spec?.selector, pod.metadata.labels);
    if (ref && ref.uid !== uid) continue;
    if (ref) {
      if (matches || deleting) out.push(pod);
      else setPodOwner(registry, pod, undefined, logger);
      continue;
    }
    if (!matches || deleting || pod.metadata.deletionTimestamp || !isPodActive(pod)) continue;
    const adopted = setPodOwner(registry, pod, controllerRef(owner, apiVersion, kind), logger);
    if (adopted) out.push(adopted);
  }
  return out;
}

/** Sets (or, with no `ref`, removes) a pod's controller reference; the updated pod, or undefined if gone. */
function setPodOwner(
  registry: Registry,
  pod: KubeObject,
  ref: ReturnType<typeof controllerRef> | undefined,
  logger: Logger,
): KubeObject | undefined {
  try {
    const stored = registry.store.update('pods', pod.metadata.namespace!, pod.metadata.name!, (p) => {
      const refs = (p.metadata.ownerReferences ?? []).filter((r: { controller?: boolean }) => !r.controller);
      if (ref) refs.push(ref);
      if (refs.length) p.metadata.ownerReferences = refs;
      else delete p.metadata.ownerReferences;
      return p;
    });
    return stored.object;
  } catch (err) {
    logger.debug('pod claim failed', { pod: pod.metadata.name, err: String(err) });
    return undefined;
  }
}

/** The keys (`namespace/name`) of the owners of `storage` a pod event concerns: its controller, or every one selecting an orphan. */
export function ownerKeysOfPod(registry: Registry, pod: KubeObject, storage: string, kind: string): string[] {
  const namespace = pod.metadata.namespace!;
  const ref = controllerRefOf(pod);
  if (ref) return ref.kind === kind && ref.apiVersion.startsWith('apps/') ? [`${namespace}/${ref.name}`] : [];
  return registry.store
    .listAll(storage, namespace)
    .filter(({ object }) => selectorMatches(object.spec?.selector, pod.metadata.labels))
    .map(({ object }) => `${namespace}/${object.metadata.name}`);
}

/**
 * Creates a pod for `owner`, recording SuccessfulCreate or FailedCreate; false when the namespace is
 * being deleted (it refuses new pods for good: nothing to retry). Other errors are thrown for a retry.
 */
export function createPod(
  registry: Registry,
  owner: KubeObject,
  body: object,
  events?: EventRecorder,
  message = (pod: string) => `Created pod: ${pod}`,
): boolean {
  try {
    const { object } = registry.create(registry.byStorage('pods'), owner.metadata.namespace!, body);
    events?.record(owner, 'Normal', 'SuccessfulCreate', message(object.metadata.name!));
    return true;
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    events?.record(owner, 'Warning', 'FailedCreate', `Error creating: ${reason}`);
    if (err instanceof ApiError && err.code === 403) return false;
    throw err;
  }
}

/** Deletes `owner`'s pod `name` (gracefully), recording SuccessfulDelete; one already gone is fine. */
export function deletePod(
  registry: Registry,
  owner: KubeObject,
  name: string,
  events?: EventRecorder,
  message = (pod: string) => `Deleted pod: ${pod}`,
): void {
  try {
    registry.delete(registry.byStorage('pods'), owner.metadata.namespace!, name);
    events?.record(owner, 'Normal', 'SuccessfulDelete', message(name));
  } catch (err) {
    if (!(err instanceof ApiError && err.code === 404)) throw err;
  }
}

/**
 * The frame of a controller that owns pods: a keyed controller of its kind also fed by the events of the
 * pods it (or, for an orphan, its selector) concerns. A subclass adds to `super.watchMore()`.
 */
export abstract class PodOwnerController extends KeyedController {
  constructor(
    registry: Registry,
    clock: Clock,
    logger: Logger,
    events: EventRecorder | undefined,
    storage: string,
    protected readonly kind: string,
  ) {
    super(registry, clock, logger, events, storage, kind.toLowerCase());
  }

  protected override watchMore(): (() => void)[] {
    return [
      this.registry.store.subscribe('pods', (e) => {
        for (const pod of e.prev ? [e.object, e.prev] : [e.object]) {
          for (const k of ownerKeysOfPod(this.registry, pod, this.storage, this.kind)) this.queue.add(k);
        }
      }),
    ];
  }
}

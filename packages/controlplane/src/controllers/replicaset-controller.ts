import { canonicalJson } from '@nodelet/api';
import type { Clock, Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import type { EventRecorder } from './event-recorder.js';
import {
  controllerRef,
  controllerRefOf,
  deletionOrder,
  isPodActive,
  isPodAvailable,
  isPodReady,
  podFromTemplate,
  selectorMatches,
} from './pod-control.js';
import { WorkQueue } from './work-queue.js';

/**
 * The ReplicaSet controller (upstream's pkg/controller/replicaset): keeps `spec.replicas` active pods of
 * each ReplicaSet.
 *
 * - Claims pods as ClaimPods does: an orphan whose labels match the selector is adopted (a controller
 *   ownerReference added), a pod it controls whose labels no longer match is released; pods controlled by
 *   something else are left alone. Nothing is adopted by, or created for, a ReplicaSet being deleted.
 * - Too few pods: creates them from the template (`<rs>-<5 random chars>`, the template's labels, a
 *   controller ownerReference with blockOwnerDeletion). Too many: deletes the surplus in `deletionOrder`.
 * - Status: replicas, fullyLabeledReplicas, readyReplicas, availableReplicas (ready for
 *   minReadySeconds; re-checked after minReadySeconds on the clock), observedGeneration.
 *
 * It reads the shared store and writes through the registry; the store is updated synchronously, so no
 * creation/deletion expectations are needed between one sync and the next.
 */
const apiVersion = 'apps/v1';
const kind = 'ReplicaSet';

export class ReplicaSetController {
  private readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly events?: EventRecorder,
  ) {
    this.queue = new WorkQueue('replicaset', (k) => this.sync(k), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    this.unsubscribe.push(
      store.subscribe('replicasets', (e) => this.queue.add(`${e.namespace}/${e.name}`)),
      store.subscribe('pods', (e) => {
        for (const pod of e.prev ? [e.object, e.prev] : [e.object]) this.enqueueFor(pod);
      }),
    );
    for (const { object } of store.listAll('replicasets'))
      this.queue.add(`${object.metadata.namespace}/${object.metadata.name}`);
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
    this.queue.stop();
  }

  /** The ReplicaSets a pod event concerns: its controller, or for an orphan every one that selects it. */
  private enqueueFor(pod: KubeObject): void {
    const namespace = pod.metadata.namespace!;
    const ref = controllerRefOf(pod);
    if (ref) {
      if (ref.kind === kind && ref.apiVersion.startsWith('apps/')) this.queue.add(`${namespace}/${ref.name}`);
      return;
    }
    for (const { object: rs } of this.registry.store.listAll('replicasets', namespace)) {
      if (selectorMatches(rs.spec?.selector, pod.metadata.labels))
        this.queue.add(`${namespace}/${rs.metadata.name}`);
    }
  }

  /** One step: makes the ReplicaSet `namespace/name` match its spec, then writes its status. */
  sync(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    const rs = this.registry.store.get('replicasets', namespace, name)?.object;
    if (!rs) return;
    const pods = this.claimPods(rs);
    if (!rs.metadata.deletionTimestamp) this.manageReplicas(rs, pods);
    const active = this.claimPods(rs);
    this.updateStatus(rs, active);
  }

  /** The active pods this ReplicaSet controls, after adopting and releasing as ClaimPods does. */
  private claimPods(rs: KubeObject): KubeObject[] {
    const namespace = rs.metadata.namespace!;
    const uid = rs.metadata.uid;
    const deleting = !!rs.metadata.deletionTimestamp;
    const out: KubeObject[] = [];
    for (const { object: pod } of this.registry.store.listAll('pods', namespace)) {
      const ref = controllerRefOf(pod);
      const matches = selectorMatches(rs.spec?.selector, pod.metadata.labels);
      if (ref && ref.uid !== uid) continue;
      if (ref) {
        if (matches || deleting) {
          if (isPodActive(pod)) out.push(pod);
        } else this.setOwner(pod, undefined);
        continue;
      }
      if (!matches || deleting || pod.metadata.deletionTimestamp || !isPodActive(pod)) continue;
      const adopted = this.setOwner(pod, rs);
      if (adopted) out.push(adopted);
    }
    return out;
  }

  /** Adds (owner given) or removes this controller's ownerReference; the updated pod, or undefined if gone. */
  private setOwner(pod: KubeObject, owner: KubeObject | undefined): KubeObject | undefined {
    try {
      const stored = this.registry.store.update('pods', pod.metadata.namespace!, pod.metadata.name!, (p) => {
        const refs = (p.metadata.ownerReferences ?? []).filter(
          (r: { controller?: boolean }) => !r.controller,
        );
        if (owner) refs.push(controllerRef(owner, apiVersion, kind));
        if (refs.length) p.metadata.ownerReferences = refs;
        else delete p.metadata.ownerReferences;
        return p;
      });
      return stored.object;
    } catch (err) {
      this.logger.debug('pod claim failed', { pod: pod.metadata.name, err: String(err) });
      return undefined;
    }
  }

  private manageReplicas(rs: KubeObject, pods: KubeObject[]): void {
    const namespace = rs.metadata.namespace!;
    const want = rs.spec?.replicas ?? 1;
    const diff = pods.length - want;
    if (diff < 0) {
      const podType = this.registry.byStorage('pods');
      const ref = controllerRef(rs, apiVersion, kind);
      for (let i = 0; i < -diff; i++) {
        try {
          const body = podFromTemplate(rs.spec?.template ?? {}, rs.metadata.name!, ref);
          const { object } = this.registry.create(podType, namespace, body);
          this.events?.record(rs, 'Normal', 'SuccessfulCreate', `Created pod: ${object.metadata.name}`);
        } catch (err) {
          const message = err instanceof Error ? err.message : String(err);
          this.events?.record(rs, 'Warning', 'FailedCreate', `Error creating: ${message}`);
          // A namespace being deleted refuses new pods for good: nothing to retry.
          if (err instanceof ApiError && err.code === 403) return;
          throw err;
        }
      }
    } else if (diff > 0) {
      const podType = this.registry.byStorage('pods');
      for (const pod of deletionOrder(pods).slice(0, diff)) {
        try {
          this.registry.delete(podType, namespace, pod.metadata.name!);
          this.events?.record(rs, 'Normal', 'SuccessfulDelete', `Deleted pod: ${pod.metadata.name}`);
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 404)) throw err;
        }
      }
    }
  }

  private updateStatus(rs: KubeObject, pods: KubeObject[]): void {
    const now = this.clock.now();
    const minReady = rs.spec?.minReadySeconds ?? 0;
    const templateLabels: Record<string, string> = rs.spec?.template?.metadata?.labels ?? {};
    const fullyLabeled = pods.filter((p) =>
      Object.entries(templateLabels).every(([k, v]) => p.metadata.labels?.[k] === v),
    );
    const ready = pods.filter(isPodReady);
    const available = pods.filter((p) => isPodAvailable(p, minReady, now));
    const status: Record<string, unknown> = {
      ...(rs.status ?? {}),
      replicas: pods.length,
      fullyLabeledReplicas: fullyLabeled.length,
      readyReplicas: ready.length,
      availableReplicas: available.length,
      observedGeneration: rs.metadata.generation ?? 1,
    };
    for (const f of ['fullyLabeledReplicas', 'readyReplicas', 'availableReplicas']) {
      if (status[f] === 0) delete status[f];
    }
    if (minReady > 0 && ready.length > available.length) {
      this.queue.addAfter(`${rs.metadata.namespace}/${rs.metadata.name}`, minReady * 1000);
    }
    if (canonicalJson(status) === canonicalJson(rs.status ?? {})) return;
    try {
      this.registry.update(
        this.registry.byStorage('replicasets'),
        rs.metadata.namespace!,
        rs.metadata.name!,
        { ...rs, status },
        { subresource: 'status' },
      );
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
}

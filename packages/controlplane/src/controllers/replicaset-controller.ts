import type { Clock, Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import type { EventRecorder } from './event-recorder.js';
import { claimPods, createPod, deletePod, PodOwnerController } from './workload-control.js';
import { writeStatusIfChanged } from './status-write.js';
import {
  controllerRef,
  deletionOrder,
  isPodActive,
  isPodAvailable,
  isPodReady,
  podFromTemplate,
} from './pod-control.js';

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

export class ReplicaSetController extends PodOwnerController {
  constructor(registry: Registry, clock: Clock, logger: Logger, events?: EventRecorder) {
    super(registry, clock, logger, events, 'replicasets', kind);
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
    return claimPods(this.registry, rs, apiVersion, kind, this.logger).filter(isPodActive);
  }

  private manageReplicas(rs: KubeObject, pods: KubeObject[]): void {
    const want = rs.spec?.replicas ?? 1;
    const diff = pods.length - want;
    if (diff < 0) {
      const ref = controllerRef(rs, apiVersion, kind);
      for (let i = 0; i < -diff; i++) {
        const body = podFromTemplate(rs.spec?.template ?? {}, rs.metadata.name!, ref);
        if (!createPod(this.registry, rs, body, this.events)) return;
      }
    } else if (diff > 0) {
      for (const pod of deletionOrder(pods).slice(0, diff))
        deletePod(this.registry, rs, pod.metadata.name!, this.events);
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
    writeStatusIfChanged(this.registry, 'replicasets', rs, status);
  }
}

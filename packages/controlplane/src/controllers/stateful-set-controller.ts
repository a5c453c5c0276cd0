import type { Clock, Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import type { EventRecorder } from './event-recorder.js';
import { ensureHistory, templateOf, truncateHistory, type History } from './controller-history.js';
import { controllerRef } from './pod-control.js';
import {
  identityLabels,
  identityMatches,
  isCreated,
  isFinished,
  isHealthy,
  isRunningAndAvailable,
  isRunningAndReady,
  isTerminating,
  newStatefulSetPod,
  ordinalOf,
  revisionOfPod,
} from './stateful-set-pods.js';
import { claimPods, createPod, deletePod, PodOwnerController } from './workload-control.js';
import { writeStatusIfChanged } from './status-write.js';

/**
 * The StatefulSet controller (upstream's pkg/controller/statefulset, stateful_set_control.go): pods
 * `<set>-<ordinal>` for ordinals start … start+replicas-1, each with its identity (`stateful-set-pods.ts`).
 *
 * - OrderedReady: one pod at a time in ordinal order, each made only once the ones before it are Running
 *   and Ready (for minReadySeconds); surplus ordinals are deleted from the highest, one at a time, once
 *   every wanted pod is healthy. Parallel: all made and deleted at once.
 * - A missing pod (deleted, or finished and so deleted) is made again with the same name; a pod whose
 *   identity labels were changed gets them back.
 * - Revisions: ControllerRevisions of the template; `currentRevision` is what the pods ran before the
 *   latest template, `updateRevision` the latest. Pods below the RollingUpdate partition are (re)made at
 *   the current revision. RollingUpdate deletes the highest-ordinal pod not at the update revision, one
 *   at a time, waiting for each replacement to be healthy, down to the partition; OnDelete waits for the
 *   user to delete pods.
 */
const apiVersion = 'apps/v1';
const kind = 'StatefulSet';

interface Plan {
  set: KubeObject;
  /** The set with the current revision's template, for ordinals below the partition. */
  currentSet: KubeObject;
  currentRevision: string;
  updateRevision: string;
  /** Pods by ordinal index (ordinal - start); undefined where none exists. */
  replicas: (KubeObject | undefined)[];
  /** Pods whose ordinal is out of range, highest ordinal first. */
  condemned: KubeObject[];
}

export class StatefulSetController extends PodOwnerController {
  constructor(registry: Registry, clock: Clock, logger: Logger, events?: EventRecorder) {
    super(registry, clock, logger, events, 'statefulsets', kind);
  }

  sync(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    const set = this.registry.store.get('statefulsets', namespace, name)?.object;
    if (!set || set.metadata.deletionTimestamp) return;
    const history = ensureHistory(this.registry, set, apiVersion, kind);
    const plan = this.plan(set, history);
    if (this.scale(plan)) this.rollingUpdate(plan);
    const pods = claimPods(this.registry, set, apiVersion, kind, this.logger);
    const inUse = new Set([
      plan.currentRevision,
      plan.updateRevision,
      ...pods.map((p) => revisionOfPod(p) ?? ''),
    ]);
    truncateHistory(this.registry, set, history, inUse);
    this.updateStatus(plan, pods, history.collisionCount);
  }

  private plan(set: KubeObject, history: History): Plan {
    const updateRevision = history.current.metadata.name!;
    const current =
      history.all.find((r) => r.metadata.name === set.status?.currentRevision) ?? history.current;
    const currentSet = { ...set, spec: { ...set.spec, template: templateOf(current) } };
    const start = set.spec?.ordinals?.start ?? 0;
    const replicas: (KubeObject | undefined)[] = Array.from({ length: set.spec?.replicas ?? 1 });
    const condemned: KubeObject[] = [];
    for (const pod of claimPods(this.registry, set, apiVersion, kind, this.logger)) {
      const ordinal = ordinalOf(set, pod);
      if (ordinal === undefined) continue;
      if (ordinal >= start && ordinal < start + replicas.length) replicas[ordinal - start] = pod;
      else condemned.push(pod);
    }
    condemned.sort((a, b) => ordinalOf(set, b)! - ordinalOf(set, a)!);
    return { set, currentSet, currentRevision: current.metadata.name!, updateRevision, replicas, condemned };
  }

  /** The pod to make at `index`: the current revision below the partition, else the update revision. */
  private newPod(plan: Plan, index: number): KubeObject {
    const { set, currentSet } = plan;
    const start = set.spec?.ordinals?.start ?? 0;
    const ru = currentSet.spec?.updateStrategy;
    const partition = ru?.type === 'RollingUpdate' ? (ru.rollingUpdate?.partition ?? 0) : 0;
    const ref = controllerRef(set, apiVersion, kind);
    const ordinal = start + index;
    if (ru?.type === 'RollingUpdate' && index < partition)
      return newStatefulSetPod(set, currentSet.spec.template, ordinal, plan.currentRevision, ref);
    return newStatefulSetPod(set, set.spec?.template ?? {}, ordinal, plan.updateRevision, ref);
  }

  /**
   * Makes and removes pods toward spec.replicas; false when, in order, it has to wait (a pod made,
   * deleted, terminating or not yet healthy), so the rolling update waits too.
   */
  private scale(plan: Plan): boolean {
    const { set, replicas } = plan;
    const monotonic = set.spec?.podManagementPolicy !== 'Parallel';
    const minReady = set.spec?.minReadySeconds ?? 0;
    const now = this.clock.now();
    const start = set.spec?.ordinals?.start ?? 0;
    for (let i = 0; i < replicas.length; i++) {
      let pod = replicas[i];
      if (pod && isFinished(pod) && !isTerminating(pod)) {
        // A finished pod is deleted and made again.
        this.delete(set, pod.metadata.name!);
        pod = replicas[i] = this.registry.store.get(
          'pods',
          set.metadata.namespace!,
          pod.metadata.name!,
        )?.object;
      }
      if (!pod) {
        const made = this.create(set, this.newPod(plan, i));
        replicas[i] = made;
        if (monotonic || !made) return false;
        continue;
      }
      if (isTerminating(pod)) {
        if (monotonic) return false;
        continue;
      }
      if (!identityMatches(set, pod, start + i)) pod = replicas[i] = this.fixIdentity(set, pod, start + i);
      if (monotonic && !isHealthy(pod, minReady, now)) {
        if (minReady > 0 && isRunningAndReady(pod)) this.queue.addAfter(keyOf(set), minReady * 1000);
        return false;
      }
    }
    // In order, every wanted pod is healthy by now; the lowest unhealthy surplus pod may go first.
    const firstUnhealthy = plan.condemned.findLast((p) => !isRunningAndReady(p));
    for (const pod of plan.condemned) {
      if (isTerminating(pod)) {
        if (monotonic) return false;
        continue;
      }
      if (monotonic && !isRunningAndReady(pod) && pod !== firstUnhealthy) return false;
      this.delete(set, pod.metadata.name!);
      if (monotonic) return false;
    }
    return true;
  }

  /** RollingUpdate: the highest ordinal not at the update revision is deleted, down to the partition. */
  private rollingUpdate(plan: Plan): void {
    const { set, replicas } = plan;
    if (set.spec?.updateStrategy?.type !== 'RollingUpdate') return;
    const partition = set.spec.updateStrategy.rollingUpdate?.partition ?? 0;
    const minReady = set.spec?.minReadySeconds ?? 0;
    const now = this.clock.now();
    for (let i = replicas.length - 1; i >= partition; i--) {
      const pod = replicas[i];
      if (!pod) return;
      if (revisionOfPod(pod) !== plan.updateRevision && !isTerminating(pod)) {
        this.delete(set, pod.metadata.name!);
        return;
      }
      if (!isHealthy(pod, minReady, now)) return;
    }
  }

  private create(set: KubeObject, pod: KubeObject): KubeObject | undefined {
    const message = (name: string) => `create Pod ${name} in StatefulSet ${set.metadata.name} successful`;
    try {
      if (!createPod(this.registry, set, pod, this.events, message)) return undefined;
    } catch (err) {
      // The old pod of this name is still in the store (being removed): wait for its deletion event.
      if (err instanceof ApiError && err.code === 409) return undefined;
      throw err;
    }
    return this.registry.store.get('pods', set.metadata.namespace!, pod.metadata.name!)?.object;
  }

  private delete(set: KubeObject, name: string): void {
    const message = (pod: string) => `delete Pod ${pod} in StatefulSet ${set.metadata.name} successful`;
    deletePod(this.registry, set, name, this.events, message);
  }

  /** Puts the identity labels back on a pod (the rest of its identity is immutable). */
  private fixIdentity(set: KubeObject, pod: KubeObject, ordinal: number): KubeObject {
    return this.registry.store.update('pods', pod.metadata.namespace!, pod.metadata.name!, (p) => {
      p.metadata.labels = { ...(p.metadata.labels ?? {}), ...identityLabels(set, ordinal) };
      return p;
    }).object;
  }

  private updateStatus(plan: Plan, pods: KubeObject[], collisionCount: number | undefined): void {
    const { set } = plan;
    const minReady = set.spec?.minReadySeconds ?? 0;
    const now = this.clock.now();
    const members = pods.filter((p) => ordinalOf(set, p) !== undefined && isCreated(p));
    const live = members.filter((p) => !isTerminating(p));
    const at = (revision: string) => live.filter((p) => revisionOfPod(p) === revision).length;
    const status: Record<string, unknown> = {
      observedGeneration: set.metadata.generation ?? 1,
      replicas: members.length,
      readyReplicas: members.filter(isRunningAndReady).length,
      currentReplicas: at(plan.currentRevision),
      updatedReplicas: at(plan.updateRevision),
      currentRevision: plan.currentRevision,
      updateRevision: plan.updateRevision,
      collisionCount: collisionCount ?? 0,
      availableReplicas: members.filter((p) => isRunningAndAvailable(p, minReady, now)).length,
    };
    // completeRollingUpdate: once every pod is updated and ready, the update revision is current.
    const replicas = status.replicas as number;
    if (
      set.spec?.updateStrategy?.type === 'RollingUpdate' &&
      status.updatedReplicas === replicas &&
      status.readyReplicas === replicas
    ) {
      status.currentRevision = plan.updateRevision;
      status.currentReplicas = status.updatedReplicas;
    }
    for (const f of ['readyReplicas', 'currentReplicas', 'updatedReplicas'])
      if (status[f] === 0) delete status[f];
    writeStatusIfChanged(this.registry, 'statefulsets', set, status);
  }
}

const keyOf = (o: KubeObject) => `${o.metadata.namespace}/${o.metadata.name}`;

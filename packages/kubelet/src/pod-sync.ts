import type { Pod } from '@nodelet/api';
import type { RuntimeService } from '@nodelet/cri';
import { type Clock, errorMessage, type EventBus, type Logger } from '@nodelet/kernel';
import { podRef } from './image-puller.js';
import type { KubeRuntime } from './kuberuntime/index.js';
import type { PlegChange } from './pleg.js';
import type { ProbeVerdicts } from './pod-actions.js';
import type { PodManager } from './pod-manager.js';
import {
  activeDeadlineLeftMs,
  deadlineExceeded,
  generatePodStatus,
  type WaitingReason,
} from './pod-status.js';
import type { PodSyncer, SyncOutcome } from './pod-workers.js';
import type { ProberManager } from './prober/index.js';
import type { RuntimeCache } from './runtime-cache.js';
import { emptyRuntimePodStatus, type RuntimePodStatus } from './runtime-pod.js';
import type { StatusManager } from './status-manager.js';

export interface PodSyncDeps {
  runtime: RuntimeService;
  kubeRuntime: KubeRuntime;
  runtimeCache: RuntimeCache;
  prober: ProberManager;
  statusManager: StatusManager;
  podManager: PodManager;
  bus: EventBus;
  clock: Clock;
  logger: Logger;
  hostIP: string;
  /** Overrides the prober manager's verdicts in syncPod (tests). */
  probes?: ProbeVerdicts;
  /** The pods' cgroups (cgroupsPerQOS): made before a pod's sandbox, removed after it. */
  podCgroups?: { ensure(pod: Pod): Promise<void>; remove(pod: Pod): Promise<void> };
}

/**
 * What a pod worker runs for each phase of a pod (upstream kubelet.go SyncPod, SyncTerminatingPod,
 * SyncTerminatedPod): read the runtime, carry out the sync's actions, and turn what the runtime holds
 * into the pod's status.
 */
export class PodSync implements PodSyncer {
  private readonly waiting = new Map<string, Map<string, WaitingReason>>();
  /** Sandbox and container states each pod's last sync saw, by id. */
  private readonly lastSeen = new Map<string, Map<string, string>>();
  /** What PLEG reported for each pod since its last sync started. */
  private readonly plegNews = new Map<string, PlegChange[]>();
  /** Pods failed for their active deadline (the event is recorded once). */
  private readonly pastDeadline = new Set<string>();
  /** Pods the eviction manager stopped: the message of their status and the grace period of the kill. */
  private readonly evicted = new Map<
    string,
    { message: string; gracePeriodSeconds: number; volumesTornDown?: boolean }
  >();
  /**
   * The runtime's name from CRI Version, for container IDs (`<name>://<id>`). A runtime that does not
   * answer now is asked again by the next status update; until then IDs say `containerd`.
   */
  private runtimeName: string | undefined;
  private askingRuntimeName = false;

  constructor(private readonly deps: PodSyncDeps) {}

  async learnRuntimeName(): Promise<void> {
    if (this.runtimeName !== undefined || this.askingRuntimeName) return;
    this.askingRuntimeName = true;
    try {
      this.runtimeName = (await this.deps.runtime.version({ version: 'v1' })).runtimeName || 'containerd';
    } catch {
      // asked again later
    } finally {
      this.askingRuntimeName = false;
    }
  }

  /** PLEG saw these changes of the pod's sandboxes and containers (kept for `syncNeeded`). */
  notePlegChanges(uid: string, changes: PlegChange[]): void {
    const news = this.plegNews.get(uid);
    if (news) news.push(...changes);
    else this.plegNews.set(uid, changes);
  }

  /**
   * Whether a sync PLEG asked for has anything to learn: not when every change PLEG reported since the
   * last sync started is a state that sync already saw, or one it saw the object move past (PLEG's
   * relist raced the sync: the container it saw created, the sync saw running). Then the sync would
   * read the runtime only to find nothing to do.
   */
  syncNeeded(pod: Pod): boolean {
    const uid = pod.metadata!.uid!;
    const news = this.plegNews.get(uid);
    const seen = this.lastSeen.get(uid);
    if (!news || !seen) return true;
    const confirmed = news.every((c) => {
      const state = seen.get(c.id);
      if (state === undefined || c.state === 'removed') return false;
      return state === c.state || (stateOrder[state] ?? 0) >= (stateOrder[c.state] ?? Infinity);
    });
    if (confirmed) this.plegNews.delete(uid);
    return !confirmed;
  }

  async syncPod(pod: Pod): Promise<SyncOutcome> {
    const { uid, name, namespace } = identity(pod);
    const { kubeRuntime } = this.deps;
    this.plegNews.delete(uid); // this sync reads the runtime afresh
    const eviction = this.evicted.get(uid);
    if (eviction) return this.failEvicted(pod, eviction);
    // A pod that finished (Succeeded, or Failed for another reason) keeps its phase: phases never go back.
    const previous = this.deps.statusManager.get(uid);
    const finished =
      previous?.phase === 'Succeeded' || (previous?.phase === 'Failed' && !this.pastDeadline.has(uid));
    const deadlineLeftMs = finished
      ? undefined
      : activeDeadlineLeftMs(pod, previous?.startTime, this.deps.clock.now());
    if (deadlineLeftMs !== undefined && deadlineLeftMs <= 0) return this.failPastDeadline(pod);
    // Its cgroup first: the sandbox is created inside it (upstream SyncPod's pcm.EnsureExists).
    if (!finished) await this.deps.podCgroups?.ensure(pod);
    // A pod the runtime is known to hold nothing for (a new pod) needs no listing.
    const before = this.deps.runtimeCache.knownEmpty(uid)
      ? emptyRuntimePodStatus(uid, name, namespace)
      : await kubeRuntime.getPodStatus(uid, name, namespace);
    const result = await kubeRuntime.syncPod(
      pod,
      before,
      this.deps.hostIP,
      this.deps.probes ?? this.deps.prober,
      this.waiting.get(uid),
    );
    this.deps.prober.recordKills(pod, result.actions.containersToKill);
    // Only pods with a waiting reason keep a map: an empty one per running pod cost ~0.3 KiB of heap.
    if (result.waiting.size > 0) this.waiting.set(uid, result.waiting);
    else this.waiting.delete(uid);
    const after = await kubeRuntime.statusAfterSync(before, result);
    this.lastSeen.set(uid, statesOf(after));
    this.updateStatus(pod, after);
    // Synced again when the deadline passes (upstream's activeDeadlineHandler), if nothing comes first;
    // counted from the startTime this sync may just have set.
    const leftMs = finished
      ? undefined
      : activeDeadlineLeftMs(pod, this.deps.statusManager.get(uid)?.startTime, this.deps.clock.now());
    const requeues = [result.requeueAfterMs, leftMs].filter((ms): ms is number => ms !== undefined);
    return requeues.length > 0 ? { requeueAfterMs: Math.min(...requeues) } : {};
  }

  /**
   * A pod past its `activeDeadlineSeconds` (upstream's pastActiveDeadline in SyncPod): its containers are
   * stopped and never started again, its phase is Failed with reason DeadlineExceeded, and one Normal
   * event says so.
   */
  private async failPastDeadline(pod: Pod): Promise<SyncOutcome> {
    const { uid, name, namespace } = identity(pod);
    const { kubeRuntime } = this.deps;
    if (!this.pastDeadline.has(uid)) {
      this.pastDeadline.add(uid);
      this.deps.bus.emit('[Kubelet] Pod Event', {
        podUid: uid,
        podName: name,
        namespace,
        eventType: 'Normal',
        ...deadlineExceeded,
      });
    }
    const status = await kubeRuntime.getPodStatus(uid, name, namespace);
    if (await kubeRuntime.killPodWithStatus(pod, status, undefined, 'the pod is past its active deadline')) {
      this.updateStatus(pod, await kubeRuntime.getPodStatus(uid, name, namespace), false, true);
    } else {
      this.updateStatus(pod, status, false, true);
    }
    this.lastSeen.delete(uid);
    return {};
  }

  /**
   * The eviction manager chose this pod (upstream killPodNow from evictPod): its next sync stops it with
   * `gracePeriodSeconds` and marks it Failed with reason Evicted and `message`, and a Warning `Evicted`
   * event says so. The pod stays known until its source deletes it, as upstream.
   */
  evict(pod: Pod, gracePeriodSeconds: number, message: string): void {
    const { uid, name, namespace } = identity(pod);
    if (this.evicted.has(uid)) return;
    this.evicted.set(uid, { message, gracePeriodSeconds });
    this.deps.bus.emit('[Kubelet] Pod Event', {
      podUid: uid,
      podName: name,
      namespace,
      eventType: 'Warning',
      reason: 'Evicted',
      message,
    });
  }

  /** Whether the eviction manager chose this pod (it is being stopped, or was). */
  isEvicted(uid: string): boolean {
    return this.evicted.has(uid);
  }

  private async failEvicted(
    pod: Pod,
    eviction: { message: string; gracePeriodSeconds: number; volumesTornDown?: boolean },
  ): Promise<SyncOutcome> {
    const { uid, name, namespace } = identity(pod);
    const { kubeRuntime } = this.deps;
    const status = await kubeRuntime.getPodStatus(uid, name, namespace);
    const killed = await kubeRuntime.killPodWithStatus(
      pod,
      status,
      eviction.gracePeriodSeconds,
      'the pod was evicted',
    );
    const after = killed ? await kubeRuntime.getPodStatus(uid, name, namespace) : status;
    // Stopped for good: its emptyDirs go now, not when the pod is deleted, or evicting it would relieve
    // no disk pressure (upstream unmounts a terminated pod's volumes). Before the Failed status: the
    // eviction manager takes that status as the pod cleaned up, and measures the pressure again.
    if (!eviction.volumesTornDown && !after.containers.some((c) => c.state === 'running')) {
      try {
        await kubeRuntime.tearDownVolumes(pod);
        eviction.volumesTornDown = true;
        this.deps.logger.info('Volumes of the evicted pod removed', { pod: podRef(pod), podUID: uid });
      } catch (err) {
        this.deps.logger.warn('Could not remove the volumes of the evicted pod; trying again', {
          pod: podRef(pod),
          podUID: uid,
          err: errorMessage(err),
        });
      }
    }
    this.updateStatus(pod, after, true, false, { message: eviction.message });
    this.lastSeen.delete(uid);
    return {};
  }

  async terminatePod(pod: Pod, gracePeriodSeconds: number | undefined): Promise<void> {
    const { uid, name, namespace } = identity(pod);
    const { kubeRuntime } = this.deps;
    const status = await kubeRuntime.getPodStatus(uid, name, namespace);
    this.deps.logger.info('Terminating pod', { pod: podRef(pod), podUID: uid });
    await kubeRuntime.killPodWithStatus(pod, status, gracePeriodSeconds);
    // An evicted pod deleted afterwards stays Failed/Evicted until it is gone.
    const evicted = this.evicted.get(uid);
    this.updateStatus(pod, await kubeRuntime.getPodStatus(uid, name, namespace), true, false, evicted);
  }

  async cleanupPod(pod: Pod): Promise<void> {
    const { uid, name, namespace } = identity(pod);
    const status = await this.deps.kubeRuntime.getPodStatus(uid, name, namespace);
    await this.deps.kubeRuntime.removePod(pod, status);
    await this.deps.podCgroups?.remove(pod);
  }

  podTerminated(pod: Pod): void {
    const uid = pod.metadata!.uid!;
    this.deps.podManager.terminated(uid);
    this.lastSeen.delete(uid);
    this.plegNews.delete(uid);
    this.deps.prober.removePod(uid);
    this.waiting.delete(uid);
    this.pastDeadline.delete(uid);
    this.evicted.delete(uid);
    this.deps.statusManager.delete(uid);
    this.deps.bus.emit('[PodWorker] Pod Terminated', {
      podUid: uid,
      podName: pod.metadata!.name!,
      namespace: pod.metadata!.namespace ?? 'default',
    });
    this.deps.logger.info('Pod terminated and removed', { pod: podRef(pod), podUID: uid });
  }

  private updateStatus(
    pod: Pod,
    runtime: RuntimePodStatus,
    terminal = false,
    pastDeadline = false,
    evicted?: { message: string },
  ): void {
    const uid = pod.metadata!.uid!;
    const { prober, statusManager, hostIP } = this.deps;
    prober.updatePod(pod, runtime, hostIP);
    const status = generatePodStatus({
      pod,
      runtime,
      waiting: this.waiting.get(uid) ?? new Map(),
      ready: (id, container) => prober.ready(id, container),
      started: (id, container) => prober.started(id, container),
      hostIP,
      now: this.deps.clock.now(),
      previous: statusManager.get(uid),
      terminal,
      ...(pastDeadline ? { deadlineExceeded: true } : {}),
      ...(evicted ? { evicted } : {}),
      ...(this.runtimeName !== undefined ? { runtimeName: this.runtimeName } : {}),
    });
    if (this.runtimeName === undefined) void this.learnRuntimeName();
    statusManager.set(pod, status);
  }
}

function identity(pod: Pod): { uid: string; name: string; namespace: string } {
  const meta = pod.metadata!;
  return { uid: meta.uid!, name: meta.name!, namespace: meta.namespace ?? 'default' };
}

/** Each state after the ones an object passes through before it (container: created → running → exited). */
const stateOrder: Record<string, number> = { created: 1, running: 2, exited: 3, ready: 1, notready: 2 };

/** Sandbox and container states of a pod's runtime status, by id. */
function statesOf(status: RuntimePodStatus): Map<string, string> {
  const states = new Map<string, string>();
  for (const sb of status.sandboxes) states.set(sb.id, sb.ready ? 'ready' : 'notready');
  for (const c of status.containers) states.set(c.id, c.state);
  return states;
}

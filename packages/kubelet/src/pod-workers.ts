import type { Pod } from '@nodelet/api';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import { type Observable, Subject } from 'rxjs';

/**
 * Pod workers: one serialized worker per pod, pods in parallel, the newest update wins (upstream
 * pod_workers.go). Each pod moves through three phases:
 *
 *   sync ──(kill requested)──► terminating ──(containers and sandbox stopped)──► terminated ──► forgotten
 *
 * A sync that asks to be retried (`requeueAfterMs`: a backoff ending, a periodic resync) is timed on the
 * kernel clock and, when due, published on `requeue$` for the sync loop to dispatch back; a sync requested while another runs is coalesced into one pending update. A sync
 * asked for only because the runtime changed (PLEG) is optional: just before it runs, the syncer may say
 * the last sync already saw that change (`syncNeeded`), and then it is skipped.
 * Static pods that share a full name (an edited manifest gets a new UID) start only once the previous pod
 * of that name has terminated.
 */
export type WorkerPhase = 'sync' | 'terminating' | 'terminated';

export interface SyncOutcome {
  /** Sync this pod again after this many ms (absent: the periodic resync). */
  requeueAfterMs?: number;
}

export interface PodSyncer {
  syncPod(pod: Pod): Promise<SyncOutcome>;
  /** Stops every container (with the grace period) and the sandbox. */
  terminatePod(pod: Pod, gracePeriodSeconds: number | undefined): Promise<void>;
  /** Removes what is left of a terminated pod (containers, sandboxes, volumes). Throws to be retried. */
  cleanupPod(pod: Pod): Promise<void>;
  /** Told when a pod reached `terminated` and was cleaned up. */
  podTerminated(pod: Pod): void;
  /**
   * Asked before an optional sync (one only PLEG asked for) runs: false skips it, as the last sync
   * already saw everything PLEG reported since.
   */
  syncNeeded?(pod: Pod): boolean;
}

interface Worker {
  pod: Pod;
  phase: WorkerPhase;
  pending: boolean;
  /** The pending sync was asked for by something other than an optional request. */
  mustSync: boolean;
  running: boolean;
  /** When the last sync asked to run again (clock time), kept for a skipped optional sync. */
  requeueAt?: number;
  gracePeriodSeconds?: number;
  cancelRequeue?: () => void;
  /** Waiting for an older pod of the same full name to terminate. */
  blocked: boolean;
  /** Syncs that failed in a row: logged at 1, 2, 4, … (once per backoff step while the runtime is down). */
  failures?: number;
}

const fullName = (pod: Pod) => `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name}`;

export interface PodWorkerOptions {
  resyncIntervalMs?: number;
  errorBackoffMs?: number;
}

export class PodWorkers {
  private readonly workers = new Map<string, Worker>();
  private readonly activeByFullName = new Map<string, string>();
  private readonly resyncIntervalMs: number;
  private readonly errorBackoffMs: number;
  private readonly requeues = new Subject<string>();
  /** Pods whose requeue fell due (a backoff ending, the periodic resync, a retry after an error). */
  readonly requeue$: Observable<string> = this.requeues.asObservable();
  private idleWaiters: (() => void)[] = [];
  private busy = 0;

  constructor(
    private readonly syncer: PodSyncer,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: PodWorkerOptions = {},
  ) {
    this.resyncIntervalMs = options.resyncIntervalMs ?? 60_000;
    this.errorBackoffMs = options.errorBackoffMs ?? 10_000;
  }

  /**
   * A new or changed desired pod: sync it (unless it is already being terminated). A pod deleted in its
   * source (`deletionTimestamp`) is terminated, never synced: a kubelet that restarts while such a pod
   * was being killed finishes the kill instead of starting the pod again (upstream UpdatePod).
   */
  updatePod(pod: Pod): void {
    const uid = pod.metadata!.uid!;
    let w = this.workers.get(uid);
    if (!w) {
      w = { pod, phase: 'sync', pending: false, mustSync: false, running: false, blocked: false };
      if (pod.metadata?.deletionTimestamp) {
        w.phase = 'terminating';
        w.gracePeriodSeconds = pod.metadata.deletionGracePeriodSeconds ?? undefined;
      }
      this.workers.set(uid, w);
      const owner = this.activeByFullName.get(fullName(pod));
      if (owner && owner !== uid && this.workers.has(owner)) w.blocked = true;
      else this.activeByFullName.set(fullName(pod), uid);
    }
    if (w.phase === 'sync') w.pod = pod;
    this.schedule(uid, w);
  }

  /** The pod is no longer desired: terminate it with the given (or its spec's) grace period. */
  killPod(uid: string, gracePeriodSeconds?: number): void {
    const w = this.workers.get(uid);
    if (!w || w.phase === 'terminated') return;
    if (w.phase === 'sync') {
      w.phase = 'terminating';
      w.gracePeriodSeconds = gracePeriodSeconds;
    } else if (
      gracePeriodSeconds !== undefined &&
      (w.gracePeriodSeconds === undefined || gracePeriodSeconds < w.gracePeriodSeconds)
    ) {
      w.gracePeriodSeconds = gracePeriodSeconds; // a shorter grace period may override a longer one
    }
    this.schedule(uid, w);
  }

  /**
   * Ask for a sync now (a probe result, or PLEG saw a change). `optional`: only the runtime changed, and
   * the syncer's `syncNeeded` decides, when the sync is due, whether the last sync already saw it.
   */
  requestSync(uid: string, options: { optional?: boolean } = {}): void {
    const w = this.workers.get(uid);
    if (w) this.schedule(uid, w, options.optional);
  }

  phase(uid: string): WorkerPhase | undefined {
    return this.workers.get(uid)?.phase;
  }

  isKnown(uid: string): boolean {
    return this.workers.has(uid);
  }

  uids(): string[] {
    return [...this.workers.keys()];
  }

  get size(): number {
    return this.workers.size;
  }

  /** Resolves when no worker is running or has pending work (tests, benchmarks, shutdown). */
  whenIdle(): Promise<void> {
    if (this.busy === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    for (const w of this.workers.values()) w.cancelRequeue?.();
  }

  private schedule(uid: string, w: Worker, optional = false): void {
    if (!optional) w.mustSync = true;
    w.cancelRequeue?.();
    w.cancelRequeue = undefined;
    if (w.blocked && w.phase === 'sync') return;
    if (w.running) {
      w.pending = true;
      return;
    }
    w.pending = true;
    void this.run(uid, w);
  }

  private requeue(uid: string, w: Worker, afterMs: number): void {
    w.cancelRequeue?.();
    w.requeueAt = this.clock.now() + afterMs;
    w.cancelRequeue = this.clock.setTimeout(() => {
      w.cancelRequeue = undefined;
      this.requeues.next(uid);
    }, afterMs);
  }

  private async run(uid: string, w: Worker): Promise<void> {
    w.running = true;
    this.busy++;
    try {
      while (w.pending) {
        w.pending = false;
        if (w.phase === 'sync' && !w.mustSync && this.syncer.syncNeeded?.(w.pod) === false) {
          // The last sync saw it all; keep its own next sync (a backoff ending, the periodic resync).
          if (!w.cancelRequeue && w.requeueAt !== undefined)
            this.requeue(uid, w, Math.max(0, w.requeueAt - this.clock.now()));
          continue;
        }
        w.mustSync = false;
        if (w.phase === 'sync') await this.doSync(uid, w);
        else if (w.phase === 'terminating') await this.doTerminate(uid, w);
        else if (w.phase === 'terminated') await this.doCleanup(uid, w);
      }
    } finally {
      w.running = false;
      this.busy--;
      if (this.busy === 0) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const resolve of waiters) resolve();
      }
    }
  }

  private async doSync(uid: string, w: Worker): Promise<void> {
    try {
      const outcome = await this.syncer.syncPod(w.pod);
      w.failures = undefined;
      const afterMs = Math.min(outcome.requeueAfterMs ?? this.resyncIntervalMs, this.resyncIntervalMs);
      w.requeueAt = this.clock.now() + afterMs;
      if (w.phase === 'sync' && !w.pending) this.requeue(uid, w, afterMs);
    } catch (err) {
      const failures = (w.failures ?? 0) + 1;
      w.failures = failures;
      if ((failures & (failures - 1)) === 0) {
        this.logger.error('error syncing pod, skipping', {
          pod: fullName(w.pod),
          podUID: uid,
          failures,
          err: errorMessage(err),
        });
      }
      w.requeueAt = this.clock.now() + this.errorBackoffMs;
      if (w.phase === 'sync' && !w.pending) this.requeue(uid, w, this.errorBackoffMs);
    }
  }

  private async doTerminate(uid: string, w: Worker): Promise<void> {
    try {
      await this.syncer.terminatePod(w.pod, w.gracePeriodSeconds);
      w.phase = 'terminated';
      w.pending = true;
    } catch (err) {
      this.logger.error('error terminating pod; will retry', {
        pod: fullName(w.pod),
        podUID: uid,
        err: errorMessage(err),
      });
      this.requeue(uid, w, this.errorBackoffMs);
    }
  }

  private async doCleanup(uid: string, w: Worker): Promise<void> {
    try {
      await this.syncer.cleanupPod(w.pod);
    } catch (err) {
      // Housekeeping retries: the pod stays known (never forgotten) until its sandbox is gone.
      this.logger.warn('failed to clean up terminated pod; will retry', {
        pod: fullName(w.pod),
        podUID: uid,
        err: errorMessage(err),
      });
      this.requeue(uid, w, this.errorBackoffMs);
      return;
    }
    this.workers.delete(uid);
    const name = fullName(w.pod);
    if (this.activeByFullName.get(name) === uid) this.activeByFullName.delete(name);
    this.syncer.podTerminated(w.pod);
    this.unblock(name);
  }

  private unblock(name: string): void {
    for (const [uid, w] of this.workers) {
      if (w.blocked && fullName(w.pod) === name) {
        w.blocked = false;
        this.activeByFullName.set(name, uid);
        this.schedule(uid, w);
        return;
      }
    }
  }
}

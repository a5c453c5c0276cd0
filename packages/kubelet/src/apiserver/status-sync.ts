import { canonicalJson, type Pod, type PodCondition, type PodStatus } from '@nodelet/api';
import {
  type Clock,
  errorMessage,
  type EventBus,
  type Logger,
  type Loop,
  type StepResult,
} from '@nodelet/kernel';
import type { Subscription } from 'rxjs';
import { isConflict, isNotFound, isTransient, type KubeApi, mergePatch } from '@nodelet/client';

/** The API pods the kubelet's pods report to: the pod itself, or a static pod's mirror pod. */
export interface StatusTargets {
  /** The API pod by `namespace/name`, as last seen (mirror pods included). */
  apiPod(namespace: string, name: string): Pod | undefined;
  /** Whether the kubelet still has a worker for this pod UID (running or terminating). */
  isActive(uid: string): boolean;
}

export interface StatusSyncOptions {
  /** Parallel writes (each also takes a token of the client's rate limiter). */
  concurrency?: number;
  /** Backoff after failed writes: first wait, doubled up to the max (the API server is away). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Periodic comparison of every status with the API's (upstream syncBatch, 10 s). */
  reconcilePeriodMs?: number;
}

interface Desired {
  namespace: string;
  name: string;
  status: PodStatus;
  terminated: boolean;
}

/** Conditions the kubelet owns; others in the API (the scheduler's, readiness gates) are kept. */
const kubeletConditions = new Set(['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady']);

/**
 * Syncs the status manager to the API server (upstream status manager's syncPod/syncBatch):
 *
 * - every `[Status] Pod Status Changed` marks the pod dirty; dirty pods are written at once (a JSON
 *   merge patch of `pods/status` with the pod's UID, so a pod re-created under the same name is never
 *   written by mistake) — only when the API's status differs from what the kubelet reports;
 * - a static pod's status goes to its mirror pod;
 * - 409 Conflict re-reads the pod and tries again; 404 drops it; an unreachable server backs off
 *   (500 ms doubling to 5 s) and retries every dirty pod, so statuses catch up when it returns;
 * - every 10 s every status is compared with the API's again (upstream syncBatch).
 *
 * One `clock.loop` runs it: a step writes what is dirty (up to `concurrency` at once, more joining as
 * they come) and, when due, reconciles; a change kicks the loop, a failed write makes it back off.
 * - once a pod with `deletionTimestamp` is terminated, its final status is written and the pod deleted
 *   (`gracePeriodSeconds: 0`, UID precondition) — the kubelet's confirmation that it is gone.
 *
 * Memory is bounded by the pods the kubelet runs: one desired status per pod, newest wins.
 */
export class PodStatusSyncer {
  private readonly desired = new Map<string, Desired>();
  private readonly dirty = new Set<string>();
  /** API pod keys (`ns/name/uid`) awaiting the final delete. */
  private readonly toDelete = new Map<string, { namespace: string; name: string; uid: string }>();
  private readonly subscriptions: Subscription[] = [];
  private inFlight = 0;
  private workers = 0;
  private loop?: Loop;
  /** A step is writing: new work joins it instead of kicking the loop. */
  private drained?: () => void;
  /** A write failed (the server is away): nothing more is written until the loop's backoff ends. */
  private paused = false;
  private nextReconcileAt = Infinity;
  private readonly idleWaiters: (() => void)[] = [];
  /** What was last written per pod and what the server answered: a server that normalizes a status
   * differently than we write it is not written again and again. */
  private readonly written = new Map<string, { sent: string; got: string }>();
  /** Writes done, for tests and benchmarks. */
  patches = 0;
  deletes = 0;

  constructor(
    private readonly api: KubeApi,
    private readonly targets: StatusTargets,
    private readonly bus: EventBus,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: StatusSyncOptions = {},
  ) {}

  private get running(): boolean {
    return !!this.loop && !this.loop.stopped;
  }

  private get reconcileMs(): number {
    return this.options.reconcilePeriodMs ?? 10_000;
  }

  start(): void {
    if (this.running) return;
    this.nextReconcileAt = this.clock.now() + this.reconcileMs;
    this.loop = this.clock.loop(() => this.step(), {
      period: this.reconcileMs,
      backoff: { initialMs: this.options.initialBackoffMs ?? 500, maxMs: this.options.maxBackoffMs ?? 5_000 },
      initialDelay: this.reconcileMs,
    });
    this.subscriptions.push(
      this.bus.subscribe('[Status] Pod Status Changed', (e) =>
        this.set(e.podUid, e.namespace, e.podName, e.status),
      ),
      this.bus.subscribe('[PodWorker] Pod Terminated', (e) => this.terminated(e.podUid)),
      // A pod that never ran (rejected by admission) has no worker, so no Pod Terminated.
      this.bus.subscribe('[Source] Pod Removed', (e) => {
        const uid = e.pod.metadata?.uid;
        if (uid && !this.targets.isActive(uid) && this.desired.has(uid)) this.terminated(uid);
      }),
    );
  }

  stop(): void {
    this.loop?.stop();
    for (const s of this.subscriptions.splice(0)) s.unsubscribe();
  }

  /** Statuses not yet written (for tests and the outage bound). */
  get pending(): number {
    return this.dirty.size + this.toDelete.size;
  }

  /** Resolves when nothing is being written and nothing is dirty (or the server is away). */
  whenIdle(): Promise<void> {
    if (this.inFlight === 0 && (this.pending === 0 || this.paused)) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** A status the kubelet reports for one of its pods. */
  set(uid: string, namespace: string, name: string, status: PodStatus): void {
    this.desired.set(uid, { namespace, name, status, terminated: false });
    this.markDirty(uid);
  }

  /**
   * The API's pods changed (watch events, a relist): statuses that differ from the kubelet's are written
   * again, and deleted pods the kubelet is done with get their final delete.
   */
  apiChanged(pods: ReadonlyMap<string, Pod>, changed?: ReadonlySet<string>): void {
    for (const [uid, d] of this.desired) {
      if (changed && !changed.has(`${d.namespace}/${d.name}`)) continue;
      if (this.differs(uid, d)) this.markDirty(uid);
    }
    for (const [key, pod] of pods) {
      if (changed && !changed.has(key)) continue;
      const meta = pod.metadata ?? {};
      if (!meta.deletionTimestamp || !meta.uid || isMirror(pod)) continue;
      if (this.targets.isActive(meta.uid)) continue;
      this.toDelete.set(meta.uid, {
        namespace: meta.namespace ?? 'default',
        name: meta.name!,
        uid: meta.uid,
      });
    }
    this.flush();
  }

  private terminated(uid: string): void {
    const d = this.desired.get(uid);
    if (d) d.terminated = true;
    const api = d ? this.targets.apiPod(d.namespace, d.name) : undefined;
    if (d && api?.metadata?.uid === uid && api.metadata.deletionTimestamp) {
      this.toDelete.set(uid, { namespace: d.namespace, name: d.name, uid });
    }
    if (d && !this.dirty.has(uid)) this.forget(uid);
    this.flush();
  }

  private markDirty(uid: string): void {
    this.dirty.add(uid);
    this.flush();
  }

  /** Has the dirty pods written: by the step running now, or by a step started at once. */
  private flush(): void {
    if (!this.running || this.paused) return;
    if (this.drained) this.pump();
    else this.loop?.kick();
  }

  /** One step of the loop: reconcile when due, then write until nothing is dirty or a write failed. */
  private async step(): Promise<StepResult> {
    this.paused = false;
    if (this.clock.now() >= this.nextReconcileAt) {
      this.nextReconcileAt = this.clock.now() + this.reconcileMs;
      for (const [uid, d] of this.desired) if (this.differs(uid, d)) this.dirty.add(uid);
    }
    await new Promise<void>((resolve) => {
      this.drained = resolve;
      this.pump();
      if (this.workers === 0) resolve();
    });
    this.drained = undefined;
    this.notifyIdle();
    if (this.paused) return false;
    // Work that came after the last worker ended is written at once.
    return this.pending > 0 ? { after: 0 } : undefined;
  }

  /** Starts workers up to the concurrency limit while there is work. */
  private pump(): void {
    const limit = this.options.concurrency ?? 8;
    while (this.running && !this.paused && this.workers < limit && this.pending > 0) {
      this.workers++;
      void this.work().finally(() => {
        if (--this.workers === 0) this.drained?.();
      });
    }
  }

  private async work(): Promise<void> {
    while (this.running && !this.paused) {
      const next = this.takeWork();
      if (!next) return;
      this.inFlight++;
      try {
        if (!(await next())) this.paused = true;
      } catch (err) {
        this.logger.error('status sync failed', { err: errorMessage(err) });
        this.paused = true;
      } finally {
        this.inFlight--;
        this.notifyIdle();
      }
    }
  }

  private notifyIdle(): void {
    if (this.inFlight > 0) return;
    if (this.pending > 0 && !this.paused) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** The next write to do: a dirty status first, then a final delete whose status is written. */
  private takeWork(): (() => Promise<boolean>) | undefined {
    for (const uid of this.dirty) {
      this.dirty.delete(uid);
      const d = this.desired.get(uid);
      if (!d) continue;
      return () => this.writeStatus(uid, d);
    }
    for (const [uid, target] of this.toDelete) {
      this.toDelete.delete(uid);
      return () => this.finalDelete(target);
    }
    return undefined;
  }

  /** True when written or nothing to write; false to retry later (unreachable server). */
  private async writeStatus(uid: string, d: Desired): Promise<boolean> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const target = this.targets.apiPod(d.namespace, d.name);
      if (!target?.metadata?.uid) {
        if (d.terminated) this.forget(uid);
        return true; // no API pod (yet): a static pod waiting for its mirror, or a deleted pod
      }
      // The pod itself, or — for a static pod — its mirror; anything else is another pod of that name.
      if (target.metadata.uid !== uid && !isMirror(target)) return true;
      const status = mergedStatus(target.status, d.status);
      if (!this.needsWrite(uid, target.status, status)) {
        if (d.terminated) this.forget(uid);
        return true;
      }
      try {
        const updated = await this.api.patchPodStatus(d.namespace, d.name, {
          metadata: { uid: target.metadata.uid },
          status,
        });
        this.patches++;
        // Until the watch brings it, the written status is what the API has.
        target.status = updated.status ?? status;
        this.written.set(uid, { sent: canonicalJson(status), got: canonicalJson(target.status) });
        if (this.desired.get(uid) === d && d.terminated && !this.dirty.has(uid)) this.forget(uid);
        return true;
      } catch (err) {
        if (isNotFound(err)) return true;
        if (isConflict(err)) {
          try {
            const fresh = await this.api.getPod(d.namespace, d.name);
            Object.assign(target, { metadata: fresh.metadata, status: fresh.status });
          } catch (getErr) {
            if (isNotFound(getErr)) return true;
            if (isTransient(getErr)) return this.retryLater(uid, getErr);
          }
          continue;
        }
        if (isTransient(err)) return this.retryLater(uid, err);
        this.logger.warn('Pod status rejected by the API server', {
          pod: `${d.namespace}/${d.name}`,
          err: errorMessage(err),
        });
        return true;
      }
    }
    return this.retryLater(uid, new Error('conflicts'));
  }

  private retryLater(uid: string, err: unknown): boolean {
    this.dirty.add(uid);
    this.logger.debug('Failed to update pod status; will retry', { podUID: uid, err: errorMessage(err) });
    return false;
  }

  private async finalDelete(target: { namespace: string; name: string; uid: string }): Promise<boolean> {
    const d = this.desired.get(target.uid);
    if (d && this.dirty.has(target.uid)) {
      this.toDelete.set(target.uid, target); // after its status
      return true;
    }
    if (this.targets.isActive(target.uid)) return true; // still terminating: deleted when done
    try {
      await this.api.deletePod(target.namespace, target.name, { gracePeriodSeconds: 0, uid: target.uid });
      this.deletes++;
      this.logger.info('Pod fully terminated and removed from the API server', {
        pod: `${target.namespace}/${target.name}`,
        podUID: target.uid,
      });
      return true;
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return true; // gone, or another pod now has the name
      if (isTransient(err)) {
        this.toDelete.set(target.uid, target);
        return false;
      }
      this.logger.warn('Final delete of pod failed', {
        pod: `${target.namespace}/${target.name}`,
        err: errorMessage(err),
      });
      return true;
    }
  }

  private differs(uid: string, d: Desired): boolean {
    const target = this.targets.apiPod(d.namespace, d.name);
    if (!target?.metadata?.uid) return false;
    return this.needsWrite(uid, target.status, mergedStatus(target.status, d.status));
  }

  /**
   * Whether writing `status` would change the API's: not when merging it changes nothing, nor when it is
   * exactly what we wrote last and the API still holds what the server answered then.
   */
  private needsWrite(uid: string, api: PodStatus | undefined, status: PodStatus): boolean {
    const current = canonicalJson(api ?? {});
    if (canonicalJson(mergePatch(api ?? {}, status)) === current) return false;
    const last = this.written.get(uid);
    return !(last && last.sent === canonicalJson(status) && last.got === current);
  }

  private forget(uid: string): void {
    this.desired.delete(uid);
    this.written.delete(uid);
  }
}

/**
 * The status to write: the kubelet's, with the API's conditions the kubelet does not own kept (the
 * scheduler's PodScheduled with its transition time, readiness gates).
 */
export function mergedStatus(api: PodStatus | undefined, ours: PodStatus): PodStatus {
  const conditions: PodCondition[] = [];
  const apiConditions = api?.conditions ?? [];
  for (const c of ours.conditions ?? []) {
    if (kubeletConditions.has(c.type)) conditions.push(c);
    else conditions.push(apiConditions.find((a) => a.type === c.type) ?? c);
  }
  for (const c of apiConditions) if (!conditions.some((o) => o.type === c.type)) conditions.push(c);
  return { ...ours, conditions: conditions.map(stripNulls) };
}

/** `lastProbeTime: null` would delete the field in a merge patch; the API omits it anyway. */
function stripNulls<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== null && v !== undefined) out[k] = v;
  return out as T;
}

function isMirror(pod: Pod): boolean {
  return pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined;
}

import type { Pod } from '@nodelet/api';
import { type Clock, errorMessage, type EventBus, type Logger } from '@nodelet/kernel';
import { map, merge, Observable, type Subscription } from 'rxjs';
import type { PlegChange } from './pleg.js';
import type { PodManager } from './pod-manager.js';
import type { PodWorkers } from './pod-workers.js';

/**
 * The kubelet's sync loop (upstream syncLoop / syncLoopIteration): one stream of everything that asks
 * for a pod to be synced, handled in one place, which only tells the pod workers what to do.
 *
 *   config$        [Source] Pod Added/Updated/Removed ─┐
 *   pleg$          PLEG relist: what changed, by pod   │
 *   probe$         a probe result changed              ├─► syncLoopIteration ─► SyncHandler ─► PodWorkers
 *   requeue$       a pod worker's backoff/resync is due│       (one event at a time, in order)
 *   housekeeping$  every 2 s: remove what no one wants ┘
 *
 * A dispatch is synchronous: it only updates the pod manager and tells workers what to do, and the
 * workers run the syncs. The one asynchronous handler is housekeeping's pass; its next tick waits for it.
 *
 * Everything a pod's life needs beyond this — computing and executing its actions — happens in its worker
 * (`pod-workers.ts` → `pod-sync.ts` → `kuberuntime/`).
 */
export type SyncLoopEvent =
  | { kind: 'config'; op: 'add' | 'update' | 'remove'; source: string; pod: Pod }
  | { kind: 'pleg'; changes: ReadonlyMap<string, PlegChange[]> }
  | { kind: 'probe'; podUid: string }
  | { kind: 'requeue'; podUid: string }
  | { kind: 'housekeeping'; done: () => void };

/** What the loop dispatches to (upstream SyncHandler). */
export interface SyncHandler {
  handlePodAdditionsOrUpdates(pod: Pod): void;
  handlePodRemoves(pod: Pod): void;
  handlePlegEvents(changes: ReadonlyMap<string, PlegChange[]>): void;
  /** A probe result changed, or a worker's requeue fell due: sync the pod now. */
  handlePodSyncs(podUid: string): void;
  handlePodCleanups(): Promise<void>;
}

/** One iteration: one event to its handler. Exported so tests can drive the loop one step at a time. */
export function syncLoopIteration(event: SyncLoopEvent, handler: SyncHandler): void | Promise<void> {
  switch (event.kind) {
    case 'config':
      return event.op === 'remove'
        ? handler.handlePodRemoves(event.pod)
        : handler.handlePodAdditionsOrUpdates(event.pod);
    case 'pleg':
      return handler.handlePlegEvents(event.changes);
    case 'probe':
    case 'requeue':
      return handler.handlePodSyncs(event.podUid);
    case 'housekeeping':
      return handler.handlePodCleanups().finally(event.done);
  }
}

export interface SyncLoopSources {
  bus: EventBus;
  pleg$: Observable<ReadonlyMap<string, PlegChange[]>>;
  probe$: Observable<string>;
  requeue$: Observable<string>;
  housekeeping$: Observable<SyncLoopEvent & { kind: 'housekeeping' }>;
}

/** The pod sources' updates on the bus, as loop events. */
export function configUpdates(bus: EventBus): Observable<SyncLoopEvent> {
  return bus
    .on('[Source] Pod Added', '[Source] Pod Updated', '[Source] Pod Removed')
    .pipe(map((e): SyncLoopEvent => ({ kind: 'config', op: opOf(e.type), source: e.source, pod: e.pod })));
}

const opOf = (type: string) =>
  type === '[Source] Pod Removed' ? 'remove' : type === '[Source] Pod Added' ? 'add' : 'update';

/**
 * Housekeeping ticks on the clock: the first `periodMs` from now, each next one `periodMs` after the
 * previous tick was handled (a slow pass is never overlapped by the next).
 */
export function housekeepingTicks(
  clock: Clock,
  periodMs: number,
): Observable<SyncLoopEvent & { kind: 'housekeeping' }> {
  return new Observable((subscriber) => {
    const loop = clock.loop(
      () => new Promise<void>((done) => subscriber.next({ kind: 'housekeeping', done })),
      { period: periodMs, initialDelay: periodMs },
    );
    return () => loop.stop();
  });
}

/** Runs the loop until the returned subscription ends: every source merged, each event handled in turn. */
export function runSyncLoop(sources: SyncLoopSources, handler: SyncHandler, logger: Logger): Subscription {
  const events$ = merge(
    configUpdates(sources.bus),
    sources.pleg$.pipe(map((changes): SyncLoopEvent => ({ kind: 'pleg', changes }))),
    sources.probe$.pipe(map((podUid): SyncLoopEvent => ({ kind: 'probe', podUid }))),
    sources.requeue$.pipe(map((podUid): SyncLoopEvent => ({ kind: 'requeue', podUid }))),
    sources.housekeeping$,
  );
  return events$.subscribe((event) => {
    // One bad event is logged; the loop goes on.
    const failed = (err: unknown) =>
      logger.error('sync loop handler failed', { event: event.kind, err: errorMessage(err) });
    try {
      syncLoopIteration(event, handler)?.catch(failed);
    } catch (err) {
      failed(err);
    }
  });
}

/** What the kubelet's handler needs: the pod manager, the workers, and the few parts a dispatch touches. */
export interface KubeletSyncHandlerDeps {
  podManager: PodManager;
  workers: PodWorkers;
  clock: Clock;
  /** Admission of a pod the kubelet has not run yet; a rejected pod is finished (never run). */
  admit(pod: Pod): boolean;
  /** PLEG's changes of a pod, kept for the worker's `syncNeeded`. */
  notePlegChanges(uid: string, changes: PlegChange[]): void;
  /** The pod is being terminated: its liveness and startup probes stop. */
  stopProbes(uid: string): void;
  /** A rejected pod's source removed it before it ran: forget its status. */
  forgetStatus(uid: string): void;
  housekeeping(): Promise<void>;
}

/** The kubelet's SyncHandler: upstream HandlePodAdditions/Updates/Removes/Syncs/Cleanups. */
export class KubeletSyncHandler implements SyncHandler {
  constructor(private readonly deps: KubeletSyncHandlerDeps) {}

  handlePodAdditionsOrUpdates(pod: Pod): void {
    const { podManager, workers } = this.deps;
    const uid = pod.metadata!.uid!;
    if (podManager.isFinished(uid)) return;
    if (!podManager.has(uid) && !workers.isKnown(uid) && !this.deps.admit(pod)) {
      podManager.reject(pod);
      return;
    }
    podManager.set(pod);
    // Deleted in the API server: terminate with the grace period the deletion asked for.
    if (pod.metadata?.deletionTimestamp) {
      if (!workers.isKnown(uid)) workers.updatePod(pod); // adopted (a restart): its containers too
      this.deps.stopProbes(uid);
      workers.killPod(uid, pod.metadata.deletionGracePeriodSeconds ?? undefined);
      return;
    }
    workers.updatePod(pod);
  }

  handlePodRemoves(pod: Pod): void {
    const { podManager, workers } = this.deps;
    const uid = pod.metadata!.uid!;
    const { pod: known, wasFinished } = podManager.remove(pod);
    if (wasFinished && !workers.isKnown(uid)) {
      this.deps.forgetStatus(uid);
      return;
    }
    podManager.markTerminating(known, this.deps.clock.now());
    this.deps.stopProbes(uid);
    workers.killPod(uid);
  }

  handlePlegEvents(changes: ReadonlyMap<string, PlegChange[]>): void {
    for (const [uid, list] of changes) {
      if (!this.deps.workers.isKnown(uid)) continue;
      this.deps.notePlegChanges(uid, list);
      this.deps.workers.requestSync(uid, { optional: true });
    }
  }

  handlePodSyncs(podUid: string): void {
    this.deps.workers.requestSync(podUid);
  }

  handlePodCleanups(): Promise<void> {
    return this.deps.housekeeping();
  }
}

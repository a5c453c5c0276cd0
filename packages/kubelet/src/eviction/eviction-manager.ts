import type { Pod } from '@nodelet/api';
import type { PodStats, StatsProvider, Summary, VolumeStats } from '@nodelet/cri';
import { type Clock, errorMessage, type Logger, type Loop } from '@nodelet/kernel';
import type { AdmitResult } from '../admission.js';
import { admitUnderPressure, isCriticalPod } from './admission.js';
import { hasLocalStorageLimits, localStorageViolation } from './local-storage.js';
import { evictionMessage } from './message.js';
import { rankFuncFor, type StatsOf } from './ranking.js';
import {
  byEvictionPriority,
  mergeThresholds,
  nodeConditionsLastObservedAt,
  nodeConditionsObservedSince,
  nodeConditionsOf,
  type Observations,
  observe,
  type PressureCondition,
  signalToResource,
  thresholdsFirstObservedAt,
  thresholdsMet,
  thresholdsMetGracePeriod,
} from './signals.js';
import { type EvictionConfig, isHardThreshold, type Threshold } from './thresholds.js';

/** The grace period of a hard eviction (upstream immediateEvictionGracePeriodSeconds). */
export const IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS = 1;

/** How long, and how often, the manager waits for evicted pods to finish (upstream podCleanupTimeout, podCleanupPollFreq). */
export const POD_CLEANUP_TIMEOUT_MS = 30_000;
export const POD_CLEANUP_POLL_MS = 1_000;

/** What the node can free before a pod is evicted (upstream's nodeReclaimFuncs). */
export interface NodeReclaim {
  /** Removes every dead container (upstream DeleteAllUnusedContainers). */
  deleteAllUnusedContainers(): Promise<void>;
  /** Removes every image no container uses (upstream DeleteUnusedImages). */
  deleteUnusedImages(): Promise<void>;
}

export interface EvictionManagerDeps {
  stats: StatsProvider;
  clock: Clock;
  logger: Logger;
  /** The pods admitted and not finished. */
  activePods(): Pod[];
  /**
   * Stops the pod for good: Failed, reason Evicted, with this message, killed with this grace period.
   * False when it could not be (the next synchronize tries again).
   */
  evictPod(pod: Pod, gracePeriodSeconds: number, message: string, signal: string): Promise<boolean>;
  /**
   * Whether an evicted pod is finished: its containers stopped, so what they held is free (upstream
   * PodIsFinished). Absent: the next synchronize does not wait for it.
   */
  podIsFinished?(pod: Pod): boolean;
  /** The pressure conditions changed (the node status reports them). */
  conditionsChanged?(conditions: PressureCondition[]): void;
  /** A Warning event on the node (EvictionThresholdMet). */
  nodeEvent?(reason: string, message: string): void;
  reclaim?: NodeReclaim;
  /** Usage of a pod's volumes, which the runtime's stats do not carry (emptyDir on the node's disk). */
  volumeStats?(pod: Pod): Promise<VolumeStats[]>;
  /**
   * Whether images and writable layers are on a file system of their own (upstream HasDedicatedImageFs;
   * absent: one file system for all). Asked at the first synchronize that gets an answer, then kept.
   */
  hasDedicatedImageFs?(): Promise<boolean>;
}

/**
 * The eviction manager (upstream pkg/kubelet/eviction/eviction_manager.go). Every housekeeping period
 * (10 s) `synchronize` reads the stats and:
 *
 *   observations ──► thresholds met (hard now, soft after their grace period; a met one stays met
 *        │           until its minimum reclaim is free too)
 *        ├──► pressure conditions (kept for the transition period after the last time they were met)
 *        └──► the first threshold by priority (memory first) ──► node-level reclaim (dead containers,
 *             unused images) for disk signals ──► still met: rank the active pods for the signal and
 *             evict the first that can be — one pod per synchronize, and the next synchronize only once
 *             that pod is finished (at most 30 s later): until its memory is free, the same pressure
 *             would take a second pod.
 */
export class EvictionManager {
  private thresholdsFirstObservedAt = new Map<Threshold, number>();
  private lastObservedAt = new Map<PressureCondition, number>();
  private met: Threshold[] = [];
  private conditions: PressureCondition[] = [];
  private loop?: Loop;
  private stopped = new AbortController();
  /** Synchronizations that failed in a row. */
  private failures = 0;
  /** Known once asked (upstream builds its rank and reclaim functions then). */
  private dedicatedImageFs?: boolean;

  constructor(
    private readonly deps: EvictionManagerDeps,
    private readonly config: EvictionConfig,
  ) {}

  /** Synchronizes every `periodMs` on the clock (upstream monitoringInterval, the housekeeping period). */
  start(periodMs = 10_000): void {
    if (this.config.thresholds.length === 0) return;
    this.stopped = new AbortController();
    this.loop = this.deps.clock.loop(
      () =>
        this.synchronize().then(async (evicted) => {
          if (this.failures > 0) this.deps.logger.info('Eviction manager: synchronizing again');
          this.failures = 0;
          if (evicted.length > 0) await this.waitForPodsCleanup(evicted);
        }),
      {
        period: periodMs,
        initialDelay: periodMs,
        onError: (err) => {
          // Once per backoff step (1, 2, 4, … failures in a row), not every period while the stats are
          // unreadable (the runtime away): the other reporters of an outage log the same way.
          const failures = ++this.failures;
          if ((failures & (failures - 1)) === 0) {
            this.deps.logger.error('Eviction manager: failed to synchronize', {
              failures,
              err: errorMessage(err),
            });
          }
        },
      },
    );
  }

  stop(): void {
    this.loop?.stop();
    this.stopped.abort();
  }

  /**
   * Waits until the evicted pods are finished, checking every second for at most 30 s (upstream
   * waitForPodsCleanup).
   */
  async waitForPodsCleanup(pods: readonly Pod[]): Promise<void> {
    const finished = this.deps.podIsFinished;
    if (!finished) return;
    const { clock, logger } = this.deps;
    const names = pods.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(',');
    logger.info('Eviction manager: pods evicted, waiting for pod to be cleaned up', { pods: names });
    const deadline = clock.now() + POD_CLEANUP_TIMEOUT_MS;
    while (!this.stopped.signal.aborted) {
      await clock.sleep(POD_CLEANUP_POLL_MS, this.stopped.signal).catch(() => undefined);
      if (pods.every((p) => finished(p))) {
        logger.info('Eviction manager: pods successfully cleaned up', { pods: names });
        return;
      }
      if (clock.now() >= deadline) {
        logger.info('Eviction manager: timed out waiting for pods to be cleaned up', { pods: names });
        return;
      }
    }
  }

  /** The pressure conditions now (MemoryPressure, DiskPressure, PIDPressure). */
  nodeConditions(): readonly PressureCondition[] {
    return this.conditions;
  }

  isUnderPressure(condition: PressureCondition): boolean {
    return this.conditions.includes(condition);
  }

  /** Admission of a new pod under the current pressure (upstream Admit). */
  admit(pod: Pod): AdmitResult {
    return admitUnderPressure(pod, this.conditions);
  }

  /** One control step; returns the pods it evicted (at most one). */
  async synchronize(): Promise<Pod[]> {
    const { clock, logger } = this.deps;
    if (this.dedicatedImageFs === undefined) {
      this.dedicatedImageFs = (await this.deps.hasDedicatedImageFs?.()) ?? false;
      logger.info('Eviction manager: the image file system', {
        dedicated: this.dedicatedImageFs,
      });
    }
    const summary = await this.deps.stats.snapshot();
    const observations = observe(summary);
    const now = clock.now();
    let thresholds = thresholdsMet(this.config.thresholds, observations, false);
    // A threshold met before stays met until its minimum reclaim is also available.
    if (this.met.length > 0)
      thresholds = mergeThresholds(thresholds, thresholdsMet(this.met, observations, true));
    const firstObserved = thresholdsFirstObservedAt(thresholds, this.thresholdsFirstObservedAt, now);
    // Soft thresholds within their grace period already raise the condition, as upstream.
    this.lastObservedAt = nodeConditionsLastObservedAt(
      nodeConditionsOf(thresholds),
      this.lastObservedAt,
      now,
    );
    const conditions = nodeConditionsObservedSince(
      this.lastObservedAt,
      this.config.pressureTransitionPeriodMs,
      now,
    );
    const actionable = thresholdsMetGracePeriod(firstObserved, now);
    this.thresholdsFirstObservedAt = firstObserved;
    this.met = actionable;
    this.setConditions(conditions);
    // A pod over its own local storage limits goes whatever the pressure; then nothing else this pass.
    const overLimits = await this.localStorageEviction(summary);
    if (overLimits.length > 0) return overLimits;
    if (actionable.length === 0) return [];

    const threshold = byEvictionPriority(actionable).find((t) => signalToResource[t.signal]);
    if (!threshold) return [];
    const resource = signalToResource[threshold.signal]!;
    logger.warn('Eviction manager: attempting to reclaim', { resourceName: resource });
    this.deps.nodeEvent?.('EvictionThresholdMet', `Attempting to reclaim ${resource}`);
    if (await this.reclaimNodeLevelResources(threshold)) {
      logger.info('Eviction manager: able to reduce resource pressure without evicting pods', {
        resourceName: resource,
      });
      return [];
    }
    const rank = rankFuncFor(threshold.signal, this.dedicatedImageFs);
    const active = this.deps.activePods();
    if (!rank || active.length === 0) {
      logger.error('Eviction manager: eviction thresholds have been met, but no pods are active to evict');
      return [];
    }
    const statsOf = await this.statsFunc(summary, active);
    const ranked = rank(active, statsOf);
    const named = (p: Pod) => `${p.metadata?.namespace}/${p.metadata?.name}`;
    logger.info('Eviction manager: pods ranked for eviction', { pods: ranked.map(named).join(',') });
    // A pod without stats goes first (as upstream): say so, it is not the pod's usage that chose it.
    const unmeasured = ranked.filter((p) => !statsOf(p));
    if (unmeasured.length > 0) {
      logger.warn('Eviction manager: no stats for pods, ranked first', {
        pods: unmeasured.map(named).join(','),
      });
    }
    for (const pod of ranked) {
      if (isCriticalPod(pod)) {
        logger.warn('Eviction manager: cannot evict a critical pod', {
          pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
        });
        continue;
      }
      const grace = this.gracePeriodOf(pod, threshold);
      const message = evictionMessage(threshold, pod, statsOf(pod), observations);
      if (await this.deps.evictPod(pod, grace, message, threshold.signal)) return [pod];
    }
    logger.info('Eviction manager: unable to evict any pods from the node');
    return [];
  }

  /** Upstream localStorageEviction: every active pod over one of its local storage limits, evicted. */
  private async localStorageEviction(summary: Summary): Promise<Pod[]> {
    const candidates = this.deps.activePods().filter(hasLocalStorageLimits);
    if (candidates.length === 0) return [];
    const statsOf = await this.statsFunc(summary, candidates);
    const evicted: Pod[] = [];
    for (const pod of candidates) {
      const stats = statsOf(pod);
      const violation = stats && localStorageViolation(pod, stats, this.dedicatedImageFs ?? false);
      if (!violation || isCriticalPod(pod)) continue;
      const { message, signal } = violation;
      if (await this.deps.evictPod(pod, IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS, message, signal))
        evicted.push(pod);
    }
    return evicted;
  }

  /** 1 s for a hard threshold; for a soft one, the pod's own, at most `evictionMaxPodGracePeriod`. */
  private gracePeriodOf(pod: Pod, threshold: Threshold): number {
    if (isHardThreshold(threshold)) return IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS;
    const max = this.config.maxPodGracePeriodSeconds;
    const own = pod.spec?.terminationGracePeriodSeconds ?? 30;
    return Math.min(max, own);
  }

  private setConditions(conditions: PressureCondition[]): void {
    const same =
      conditions.length === this.conditions.length && conditions.every((c) => this.conditions.includes(c));
    this.conditions = conditions;
    if (!same) {
      this.deps.logger.info('Eviction manager: node conditions changed', {
        conditions: conditions.join(','),
      });
      this.deps.conditionsChanged?.(conditions);
    }
  }

  /**
   * Node-level reclaim for a disk signal (upstream reclaimNodeLevelResources): dead containers, then
   * unused images; true when the threshold, minimum reclaim included, is no longer met.
   */
  private async reclaimNodeLevelResources(threshold: Threshold): Promise<boolean> {
    const reclaim = this.deps.reclaim;
    const disk =
      signalToResource[threshold.signal] === 'ephemeral-storage' ||
      signalToResource[threshold.signal] === 'inodes';
    if (!reclaim || !disk) return false;
    // With an image file system of its own, nothing on the node's can be reclaimed (upstream: logs only).
    if (this.dedicatedImageFs && threshold.signal.startsWith('nodefs.')) return false;
    for (const step of [() => reclaim.deleteAllUnusedContainers(), () => reclaim.deleteUnusedImages()]) {
      try {
        await step();
      } catch (err) {
        this.deps.logger.warn('Eviction manager: node-level reclaim failed', { err: errorMessage(err) });
      }
    }
    const observations: Observations = observe(await this.deps.stats.snapshot());
    return thresholdsMet([threshold], observations, true).length === 0;
  }

  /** Each active pod's stats, with its volumes' usage (upstream cachedStatsFunc). */
  private async statsFunc(summary: Summary, pods: readonly Pod[]): Promise<StatsOf> {
    const byUid = new Map<string, PodStats>(summary.pods.map((p) => [p.podRef.uid, p]));
    if (this.deps.volumeStats) {
      for (const pod of pods) {
        const stats = byUid.get(pod.metadata?.uid ?? '');
        if (!stats) continue;
        const volumes = await this.deps.volumeStats(pod).catch(() => []);
        if (volumes.length > 0)
          byUid.set(pod.metadata!.uid!, { ...stats, volume: [...(stats.volume ?? []), ...volumes] });
      }
    }
    return (pod) => byUid.get(pod.metadata?.uid ?? '');
  }
}

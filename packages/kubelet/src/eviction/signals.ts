import type { Summary } from '@nodelet/cri';
import { type Threshold, thresholdQuantity } from './thresholds.js';

/**
 * Eviction signals (upstream pkg/kubelet/eviction/helpers.go): what the stats summary says is available
 * of each resource, which thresholds that meets, and the node conditions they raise.
 */

/** What is available of a signal's resource and the capacity a percentage threshold is taken of. */
export interface Observation {
  available: number;
  capacity: number;
}

export type Observations = Map<string, Observation>;

export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** The node condition each signal raises (upstream signalToNodeCondition). */
export const signalToNodeCondition: Record<string, PressureCondition> = {
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'containerfs.available': 'DiskPressure',
  'containerfs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

/** The resource a signal reclaims (upstream signalToResource), named in the eviction message. */
export const signalToResource: Record<string, string> = {
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'containerfs.available': 'ephemeral-storage',
  'containerfs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

/**
 * The observations of a summary (upstream makeSignalObservations). `memory.available` is the node's
 * available bytes — capacity less the working set (usage less inactive file pages) — of a capacity of
 * available + working set; file system signals are statfs-like; `pid.available` is maxpid − curproc.
 * A signal whose numbers are missing is not observed (its thresholds are never met).
 */
export function observe(summary: Summary): Observations {
  const out: Observations = new Map();
  const { memory, fs, runtime, rlimit } = summary.node;
  if (memory?.availableBytes !== undefined && memory.workingSetBytes !== undefined) {
    out.set('memory.available', {
      available: memory.availableBytes,
      capacity: memory.availableBytes + memory.workingSetBytes,
    });
  }
  const fsSignals = (prefix: string, stats: typeof fs) => {
    if (!stats) return;
    if (stats.availableBytes !== undefined && stats.capacityBytes !== undefined)
      out.set(`${prefix}.available`, { available: stats.availableBytes, capacity: stats.capacityBytes });
    if (stats.inodesFree !== undefined && stats.inodes !== undefined)
      out.set(`${prefix}.inodesFree`, { available: stats.inodesFree, capacity: stats.inodes });
  };
  fsSignals('nodefs', fs);
  fsSignals('imagefs', runtime?.imageFs);
  if (runtime?.containerFs) fsSignals('containerfs', runtime.containerFs);
  if (rlimit?.maxpid !== undefined && rlimit.curproc !== undefined) {
    out.set('pid.available', { available: rlimit.maxpid - rlimit.curproc, capacity: rlimit.maxpid });
  }
  return out;
}

/**
 * The thresholds whose signal is below their value (upstream thresholdsMet); with `enforceMinReclaim`,
 * below value + minimum reclaim — a met threshold stays met until that much more is free.
 */
export function thresholdsMet(
  thresholds: readonly Threshold[],
  observations: Observations,
  enforceMinReclaim: boolean,
): Threshold[] {
  return thresholds.filter((t) => {
    const seen = observations.get(t.signal);
    if (!seen) return false;
    let quantity = thresholdQuantity(t.value, seen.capacity);
    if (enforceMinReclaim && t.minReclaim) quantity += thresholdQuantity(t.minReclaim, seen.capacity);
    return quantity > seen.available;
  });
}

/** Both lists, each threshold once (upstream mergeThresholds). */
export function mergeThresholds(a: readonly Threshold[], b: readonly Threshold[]): Threshold[] {
  return [...a, ...b.filter((t) => !a.includes(t))];
}

/** When each met threshold was first seen met: kept from before, now for a new one. */
export function thresholdsFirstObservedAt(
  met: readonly Threshold[],
  before: ReadonlyMap<Threshold, number>,
  now: number,
): Map<Threshold, number> {
  return new Map(met.map((t) => [t, before.get(t) ?? now]));
}

/** The thresholds met for at least their grace period (upstream thresholdsMetGracePeriod). */
export function thresholdsMetGracePeriod(
  observedAt: ReadonlyMap<Threshold, number>,
  now: number,
): Threshold[] {
  return [...observedAt].filter(([t, at]) => now - at >= t.gracePeriodMs).map(([t]) => t);
}

/** The conditions the thresholds raise, each once (upstream nodeConditions). */
export function nodeConditionsOf(thresholds: readonly Threshold[]): PressureCondition[] {
  const out: PressureCondition[] = [];
  for (const t of thresholds) {
    const c = signalToNodeCondition[t.signal];
    if (c && !out.includes(c)) out.push(c);
  }
  return out;
}

/** `lastObservedAt` with the current conditions seen now (upstream nodeConditionsLastObservedAt). */
export function nodeConditionsLastObservedAt(
  conditions: readonly PressureCondition[],
  before: ReadonlyMap<PressureCondition, number>,
  now: number,
): Map<PressureCondition, number> {
  const out = new Map(before);
  for (const c of conditions) out.set(c, now);
  return out;
}

/**
 * The conditions seen within the transition period (upstream nodeConditionsObservedSince): a pressure
 * condition stays until its signal has been fine for that long, so the node does not flap.
 */
export function nodeConditionsObservedSince(
  lastObservedAt: ReadonlyMap<PressureCondition, number>,
  periodMs: number,
  now: number,
): PressureCondition[] {
  return [...lastObservedAt].filter(([, at]) => now - at < periodMs).map(([c]) => c);
}

/**
 * The order thresholds are acted on (upstream byEvictionPriority): memory first, then the signals with
 * a resource to reclaim; the first threshold with a resource is the one reclaimed.
 */
export function byEvictionPriority(thresholds: readonly Threshold[]): Threshold[] {
  const rank = (t: Threshold) =>
    t.signal === 'memory.available' || t.signal === 'allocatableMemory.available'
      ? 0
      : signalToResource[t.signal]
        ? 1
        : 2;
  return [...thresholds].sort((a, b) => rank(a) - rank(b));
}

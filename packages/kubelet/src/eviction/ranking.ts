import type { Pod } from '@nodelet/api';
import type { PodStats } from '@nodelet/cri';
import { podRequests } from '../admission.js';

/**
 * Which pod goes first (upstream pkg/kubelet/eviction/helpers.go rank functions): each ranking is a list
 * of comparisons, the next one deciding only on a tie. A pod without stats goes first, as upstream.
 */
export type StatsOf = (pod: Pod) => PodStats | undefined;
type Cmp = (a: Pod, b: Pod) => number;

const orderedBy =
  (...cmps: Cmp[]): Cmp =>
  (a, b) => {
    for (const cmp of cmps) {
      const r = cmp(a, b);
      if (r !== 0) return r;
    }
    return 0;
  };

/** true before false. */
const cmpBool = (a: boolean, b: boolean): number => (a === b ? 0 : a ? -1 : 1);

/** Lower priority first (upstream priority). */
export const byPriority: Cmp = (a, b) => (a.spec?.priority ?? 0) - (b.spec?.priority ?? 0);

/** The pod's request of a resource, as the scheduler counts it (init containers, overhead). */
const request = (pod: Pod, resource: string): number => podRequests(pod).get(resource) ?? 0;

/** The pod's memory working set. */
export const memoryUsage = (stats: PodStats): number => stats.memory?.workingSetBytes ?? 0;

/** What the pod uses of a file system resource, in the parts a signal measures (upstream podDiskUsage). */
export type FsPart = 'root' | 'logs' | 'localVolumes';
export type DiskResource = 'ephemeral-storage' | 'inodes';

export function diskUsage(
  pod: Pod,
  stats: PodStats,
  parts: readonly FsPart[],
  resource: DiskResource,
): number {
  const field = resource === 'inodes' ? 'inodesUsed' : 'usedBytes';
  let total = 0;
  for (const c of stats.containers) {
    if (parts.includes('root')) total += c.rootfs?.[field] ?? 0;
    if (parts.includes('logs')) total += c.logs?.[field] ?? 0;
  }
  if (parts.includes('localVolumes')) {
    const local = new Set(localEphemeralVolumes(pod));
    for (const v of stats.volume ?? []) if (local.has(v.name)) total += v[field] ?? 0;
  }
  return total;
}

/** Volumes kept on the node's disk for the pod's life (upstream IsLocalEphemeralVolume). */
export function localEphemeralVolumes(pod: Pod): string[] {
  return (pod.spec?.volumes ?? [])
    .filter(
      (v) =>
        (v.emptyDir && v.emptyDir.medium !== 'Memory') ||
        v.configMap ||
        v.downwardAPI ||
        (v as { gitRepo?: unknown }).gitRepo,
    )
    .map((v) => v.name);
}

/** Pods whose usage is above their request first (upstream exceedMemoryRequests / exceedDiskRequests). */
const exceedsRequests =
  (stats: StatsOf, usage: (pod: Pod, s: PodStats) => number, resource: string): Cmp =>
  (a, b) => {
    const sa = stats(a);
    const sb = stats(b);
    if (!sa || !sb) return cmpBool(!sa, !sb);
    return cmpBool(usage(a, sa) > request(a, resource), usage(b, sb) > request(b, resource));
  };

/** The largest usage above request first (upstream memory / disk comparators). */
const usageAboveRequest =
  (stats: StatsOf, usage: (pod: Pod, s: PodStats) => number, resource: string): Cmp =>
  (a, b) => {
    const sa = stats(a);
    const sb = stats(b);
    if (!sa || !sb) return cmpBool(!sa, !sb);
    return usage(b, sb) - request(b, resource) - (usage(a, sa) - request(a, resource));
  };

/** Upstream rankMemoryPressure: exceeds requests, then priority, then usage above requests. */
export function rankMemoryPressure(pods: Pod[], stats: StatsOf): Pod[] {
  const usage = (_: Pod, s: PodStats) => memoryUsage(s);
  return [...pods].sort(
    orderedBy(exceedsRequests(stats, usage, 'memory'), byPriority, usageAboveRequest(stats, usage, 'memory')),
  );
}

/** Upstream rankPIDPressure: priority, then the most processes. */
export function rankPIDPressure(pods: Pod[], stats: StatsOf): Pod[] {
  const procs = (p: Pod) => stats(p)?.process_stats?.process_count ?? 0;
  return [...pods].sort(orderedBy(byPriority, (a, b) => procs(b) - procs(a)));
}

/**
 * Upstream rankDiskPressureFunc: exceeds its ephemeral-storage request, then priority, then the most
 * usage above request, usage counted in the parts the signal measures.
 */
export function rankDiskPressure(parts: readonly FsPart[], resource: DiskResource) {
  return (pods: Pod[], stats: StatsOf): Pod[] => {
    const usage = (pod: Pod, s: PodStats) => diskUsage(pod, s, parts, resource);
    // An inode count has no request: every pod "exceeds" zero alike.
    const requested = resource === 'inodes' ? 'inodes' : 'ephemeral-storage';
    return [...pods].sort(
      orderedBy(
        exceedsRequests(stats, usage, requested),
        byPriority,
        usageAboveRequest(stats, usage, requested),
      ),
    );
  };
}

export type RankFunc = (pods: Pod[], stats: StatsOf) => Pod[];

/**
 * The ranking of each signal (upstream buildSignalToRankFunc). With a separate image file system,
 * nodefs measures logs and local volumes and imagefs the containers' writable layers; on one file
 * system, every signal measures all three.
 */
export function rankFuncFor(signal: string, dedicatedImageFs: boolean): RankFunc | undefined {
  const all: FsPart[] = ['root', 'logs', 'localVolumes'];
  const nodefs: FsPart[] = dedicatedImageFs ? ['logs', 'localVolumes'] : all;
  const imagefs: FsPart[] = dedicatedImageFs ? ['root'] : all;
  switch (signal) {
    case 'memory.available':
    case 'allocatableMemory.available':
      return rankMemoryPressure;
    case 'pid.available':
      return rankPIDPressure;
    case 'nodefs.available':
      return rankDiskPressure(nodefs, 'ephemeral-storage');
    case 'nodefs.inodesFree':
      return rankDiskPressure(nodefs, 'inodes');
    case 'imagefs.available':
    case 'containerfs.available':
      return rankDiskPressure(imagefs, 'ephemeral-storage');
    case 'imagefs.inodesFree':
    case 'containerfs.inodesFree':
      return rankDiskPressure(imagefs, 'inodes');
    default:
      return undefined;
  }
}

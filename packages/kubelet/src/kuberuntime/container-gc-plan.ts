import { type Container, ContainerState, CriLabels, type PodSandbox, PodSandboxState } from '@nodelet/cri';
import type { ContainerGCPolicy } from './container-gc-policy.js';

/** What the kubelet knows of a pod, for garbage collection (upstream podStateProvider). */
export interface PodGCState {
  /**
   * Upstream ShouldPodContentBeRemoved: the pod is deleted and terminated (or was never known), so its
   * containers, sandboxes and logs may all go.
   */
  isDeleted(uid: string): boolean;
  /** Upstream ShouldPodRuntimeBeRemoved: the pod is terminated (or not known); nothing of it runs again. */
  isTerminated(uid: string): boolean;
}

export interface ContainerEvictionOptions {
  /** Whether every pod source has been seen: until then no pod counts as deleted. */
  allSourcesReady: boolean;
  /** Disk pressure: the containers of terminated pods go too, whatever the per-container limit. */
  evictTerminatedPods: boolean;
  nowMs: number;
}

export function containerPodUid(c: Container): string {
  return c.labels[CriLabels.PodUID] ?? '';
}

function containerName(c: Container): string {
  return c.labels[CriLabels.ContainerName] ?? c.metadata?.name ?? '';
}

/** Newest first: by creation time, then by attempt. */
function newestFirst<T extends { createdAt: bigint; metadata?: { attempt: number } | undefined }>(
  a: T,
  b: T,
) {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt ? -1 : 1;
  return (b.metadata?.attempt ?? 0) - (a.metadata?.attempt ?? 0);
}

/**
 * The dead containers to remove, oldest first within each step (upstream evictContainers): exited (or
 * created, or unknown) containers created at least `minAgeMs` ago, grouped by (pod UID, container name);
 * all of those of deleted pods (and, under disk pressure, of terminated ones) once every source is
 * seen; then the oldest beyond `maxPerPodContainer` in each group; then, beyond `maxContainers`, the
 * node-wide limit spread evenly over the groups (at least one each), then the oldest overall. A running
 * container is never removed, nor the newest container of a pod that still runs: its restart count and
 * last state come from it.
 */
export function containersToRemove(
  containers: readonly Container[],
  policy: ContainerGCPolicy,
  pods: PodGCState,
  options: ContainerEvictionOptions,
): Container[] {
  const kept = new Set<string>();
  const newestOfUnit = new Map<string, Container>();
  const units = new Map<string, Container[]>();
  const newestGCTimeNs = BigInt(Math.floor(options.nowMs - policy.minAgeMs)) * 1_000_000n;
  for (const c of containers) {
    const key = `${containerPodUid(c)}/${containerName(c)}`;
    const newest = newestOfUnit.get(key);
    if (!newest || newestFirst(c, newest) < 0) newestOfUnit.set(key, c);
    if (c.state === ContainerState.CONTAINER_RUNNING || c.createdAt > newestGCTimeNs) continue;
    const unit = units.get(key) ?? [];
    unit.push(c);
    units.set(key, unit);
  }
  for (const c of newestOfUnit.values()) if (!pods.isTerminated(containerPodUid(c))) kept.add(c.id);
  for (const unit of units.values()) unit.sort(newestFirst);

  const removed: Container[] = [];
  /** Removes the oldest `count` (all but the kept ones); returns what remains. */
  const removeOldest = (list: Container[], count: number): Container[] => {
    const numToKeep = list.length - count;
    for (let i = list.length - 1; i >= numToKeep; i--) if (!kept.has(list[i]!.id)) removed.push(list[i]!);
    return list.filter((c, i) => i < numToKeep || kept.has(c.id));
  };
  const enforcePerUnit = (max: number) => {
    for (const [key, unit] of units)
      if (unit.length > max) units.set(key, removeOldest(unit, unit.length - max));
  };
  const total = () => [...units.values()].reduce((n, unit) => n + unit.length, 0);

  if (options.allSourcesReady) {
    for (const [key, unit] of units) {
      const uid = containerPodUid(unit[0]!);
      if (pods.isDeleted(uid) || (options.evictTerminatedPods && pods.isTerminated(uid))) {
        removeOldest(unit, unit.length);
        units.delete(key);
      }
    }
  }
  if (policy.maxPerPodContainer >= 0) enforcePerUnit(policy.maxPerPodContainer);
  if (policy.maxContainers >= 0 && total() > policy.maxContainers) {
    enforcePerUnit(Math.max(1, Math.floor(policy.maxContainers / units.size)));
    const left = total();
    if (left > policy.maxContainers) {
      removeOldest([...units.values()].flat().sort(newestFirst), left - policy.maxContainers);
    }
  }
  return removed;
}

/**
 * The sandboxes to remove (upstream evictSandboxes): of each pod, every sandbox but the newest — all of
 * them when the pod is deleted (or terminated, under disk pressure) — that is not ready and holds no
 * container.
 */
export function sandboxesToRemove(
  sandboxes: readonly PodSandbox[],
  containers: readonly Container[],
  pods: PodGCState,
  evictTerminatedPods: boolean,
): PodSandbox[] {
  const withContainers = new Set(containers.map((c) => c.podSandboxId));
  const byPod = new Map<string, PodSandbox[]>();
  for (const sb of sandboxes) {
    const uid = sb.labels[CriLabels.PodUID] ?? sb.metadata?.uid ?? '';
    byPod.set(uid, [...(byPod.get(uid) ?? []), sb]);
  }
  const removed: PodSandbox[] = [];
  for (const [uid, list] of byPod) {
    list.sort(newestFirst);
    const all = pods.isDeleted(uid) || (evictTerminatedPods && pods.isTerminated(uid));
    for (const sb of list.slice(all ? 0 : 1).reverse()) {
      const active = sb.state === PodSandboxState.SANDBOX_READY || withContainers.has(sb.id);
      if (!active) removed.push(sb);
    }
  }
  return removed;
}

/** The pod UID of a pod log directory: `<namespace>_<name>_<uid>` (or a bare UID, as before 1.14). */
export function podUidOfLogDirectory(name: string): string {
  return name.slice(name.lastIndexOf('_') + 1);
}

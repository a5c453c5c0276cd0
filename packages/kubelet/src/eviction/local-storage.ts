import { type Pod, quantityValue } from '@nodelet/api';
import type { PodStats } from '@nodelet/cri';
import { formatBinaryQuantity } from './message.js';
import { diskUsage, type FsPart } from './ranking.js';

/**
 * Local storage limits (upstream localStorageEviction, with LocalStorageCapacityIsolation on): a pod
 * that outgrows what it asked for is evicted whatever the node's pressure, before any threshold is
 * looked at — an emptyDir above its `sizeLimit`, the pod above the sum of its containers'
 * `limits.ephemeral-storage`, or one container above its own limit.
 */
export interface LocalStorageViolation {
  /** Upstream's metric label of the limit: emptydirfs.limit, ephemeralpodfs.limit, ephemeralcontainerfs.limit. */
  signal: string;
  message: string;
}

/** Whether any pod asks for a limit this checks (else no volume needs measuring). */
export function hasLocalStorageLimits(pod: Pod): boolean {
  return (
    (pod.spec?.volumes ?? []).some((v) => v.emptyDir?.sizeLimit !== undefined) ||
    (pod.spec?.containers ?? []).some((c) => c.resources?.limits?.['ephemeral-storage'] !== undefined)
  );
}

/** The first limit the pod exceeds, in upstream's order, or undefined. */
export function localStorageViolation(
  pod: Pod,
  stats: PodStats,
  dedicatedImageFs: boolean,
): LocalStorageViolation | undefined {
  return (
    emptyDirOverLimit(pod, stats) ??
    podOverLimit(pod, stats, dedicatedImageFs) ??
    containerOverLimit(pod, stats, dedicatedImageFs)
  );
}

function emptyDirOverLimit(pod: Pod, stats: PodStats): LocalStorageViolation | undefined {
  for (const v of pod.spec?.volumes ?? []) {
    const limit = v.emptyDir?.sizeLimit;
    if (limit === undefined || quantityValue(limit) <= 0) continue;
    const used = stats.volume?.find((s) => s.name === v.name)?.usedBytes;
    if (used !== undefined && used > quantityValue(limit)) {
      return {
        signal: 'emptydirfs.limit',
        message: `Usage of EmptyDir volume "${v.name}" exceeds the limit "${limit}". `,
      };
    }
  }
  return undefined;
}

/** Everything the pod writes on the node's file system: logs, local volumes, and its layers when there. */
function podOverLimit(
  pod: Pod,
  stats: PodStats,
  dedicatedImageFs: boolean,
): LocalStorageViolation | undefined {
  const limits = (pod.spec?.containers ?? [])
    .map((c) => c.resources?.limits?.['ephemeral-storage'])
    .filter((l): l is string => l !== undefined);
  if (limits.length === 0) return undefined;
  const limit = limits.reduce((sum, l) => sum + quantityValue(l), 0);
  const parts: FsPart[] = dedicatedImageFs ? ['logs', 'localVolumes'] : ['root', 'logs', 'localVolumes'];
  if (diskUsage(pod, stats, parts, 'ephemeral-storage') <= limit) return undefined;
  const text = limits.length === 1 ? limits[0]! : formatBinaryQuantity(limit);
  return {
    signal: 'ephemeralpodfs.limit',
    message: `Pod ephemeral local storage usage exceeds the total limit of containers ${text}. `,
  };
}

/** A container's logs, and its writable layer when that is on the node's file system. */
function containerOverLimit(
  pod: Pod,
  stats: PodStats,
  dedicatedImageFs: boolean,
): LocalStorageViolation | undefined {
  for (const c of stats.containers) {
    const limit = pod.spec?.containers.find((x) => x.name === c.name)?.resources?.limits?.[
      'ephemeral-storage'
    ];
    if (limit === undefined || quantityValue(limit) === 0) continue;
    const used = (c.logs?.usedBytes ?? 0) + (dedicatedImageFs ? 0 : (c.rootfs?.usedBytes ?? 0));
    if (used > quantityValue(limit)) {
      return {
        signal: 'ephemeralcontainerfs.limit',
        message: `Container ${c.name} exceeded its local ephemeral storage limit "${limit}". `,
      };
    }
  }
  return undefined;
}

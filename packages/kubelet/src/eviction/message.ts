import type { Pod } from '@nodelet/api';
import { quantityValue } from '@nodelet/api';
import type { PodStats } from '@nodelet/cri';
import type { Observations } from './signals.js';
import { signalToResource } from './signals.js';
import { type Threshold, thresholdQuantity } from './thresholds.js';

/** Upstream's reason of an evicted pod's status, its event and a refused admission. */
export const EVICTED_REASON = 'Evicted';

/**
 * A byte or count amount as upstream prints a binary-SI quantity: `400Mi` when a whole number of a
 * power of 1024, else the plain number.
 */
export function formatBinaryQuantity(n: number): string {
  let value = Math.trunc(n);
  if (Math.abs(value) < 1024) return String(value);
  const suffixes = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
  let i = 0;
  while (i < suffixes.length - 1 && value % 1024 === 0 && value !== 0) {
    value /= 1024;
    i++;
  }
  return `${value}${suffixes[i]}`;
}

/**
 * The message of an eviction (upstream evictionMessage): the resource, the threshold and what was
 * available, then each container using more than it requested.
 */
export function evictionMessage(
  threshold: Threshold,
  pod: Pod,
  stats: PodStats | undefined,
  observations: Observations,
): string {
  const resource = signalToResource[threshold.signal] ?? threshold.signal;
  let message = `The node was low on resource: ${resource}. `;
  const seen = observations.get(threshold.signal);
  if (seen) {
    const quantity =
      threshold.value.text ?? formatBinaryQuantity(thresholdQuantity(threshold.value, seen.capacity));
    message += `Threshold quantity: ${quantity}, available: ${formatBinaryQuantity(seen.available)}. `;
  }
  if (!stats) return message;
  for (const c of stats.containers) {
    const container = pod.spec?.containers.find((x) => x.name === c.name);
    if (!container) continue;
    const requested = container.resources?.requests?.[resource];
    let usage: number | undefined;
    if (resource === 'memory') usage = c.memory?.workingSetBytes;
    else if (
      resource === 'ephemeral-storage' &&
      c.rootfs?.usedBytes !== undefined &&
      c.logs?.usedBytes !== undefined
    )
      usage = c.rootfs.usedBytes + c.logs.usedBytes;
    if (usage === undefined) continue;
    const request = requested === undefined ? 0 : quantityValue(requested);
    if (usage > request) {
      message += `Container ${c.name} was using ${formatBinaryQuantity(usage)}, request is ${requested ?? '0'}, has larger consumption of ${resource}. `;
    }
  }
  return message;
}

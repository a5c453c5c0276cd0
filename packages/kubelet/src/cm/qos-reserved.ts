import type { Pod } from '@nodelet/api';
import { qosClass } from '../pod-status.js';
import { memoryRequestsOf } from './pod-resource-config.js';

/**
 * `qosReserved` (upstream's QOSReserved, an alpha feature there; qos_container_manager_linux.go
 * setMemoryReserve): a share of the memory requested by the pods of a higher QoS class is kept out of
 * reach of the lower ones, by memory limits on the QoS cgroups —
 *
 *   burstable   allocatable − percent × (memory requests of the Guaranteed pods)
 *   besteffort  burstable's limit − percent × (memory requests of the Burstable pods)
 *
 * recomputed as pods come and go. Allocatable here is what kubepods is given: capacity less
 * systemReserved and kubeReserved (the eviction thresholds are not a cgroup limit).
 */
export interface QosReserved {
  /** Percent, 0 to 100. */
  memory?: number;
}

/** The field as upstream parses it (ParseQOSReserved): only memory, as a whole percentage. */
export function parseQosReserved(map: Record<string, string>, field: string): QosReserved {
  const out: QosReserved = {};
  for (const [resource, value] of Object.entries(map)) {
    if (resource !== 'memory') {
      throw new Error(`field "${field}": cannot reserve "${resource}" resource (only memory)`);
    }
    const percent = /^(-?\d+)%$/.exec(value.trim());
    if (!percent) throw new Error(`field "${field}.${resource}": percentage expected, got "${value}"`);
    const n = Number(percent[1]);
    if (n < 0 || n > 100) {
      throw new Error(`field "${field}.${resource}": percentage must be between 0 and 100, got "${value}"`);
    }
    out.memory = n;
  }
  return out;
}

/**
 * The QoS cgroups' memory limits in bytes for these pods; none when allocatable memory is not known
 * (upstream leaves the limits alone then).
 */
export function qosMemoryLimits(
  pods: readonly Pod[],
  allocatableMemory: number,
  percent: number,
): { burstable: number; bestEffort: number } | undefined {
  if (!(allocatableMemory > 0)) return undefined;
  const requested = (qos: string) => memoryRequestsOf(pods.filter((p) => qosClass(p) === qos));
  // Integer arithmetic as upstream's int64: the share of each sum is truncated.
  const burstable = allocatableMemory - Math.floor((requested('Guaranteed') * percent) / 100);
  const bestEffort = burstable - Math.floor((requested('Burstable') * percent) / 100);
  return { burstable, bestEffort };
}

import { quantityValue } from '@nodelet/api';
import { type EvictionThreshold, parseEvictionThresholds } from './cm/node-allocatable.js';
import { parseDuration } from './duration.js';
import { evictionConfig, type EvictionSettings } from './eviction/thresholds.js';
import { parseQosReserved, type QosReserved } from './cm/qos-reserved.js';
import { DEFAULT_IMAGE_GC_POLICY, type ImageGCPolicy, validateImageGCPolicy } from './images/image-gc.js';
import { bool, int, type Reader, str, stringMap } from './kubelet-config-fields.js';

/**
 * The KubeletConfiguration fields of the node's resources: what is reserved from pods, eviction, image
 * garbage collection, and the cgroups pods run in.
 */
export interface KubeletResourceValues {
  /** Resources held back for the OS and for the kubelet and runtime (node allocatable). */
  systemReserved?: Record<string, string>;
  kubeReserved?: Record<string, string>;
  /** Hard eviction thresholds; given, they replace upstream's defaults (as upstream). */
  evictionHard?: EvictionThreshold[];
  /** The eviction manager's settings (`evictionHard`, `evictionSoft`, grace periods, minimum reclaim, …). */
  eviction?: EvictionSettings;
  /** `imageGCHighThresholdPercent`, `imageGCLowThresholdPercent`, `imageMinimumGCAge`, `imageMaximumGCAge`. */
  imageGC?: Partial<ImageGCPolicy>;
  /** The kubepods / QoS / pod cgroups (default true on a real runtime). */
  cgroupsPerQOS?: boolean;
  cgroupDriver?: 'cgroupfs' | 'systemd';
  /** Where kubepods goes (default `/`). */
  cgroupRoot?: string;
  /** `pods` limits kubepods to node allocatable (default [pods]); `none` enforces nothing. */
  enforceNodeAllocatable?: string[];
  podPidsLimit?: number;
  cpuCFSQuota?: boolean;
  /** Memory of the higher QoS classes kept from the lower ones, in percent of their requests. */
  qosReserved?: QosReserved;
  /** The kubelet's own oom_score_adj (upstream's default -999). */
  oomScoreAdj?: number;
}

export const resourceReaders: Record<string, Reader> = {
  systemReserved: (v, f, o) => (o.systemReserved = reservedResources(v, f)),
  kubeReserved: (v, f, o) => (o.kubeReserved = reservedResources(v, f)),
  evictionHard: (v, f, o) => {
    o.evictionHard = parseEvictionThresholds(stringMap(v, f), f);
    (o.eviction ??= {}).evictionHard = stringMap(v, f);
  },
  evictionSoft: (v, f, o) => ((o.eviction ??= {}).evictionSoft = stringMap(v, f)),
  evictionSoftGracePeriod: (v, f, o) => {
    const ms: Record<string, number> = {};
    for (const [signal, d] of Object.entries(stringMap(v, f)))
      ms[signal] = parseDuration(d, `${f}.${signal}`);
    (o.eviction ??= {}).evictionSoftGracePeriod = ms;
  },
  evictionMinimumReclaim: (v, f, o) => ((o.eviction ??= {}).evictionMinimumReclaim = stringMap(v, f)),
  evictionMaxPodGracePeriod: (v, f, o) =>
    ((o.eviction ??= {}).evictionMaxPodGracePeriod = int(f, v, 0, 2 ** 31 - 1)),
  evictionPressureTransitionPeriod: (v, f, o) =>
    ((o.eviction ??= {}).evictionPressureTransitionPeriodMs = parseDuration(str(f, v), f)),
  imageGCHighThresholdPercent: (v, f, o) => ((o.imageGC ??= {}).highThresholdPercent = int(f, v, 0, 100)),
  imageGCLowThresholdPercent: (v, f, o) => ((o.imageGC ??= {}).lowThresholdPercent = int(f, v, 0, 100)),
  imageMinimumGCAge: (v, f, o) => ((o.imageGC ??= {}).minAgeMs = parseDuration(str(f, v), f)),
  imageMaximumGCAge: (v, f, o) => ((o.imageGC ??= {}).maxAgeMs = parseDuration(str(f, v), f)),
  cgroupsPerQOS: (v, f, o) => (o.cgroupsPerQOS = bool(f, v)),
  cgroupDriver: (v, f, o) => {
    const driver = str(f, v);
    if (driver !== 'cgroupfs' && driver !== 'systemd')
      throw new Error(
        `field "${f}" must be cgroupfs or systemd, as the container runtime's; got "${driver}"`,
      );
    o.cgroupDriver = driver;
  },
  cgroupRoot: (v, f, o) => {
    const root = str(f, v);
    if (!root.startsWith('/')) throw new Error(`field "${f}" must be an absolute cgroup path such as "/"`);
    o.cgroupRoot = root;
  },
  enforceNodeAllocatable: (v, f, o) => (o.enforceNodeAllocatable = enforcement(v, f)),
  podPidsLimit: (v, f, o) => (o.podPidsLimit = int(f, v, -1, 4_194_304)),
  cpuCFSQuota: (v, f, o) => (o.cpuCFSQuota = bool(f, v)),
  oomScoreAdj: (v, f, o) => (o.oomScoreAdj = int(f, v, -1000, 1000)),
  qosReserved: (v, f, o) => (o.qosReserved = parseQosReserved(stringMap(v, f), f)),
};

/** Checks the settings that hold together (soft thresholds and their grace periods, GC thresholds). */
export function validateResourceValues(out: KubeletResourceValues): void {
  if (out.eviction) evictionConfig(out.eviction);
  if (out.imageGC) validateImageGCPolicy({ ...DEFAULT_IMAGE_GC_POLICY, ...out.imageGC });
}

/**
 * `enforceNodeAllocatable` (upstream's validation): `pods`, `system-reserved`, `kube-reserved`, or
 * `none` alone. Only `pods` is enforced by nodelet: the other two need their own cgroups
 * (`systemReservedCgroup`, `kubeReservedCgroup`), which it does not manage yet.
 */
function enforcement(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
    throw new Error(`field "${field}" must be a list such as [pods]`);
  const list = v as string[];
  for (const key of list) {
    if (key === 'system-reserved' || key === 'kube-reserved') {
      throw new Error(
        `field "${field}": "${key}" needs ${key === 'system-reserved' ? 'systemReservedCgroup' : 'kubeReservedCgroup'}, which nodelet does not manage yet; use [pods]`,
      );
    }
    if (key !== 'pods' && key !== 'none')
      throw new Error(
        `field "${field}": unknown option "${key}" (pods, system-reserved, kube-reserved or none)`,
      );
  }
  if (list.includes('none') && list.length > 1)
    throw new Error(`field "${field}": "none" cannot be combined with other options`);
  return list.filter((k) => k !== 'none');
}

/** `systemReserved`/`kubeReserved`: cpu, memory, ephemeral-storage and pid, each a valid quantity. */
function reservedResources(v: unknown, field: string): Record<string, string> {
  const map = stringMap(v, field);
  for (const [resource, q] of Object.entries(map)) {
    if (!['cpu', 'memory', 'ephemeral-storage', 'pid'].includes(resource)) {
      throw new Error(
        `field "${field}": "${resource}" cannot be reserved (cpu, memory, ephemeral-storage or pid)`,
      );
    }
    try {
      if (quantityValue(q) < 0) throw new Error('negative');
    } catch {
      throw new Error(`field "${field}.${resource}": "${q}" is not a non-negative quantity`);
    }
  }
  return map;
}

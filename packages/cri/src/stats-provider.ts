/**
 * The `stats.provider` capability: resource usage of the node, its pods and their containers, in the
 * shape of the kubelet's Summary API (k8s.io/kubelet/pkg/apis/stats/v1alpha1). The kubelet's
 * `/stats/summary`, `/metrics/resource` and `/metrics/cadvisor` and the eviction manager read it.
 *
 * Field names are upstream's JSON names; times are RFC 3339 strings; byte and nanosecond counts are
 * numbers (exact to 2^53: 104 days of one core in nanoseconds per container is far below that).
 *
 * Providers: from the CRI stats calls plus cgroups (v1 or v2) and file systems on a real host; the
 * fake runtime's simulated usage on a simulated node. A runtime plugin may provide its own.
 */
import { defineCapability } from '@nodelet/kernel';

export interface CpuStats {
  time: string;
  /** Instantaneous usage averaged over the last sample window, in billionths of a core. */
  usageNanoCores?: number;
  /** Cumulative CPU time since the object was created, in nanoseconds. */
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  /** Usage minus inactive file pages: what the OOM killer and eviction look at. */
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface InterfaceStats {
  name: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

export interface NetworkStats extends Partial<InterfaceStats> {
  time: string;
  interfaces?: InterfaceStats[];
}

export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface RlimitStats {
  time: string;
  maxpid?: number;
  curproc?: number;
}

export interface ContainerSummaryStats {
  name: string;
  startTime: string;
  cpu?: CpuStats;
  memory?: MemoryStats;
  rootfs?: FsStats;
  logs?: FsStats;
}

export interface PodReference {
  name: string;
  namespace: string;
  uid: string;
}

export interface VolumeStats extends FsStats {
  name: string;
  pvcRef?: { name: string; namespace: string };
}

export interface PodStats {
  podRef: PodReference;
  startTime: string;
  containers: ContainerSummaryStats[];
  cpu?: CpuStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  volume?: VolumeStats[];
  'ephemeral-storage'?: FsStats;
  process_stats?: { process_count?: number };
}

export interface NodeStats {
  nodeName: string;
  /** The node's system containers: `kubelet`, `runtime`, `pods`, `misc`. */
  systemContainers?: ContainerSummaryStats[];
  startTime: string;
  cpu?: CpuStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  fs?: FsStats;
  runtime?: { imageFs?: FsStats; containerFs?: FsStats };
  rlimit?: RlimitStats;
}

/** The Summary API's answer. */
export interface Summary {
  node: NodeStats;
  pods: PodStats[];
}

/**
 * What the runtime knows of a container beyond the Summary API: its id and image, which the cAdvisor
 * series label (`id`, `image`, `name`). Keyed by pod UID and container name.
 */
export interface ContainerIdentity {
  id: string;
  image: string;
}

export interface StatsSnapshot extends Summary {
  /** `podUid/containerName` → identity, for the containers in `pods`. */
  containerIdentities: ReadonlyMap<string, ContainerIdentity>;
}

export interface StatsProvider {
  /**
   * One consistent reading of the node and every running pod. Fails (rejects) only when nothing can
   * be read; a part that cannot be read is left out, as upstream leaves a field nil.
   */
  snapshot(): Promise<StatsSnapshot>;
  /**
   * Whether the images (and writable layers) are on a file system of their own, not the node's (upstream
   * HasDedicatedImageFs: the two devices differ). It decides what disk pressure on the node's file system
   * can reclaim and which usage ranks pods. Absent: one file system for both.
   */
  hasDedicatedImageFs?(): Promise<boolean>;
}

export const StatsProviderCapability = defineCapability<StatsProvider>('stats.provider', {
  version: 1,
  description: 'resource usage of the node, pods and containers (cgroups + CRI, or simulated)',
});

/** The key of `containerIdentities`. */
export function containerKey(podUid: string, container: string): string {
  return `${podUid}/${container}`;
}

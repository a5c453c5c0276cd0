import type { ImageService, RuntimeService, StatsProvider } from '@nodelet/cri';
import type { Clock, EventBus, Logger } from '@nodelet/kernel';
import type { PodObjects, VolumePlugin } from '@nodelet/volume';
import type { ApiServerOptions } from './apiserver/index.js';
import type { ReservationConfig } from './cm/node-allocatable.js';
import type { CgroupsConfig } from './cm/container-manager.js';
import { FileSource, type PodSource, UrlSource } from './config/index.js';
import type { EvictionSettings } from './eviction/index.js';
import type { ImageGCPolicy } from './images/image-gc.js';
import type { ContainerGCPolicy } from './kuberuntime/index.js';
import type { PodNetworkSettings } from './network/index.js';
import type { ProbeVerdicts } from './pod-actions.js';
import type { ProbeHandler } from './prober/index.js';
import type { Mounter } from './volume/index.js';

// What a kubelet is made with: its settings (upstream's KubeletConfiguration and flags, as options), the
// parts it is given, and the pod sources the settings name.

export interface KubeletOptions extends PodNetworkSettings {
  nodeName: string;
  hostIP: string;
  /** Kubelet root directory (`rootDirectory`): volumes live under `<root>/pods/<uid>`. */
  rootDir: string;
  /** Pod log root (`podLogsDir`, upstream /var/log/pods). */
  podLogsDir: string;
  podManifestPath?: string;
  manifestUrl?: string;
  manifestUrlHeaders?: Record<string, string>;
  fileCheckFrequencyMs?: number;
  httpCheckFrequencyMs?: number;
  /** Periodic resync of every pod (upstream syncFrequency, 1 min). */
  syncFrequencyMs?: number;
  housekeepingPeriodMs?: number;
  plegRelistPeriodMs?: number;
  memoryCapacityBytes?: number;
  /** Pods this node runs at most (`maxPods`, 110), when no API server connection says it. */
  maxPods?: number;
  /** Extra sources (tests, embedders). */
  sources?: PodSource[];
  /**
   * Mount a tmpfs for memory-backed volumes (emptyDir `medium: Memory`, secret, projected); default:
   * when running as root on Linux. A simulated node (the fake runtime) has no use for host mounts.
   */
  tmpfsVolumes?: boolean;
  /** Join a cluster: register the node, run its API pods, report status (`--kubeconfig`). */
  apiServer?: ApiServerOptions;
  /**
   * What node allocatable holds back from pods: `systemReserved`, `kubeReserved` and the hard eviction
   * thresholds (`evictionHard`; default: upstream's). A reservation above capacity stops the kubelet.
   */
  reservation?: ReservationConfig;
  /**
   * `cgroupsPerQOS`: the kubepods / QoS / pod cgroup hierarchy on this host, each pod's cgroup the
   * sandbox's cgroup parent. Absent: no cgroups of the kubelet's own (simulated nodes, cgroupsPerQOS false).
   */
  cgroups?: CgroupsConfig;
  /** The kubelet process's own oom_score_adj, set at start (`oomScoreAdj`); absent: left as it is. */
  oomScoreAdj?: number;
  /** RuntimeDefault seccomp for containers that ask for no profile (`seccompDefault`, default off). */
  seccompDefault?: boolean;
  /** Unsafe sysctls pods may set (`allowedUnsafeSysctls`; `prefix*` patterns); namespaced ones only. */
  allowedUnsafeSysctls?: string[];
  /**
   * The eviction manager's thresholds (`evictionHard`, `evictionSoft`, …; default: upstream's hard
   * ones). It runs when the kubelet has a stats provider.
   */
  eviction?: EvictionSettings;
  /** How often the eviction manager synchronizes (upstream's housekeeping interval, 10 s). */
  evictionMonitoringPeriodMs?: number;
  /** `imageGCHighThresholdPercent`, `imageGCLowThresholdPercent`, `imageMinimumGCAge`, `imageMaximumGCAge`. */
  imageGC?: Partial<ImageGCPolicy>;
  /** Dead containers kept (`--maximum-dead-containers`, …) and how often they are collected (1 min). */
  containerGC?: Partial<ContainerGCPolicy> & { periodMs?: number };
}

export interface KubeletDeps {
  runtime: RuntimeService;
  images: ImageService;
  bus: EventBus;
  clock: Clock;
  logger: Logger;
  /** Overrides the prober manager's verdicts in syncPod (tests). */
  probes?: ProbeVerdicts;
  /** Probe handlers besides the built-in ones (the `probe.handler` capability's providers). */
  probeHandlers?: ProbeHandler[];
  /** Volume plugins besides the built-in ones (the `volume.plugin` capability's providers). */
  volumePlugins?: VolumePlugin[];
  /** The API objects pods reference (default: from the API server when joined, else none). */
  objects?: PodObjects;
  /** mount(8)/umount(8) of tmpfs volumes (default: the host's, when running as root on Linux). */
  mounter?: Mounter;
  /**
   * Usage of the node, its pods and containers (the `stats.provider`): with it, the eviction manager and
   * image garbage collection run.
   */
  stats?: StatsProvider;
}

/** The file and URL sources the options name, then the extra ones. */
export function podSources(options: KubeletOptions, deps: KubeletDeps, logger: Logger): PodSource[] {
  const { clock, bus } = deps;
  const sources: PodSource[] = [];
  if (options.podManifestPath) {
    sources.push(
      new FileSource({
        path: options.podManifestPath,
        nodeName: options.nodeName,
        clock,
        logger: logger.child('file-source'),
        bus,
        fileCheckFrequencyMs: options.fileCheckFrequencyMs,
      }),
    );
  }
  if (options.manifestUrl) {
    sources.push(
      new UrlSource({
        url: options.manifestUrl,
        headers: options.manifestUrlHeaders,
        nodeName: options.nodeName,
        clock,
        logger: logger.child('url-source'),
        bus,
        checkFrequencyMs: options.httpCheckFrequencyMs,
      }),
    );
  }
  sources.push(...(options.sources ?? []));
  return sources;
}

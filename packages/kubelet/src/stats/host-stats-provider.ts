/**
 * The stats provider of a kubelet on a real host and runtime: CRI stats for pods and containers, the
 * root cgroup for the node, statfs for nodefs, ImageFsInfo for imagefs, the sandbox's netns for a pod
 * network the runtime does not report, and the kubelet's own cgroup as a system container.
 */
import type { Clock } from '@nodelet/kernel';
import type { ImageService, RuntimeService } from '@nodelet/cri';
import { CriStatsProvider } from '@nodelet/cri';
import { NODE_NAME_LABEL } from '../kuberuntime/sandbox.js';
import { hostNodeReader } from './host-node-reader.js';
import {
  containerLogsUsage,
  fsStatsOf,
  hasDedicatedImageFs,
  hostRlimit,
  imageFsStats,
  kubeletSystemContainer,
  sandboxNetDev,
} from './host-stats.js';

export interface HostStatsOptions {
  nodeName: string;
  clock: Clock;
  /** The kubelet's root directory (nodefs is the file system that holds it). */
  rootDir: string;
  /** Where container logs are (upstream /var/log/pods). */
  podLogsDir?: string;
  cgroupRoot?: string;
  procRoot?: string;
}

export function hostStatsProvider(
  runtime: RuntimeService,
  images: ImageService,
  options: HostStatsOptions,
): CriStatsProvider {
  const startMs = options.clock.now();
  return new CriStatsProvider(runtime, {
    nodeName: options.nodeName,
    clock: options.clock,
    readNode: hostNodeReader(options.cgroupRoot, options.procRoot),
    nodeFs: (nowMs) => fsStatsOf(options.rootDir, nowMs),
    imageFs: (nowMs) => imageFsStats(images, nowMs),
    dedicatedImageFs: () => hasDedicatedImageFs(images, options.rootDir),
    rlimit: (nowMs) => hostRlimit(nowMs, options.procRoot),
    // Another kubelet's pods on a shared runtime are not this node's (unlabelled ones are).
    ownsSandbox: (labels) => (labels[NODE_NAME_LABEL] ?? options.nodeName) === options.nodeName,
    sandboxNetDev: sandboxNetDev(runtime, options.procRoot),
    logsUsage: containerLogsUsage(options.podLogsDir ?? '/var/log/pods'),
    systemContainers: async (nowMs) => {
      const kubelet = await kubeletSystemContainer(startMs, nowMs, options.cgroupRoot);
      return kubelet ? [kubelet] : [];
    },
  });
}

/**
 * Everything the kubelet's metrics and stats endpoints need, composed in one call for the kubelet
 * plugin: the per-kubelet metrics (observing the bus), the runtime and image services wrapped for the
 * runtime operation metrics (give these to the Kubelet), the stats provider (a plugin's `stats.provider`
 * when there is one — the fake runtime's simulated usage — else the host's cgroups and file systems),
 * and the route list to mount on the server.
 */
import type { ImageService, RuntimeService, StatsProvider } from '@nodelet/cri';
import type { Clock, EventBus } from '@nodelet/kernel';
import { hostStatsProvider } from '../stats/host-stats-provider.js';
import { kubeletMetricsRoutes, type MetricsRoute, withNodeName } from './handlers.js';
import { instrumentRuntime } from './instrumented-runtime.js';
import { KubeletMetrics } from './kubelet-metrics.js';

export interface KubeletObservabilityDeps {
  bus: EventBus;
  clock: Clock;
  runtime: RuntimeService;
  images: ImageService;
  /** A provided `stats.provider`, if any. */
  stats?: StatsProvider;
}

export interface KubeletObservabilityOptions {
  nodeName: string;
  rootDir: string;
  /** Where container logs are (upstream /var/log/pods). */
  podLogsDir?: string;
  /** Pod name and namespace by UID (the kubelet's pod manager), for the probe series. */
  podRef?: (uid: string) => { name: string; namespace: string } | undefined;
}

export interface KubeletObservability {
  metrics: KubeletMetrics;
  runtime: RuntimeService;
  images: ImageService;
  stats: StatsProvider;
  routes: MetricsRoute[];
  stop(): void;
}

export function createKubeletObservability(
  deps: KubeletObservabilityDeps,
  options: KubeletObservabilityOptions,
): KubeletObservability {
  const metrics = new KubeletMetrics(deps.bus, {
    nodeName: options.nodeName,
    ...(options.podRef ? { podRef: options.podRef } : {}),
  });
  const stats = withNodeName(
    deps.stats ??
      hostStatsProvider(deps.runtime, deps.images, {
        nodeName: options.nodeName,
        clock: deps.clock,
        rootDir: options.rootDir,
        ...(options.podLogsDir ? { podLogsDir: options.podLogsDir } : {}),
      }),
    options.nodeName,
  );
  return {
    metrics,
    runtime: instrumentRuntime(deps.runtime, metrics, deps.clock),
    images: instrumentRuntime(deps.images, metrics, deps.clock),
    stats,
    routes: kubeletMetricsRoutes(metrics, stats),
    stop: () => metrics.stop(),
  };
}

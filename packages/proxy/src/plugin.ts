import { defineCapability, definePlugin } from '@nodelet/kernel';
import { ProxyBackendCapability } from './backend.js';
import { FileSource } from './file-source.js';
import { Proxier } from './proxier.js';
import { type ProxySource, ProxySourceCapability } from './source.js';
import { defaultNodeContext, type NodeContext } from './state.js';

/** The running proxy, for the host program (CLI, tests, embedders). */
export const ProxyCapability = defineCapability<Proxier>('proxy', {
  version: 1,
  description: 'Services and EndpointSlices to node rules',
});

export interface ProxyPluginConfig {
  nodeName: string;
  nodeIPs?: string[];
  topologyLabels?: Record<string, string>;
  clusterCIDR?: string;
  masqueradeAll?: boolean;
  masqueradeBit?: number;
  nodePortAddresses?: string[];
  minSyncPeriodMs?: number;
  syncPeriodMs?: number;
  fullSyncPeriodMs?: number;
  healthzBindAddress?: string;
  /** `host:port` of /metrics; '' or absent: off (the CLI passes upstream's 127.0.0.1:10249). */
  metricsBindAddress?: string;
  /** Services and EndpointSlices from this file or directory, when no `proxy.source` plugin is loaded. */
  services?: string;
  /** Re-read period of `services`. */
  servicesRecheckMs?: number;
}

export const proxyConfigSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['nodeName'],
  properties: {
    nodeName: { type: 'string', minLength: 1 },
    nodeIPs: { type: 'array', items: { type: 'string' } },
    topologyLabels: { type: 'object', additionalProperties: { type: 'string' } },
    clusterCIDR: { type: 'string' },
    masqueradeAll: { type: 'boolean' },
    masqueradeBit: { type: 'integer', minimum: 0, maximum: 31 },
    nodePortAddresses: { type: 'array', items: { type: 'string' } },
    minSyncPeriodMs: { type: 'integer', minimum: 0 },
    syncPeriodMs: { type: 'integer', minimum: 1 },
    fullSyncPeriodMs: { type: 'integer', minimum: 1 },
    healthzBindAddress: { type: 'string' },
    metricsBindAddress: { type: 'string' },
    services: { type: 'string', minLength: 1 },
    servicesRecheckMs: { type: 'integer', minimum: 1 },
  },
} as const;

export function nodeContextFrom(config: ProxyPluginConfig): NodeContext {
  const d = defaultNodeContext(config.nodeName);
  return {
    ...d,
    nodeIPs: config.nodeIPs ?? [],
    topologyLabels: config.topologyLabels ?? {},
    clusterCIDR: config.clusterCIDR ?? '',
    masqueradeAll: config.masqueradeAll ?? false,
    masqueradeBit: config.masqueradeBit ?? d.masqueradeBit,
    nodePortAddresses: config.nodePortAddresses ?? [],
  };
}

/**
 * The proxy as a kernel plugin: requires a `proxy.backend` (chosen by `proxy.mode`), uses a
 * `proxy.source` when one is loaded (`apiSourcePlugin`: the API watch) and otherwise reads `services`
 * files; provides
 * `proxy` (the running Proxier). Stopping the plugin leaves the kernel rules in force, as upstream.
 */
export const proxyPlugin = definePlugin<ProxyPluginConfig>({
  manifest: {
    name: 'proxy',
    version: '0.1.0',
    description: 'programs Services and EndpointSlices into the node through a proxy.backend',
    provides: [ProxyCapability],
    requires: [ProxyBackendCapability],
    optional: [ProxySourceCapability],
    configSchema: proxyConfigSchema,
  },
  register(ctx) {
    const config = ctx.config;
    let source: ProxySource | undefined = ctx.getOptional(ProxySourceCapability);
    if (!source && config.services) {
      source = new FileSource({
        path: config.services,
        clock: ctx.clock,
        logger: ctx.logger.child('file-source'),
        ...(config.servicesRecheckMs ? { recheckMs: config.servicesRecheckMs } : {}),
      });
    }
    if (!source) {
      ctx.logger.warn(
        'no source of Services: give --kubeconfig FILE, --services FILE_OR_DIR or load a proxy.source plugin',
      );
    }
    // The source is wrapped before the proxier exists; labels only arrive once it runs.
    const made: { proxier?: Proxier } = {};
    const proxied = source && withNodeLabels(source, config, () => made.proxier);
    const proxier = new Proxier(
      {
        backend: ctx.get(ProxyBackendCapability),
        ...(proxied ? { source: proxied } : {}),
        clock: ctx.clock,
        logger: ctx.logger,
        bus: ctx.bus,
      },
      {
        node: nodeContextFrom(config),
        ...(config.minSyncPeriodMs !== undefined ? { minSyncPeriodMs: config.minSyncPeriodMs } : {}),
        ...(config.syncPeriodMs !== undefined ? { syncPeriodMs: config.syncPeriodMs } : {}),
        ...(config.fullSyncPeriodMs !== undefined ? { fullSyncPeriodMs: config.fullSyncPeriodMs } : {}),
        ...(config.healthzBindAddress !== undefined ? { healthzBindAddress: config.healthzBindAddress } : {}),
        ...(config.metricsBindAddress !== undefined ? { metricsBindAddress: config.metricsBindAddress } : {}),
      },
    );
    made.proxier = proxier;
    ctx.provide(ProxyCapability, proxier);
    ctx.onStart(() => proxier.start());
    ctx.onStop(() => proxier.stop());
  },
});

/**
 * The source, with the node's topology labels it reports (a watch of the Node) applied to the proxy:
 * the labels of the Node win over `topologyLabels` of the configuration, which stay the default.
 */
function withNodeLabels(
  source: ProxySource,
  config: ProxyPluginConfig,
  proxier: () => Proxier | undefined,
): ProxySource {
  return {
    name: source.name,
    start: (handler) =>
      source.start({
        ...handler,
        nodeLabels: (labels) => {
          const p = proxier();
          if (!p) return;
          const topologyLabels = { ...(config.topologyLabels ?? {}), ...labels };
          const current = p.tracker.nodeContext;
          // Every service is recomputed on a node change: only for a real one.
          const same = (a: Record<string, string>, b: Record<string, string>) =>
            JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
          if (same(current.topologyLabels, topologyLabels)) return;
          p.setNode({ ...current, topologyLabels });
        },
      }),
    stop: () => source.stop(),
  };
}

import { CriImage, CriRuntime, StatsProviderCapability } from '@nodelet/cri';
import { defineCapability, definePlugin } from '@nodelet/kernel';
import { VolumePluginCapability } from '@nodelet/volume';
import { Kubelet, type KubeletOptions } from './kubelet.js';
import { createKubeletObservability } from './metrics/observability.js';
import { ProbeHandlerCapability } from './prober/index.js';
import {
  type KubeletServerConfig,
  type KubeletServers,
  startKubeletServers,
} from './server/kubelet-server.js';
import { RouteTable } from './server/routes.js';
import { kubeletConfigz } from './server/configz.js';
import { installKubeletRoutes } from './server/kubelet-routes.js';
import { installStreamingRoutes } from './server/streaming-routes.js';

/** The running kubelet, for the host program (CLI, tests, embedders). */
export const KubeletCapability = defineCapability<Kubelet>('kubelet', {
  version: 1,
  description: 'the node agent',
});

/** The kubelet's API server: the route table its parts register into, and serving-certificate rotation. */
export interface KubeletServerHandle {
  routes: RouteTable;
  /** Swaps the certificate of the live HTTPS server (new connections get it). */
  setServingCertificate(certPem: string, keyPem: string): void;
  /** Where the servers listen once started (port 0 resolved); undefined when off. */
  securePort(): number | undefined;
  readOnlyPort(): number | undefined;
}

export const KubeletServerCapability = defineCapability<KubeletServerHandle>('kubelet.server', {
  version: 1,
  description: "the kubelet's HTTPS API (10250) and read-only port: routes and certificate rotation",
});

export interface KubeletPluginConfig extends KubeletOptions {
  /** Read-only HTTP port (upstream readOnlyPort: 10255 as a flag, 0 in a config file); 0 disables it. */
  readOnlyPort: number;
  /** Address the servers bind to. */
  address: string;
  /**
   * The HTTPS server on `port` (10250) with authentication and authorization; absent: no secure
   * server (embedders and simulated nodes that do not serve the kubelet API).
   */
  server?: Omit<KubeletServerConfig, 'address' | 'readOnlyPort'>;
}

/**
 * The kubelet as a kernel plugin: it requires a CRI runtime and image service and provides `kubelet`
 * and `kubelet.server`. Its configuration is assembled by the CLI from flags, the nodelet config and a
 * KubeletConfiguration.
 */
export const kubeletPlugin = definePlugin<KubeletPluginConfig>({
  manifest: {
    name: 'kubelet',
    version: '0.1.0',
    description: 'runs the pods of this node through the CRI runtime',
    provides: [KubeletCapability, KubeletServerCapability],
    requires: [CriRuntime, CriImage],
    // Probe handlers and volume plugins of plugins (a new kind, or a replacement of a built-in one).
    // Stats: a runtime's simulated or native provider; without one, the host's cgroups and file systems.
    optional: [ProbeHandlerCapability, VolumePluginCapability, StatsProviderCapability],
  },
  register(ctx) {
    const observability = createKubeletObservability(
      {
        bus: ctx.bus,
        clock: ctx.clock,
        runtime: ctx.get(CriRuntime),
        images: ctx.get(CriImage),
        stats: ctx.getOptional(StatsProviderCapability),
      },
      {
        nodeName: ctx.config.nodeName,
        rootDir: ctx.config.rootDir,
        ...(ctx.config.podLogsDir ? { podLogsDir: ctx.config.podLogsDir } : {}),
        podRef: (uid) => {
          const meta = kubelet.podManager.get(uid)?.metadata;
          return meta ? { name: meta.name ?? '', namespace: meta.namespace ?? 'default' } : undefined;
        },
      },
    );
    const kubelet = new Kubelet(
      {
        // Wrapped: every CRI call counts in kubelet_runtime_operations_*.
        runtime: observability.runtime,
        images: observability.images,
        bus: ctx.bus,
        clock: ctx.clock,
        logger: ctx.logger,
        probeHandlers: ctx.getAll(ProbeHandlerCapability),
        volumePlugins: ctx.getAll(VolumePluginCapability),
        // Eviction and image garbage collection read the same usage the stats endpoints serve.
        stats: observability.stats,
      },
      ctx.config,
    );
    ctx.provide(KubeletCapability, kubelet);
    const logger = ctx.logger.child('server');
    // The kubelet's own endpoints first: what other parts register later (streaming, stats, metrics)
    // replaces or adds to them.
    const routes = new RouteTable(logger);
    installKubeletRoutes(routes, kubelet, logger, {
      configz: () => kubeletConfigz(ctx.config),
      logDir: ctx.config.server?.logDir,
    });
    installStreamingRoutes(routes, kubelet, observability.runtime, logger);
    for (const route of observability.routes) {
      // Upstream's read-only port serves the metrics and stats too.
      routes.addRoute({
        path: route.path,
        methods: ['GET', 'HEAD'],
        readOnly: true,
        handler: (req, res) => route.handle(req, res),
      });
    }
    let servers: KubeletServers | undefined;
    ctx.provide(KubeletServerCapability, {
      routes,
      setServingCertificate: (certPem, keyPem) => {
        if (!servers?.secure) throw new Error('the kubelet has no HTTPS server running');
        servers.secure.setServingCertificate(certPem, keyPem);
      },
      securePort: () => servers?.securePort,
      readOnlyPort: () => servers?.readOnlyPort,
    });
    ctx.onStart(async () => {
      await kubelet.start();
      const { server, address, readOnlyPort } = ctx.config;
      if (!server && !(readOnlyPort > 0)) return;
      servers = await startKubeletServers(
        kubelet,
        server ? { ...server, address, readOnlyPort } : { ...disabledSecureServer(), address, readOnlyPort },
        logger,
        { routes },
      );
      if (servers.securePort !== undefined) kubelet.nodeAgent?.setKubeletPort(servers.securePort);
    });
    ctx.onStop(async () => {
      await servers?.close();
      servers = undefined;
      await kubelet.stop();
      observability.stop();
    });
  },
});

function disabledSecureServer(): Omit<KubeletServerConfig, 'address' | 'readOnlyPort'> {
  return {
    enableServer: false,
    port: 0,
    authentication: { x509: {}, webhook: { enabled: false, cacheTTLMs: 0 }, anonymous: { enabled: false } },
    authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTLMs: 0, cacheUnauthorizedTTLMs: 0 } },
  };
}

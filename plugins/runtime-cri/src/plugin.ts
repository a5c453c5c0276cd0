import { definePlugin, type NodeletPlugin } from '@nodelet/kernel';
import { CriImage, CriRuntime } from '@nodelet/cri';
import {
  CONTAINERD_ENDPOINT,
  checkEndpoint,
  criRuntimeConfigSchema,
  type CriRuntimeConfig,
} from './config.js';
import { RemoteCri } from './remote-cri.js';

/** What a preset (runtime-containerd, runtime-crio) changes about the generic plugin. */
export interface CriRuntimePreset {
  /** Plugin name, and the `plugins.<name>` config section. Default `runtime-cri`. */
  name?: string;
  version?: string;
  description?: string;
  /** Default `runtimeEndpoint`. Default containerd's socket, as upstream kubelet. */
  runtimeEndpoint?: string;
  /** Who serves the socket, for messages (`containerd`, `CRI-O`). */
  runtimeLabel?: string;
}

/**
 * A plugin providing `cri.runtime` and `cri.image` from a CRI v1 runtime over gRPC: one connection
 * (two when the image endpoint differs), per-call deadlines, gRPC statuses as the kernel's typed
 * errors, a fresh channel after the runtime restarts. On start it checks, as upstream kubelet does,
 * that the socket exists and Version answers CRI `v1`; the kernel refuses to start otherwise.
 */
export function criRuntimePlugin(preset: CriRuntimePreset = {}): NodeletPlugin<CriRuntimeConfig> {
  const name = preset.name ?? 'runtime-cri';
  const defaultEndpoint = preset.runtimeEndpoint ?? CONTAINERD_ENDPOINT;
  return definePlugin<CriRuntimeConfig>({
    manifest: {
      name,
      version: preset.version ?? '0.1.0',
      description:
        preset.description ?? 'a CRI v1 runtime over gRPC (containerd, CRI-O, or any CRI v1 server)',
      provides: [CriRuntime, CriImage],
      requires: [],
      configSchema: criRuntimeConfigSchema(defaultEndpoint),
    },
    register(ctx) {
      const config = ctx.config;
      const runtimeEndpoint = config.runtimeEndpoint ?? defaultEndpoint;
      checkEndpoint(runtimeEndpoint, `plugins.${name}.runtimeEndpoint`);
      if (config.imageEndpoint) checkEndpoint(config.imageEndpoint, `plugins.${name}.imageEndpoint`);
      const remote = new RemoteCri({
        runtimeEndpoint,
        imageEndpoint: config.imageEndpoint ?? '',
        ...(config.runtimeRequestTimeoutMs !== undefined
          ? { runtimeRequestTimeoutMs: config.runtimeRequestTimeoutMs }
          : {}),
        ...(config.pullTimeoutMs !== undefined ? { pullTimeoutMs: config.pullTimeoutMs } : {}),
        logger: ctx.logger,
        ...(preset.runtimeLabel ? { runtimeLabel: preset.runtimeLabel } : {}),
        endpointHint: `set the socket with --container-runtime-endpoint (KubeletConfiguration containerRuntimeEndpoint, or plugins.${name}.runtimeEndpoint)`,
      });
      ctx.provide(CriRuntime, remote.runtime);
      ctx.provide(CriImage, remote.image);
      ctx.onStart(async () => {
        const info = await remote.validate();
        ctx.logger.info('connected to the container runtime', {
          runtime: `${info.version.runtimeName} ${info.version.runtimeVersion}`,
          criApi: info.version.runtimeApiVersion,
          endpoint: info.runtimeEndpoint,
          ...(info.imageEndpoint !== info.runtimeEndpoint ? { imageEndpoint: info.imageEndpoint } : {}),
        });
      });
      ctx.onStop(() => remote.close());
    },
  });
}

/** The generic plugin, `runtime-cri` (default endpoint: containerd's socket, as upstream kubelet). */
export const runtimeCriPlugin = criRuntimePlugin();

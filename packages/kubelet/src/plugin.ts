import { CriImage, CriRuntime } from '@nodelet/cri';
import { defineCapability, definePlugin } from '@nodelet/kernel';
import { VolumePluginCapability } from '@nodelet/volume';
import { Kubelet, type KubeletOptions } from './kubelet.js';
import { ProbeHandlerCapability } from './prober/index.js';
import { ReadOnlyServer } from './server.js';

/** The running kubelet, for the host program (CLI, tests, embedders). */
export const KubeletCapability = defineCapability<Kubelet>('kubelet', {
  version: 1,
  description: 'the node agent',
});

export interface KubeletPluginConfig extends KubeletOptions {
  /** Read-only HTTP port (upstream readOnlyPort, 10255); 0 disables it. */
  readOnlyPort: number;
  /** Address the read-only server binds to. */
  address: string;
}

/**
 * The kubelet as a kernel plugin: it requires a CRI runtime and image service and provides `kubelet`.
 * Its configuration is assembled by the CLI from flags, the nodelet config and a KubeletConfiguration.
 */
export const kubeletPlugin = definePlugin<KubeletPluginConfig>({
  manifest: {
    name: 'kubelet',
    version: '0.1.0',
    description: 'runs the pods of this node through the CRI runtime',
    provides: [KubeletCapability],
    requires: [CriRuntime, CriImage],
    // Probe handlers and volume plugins of plugins (a new kind, or a replacement of a built-in one).
    optional: [ProbeHandlerCapability, VolumePluginCapability],
  },
  register(ctx) {
    const kubelet = new Kubelet(
      {
        runtime: ctx.get(CriRuntime),
        images: ctx.get(CriImage),
        bus: ctx.bus,
        clock: ctx.clock,
        logger: ctx.logger,
        probeHandlers: ctx.getAll(ProbeHandlerCapability),
        volumePlugins: ctx.getAll(VolumePluginCapability),
      },
      ctx.config,
    );
    ctx.provide(KubeletCapability, kubelet);
    const server = new ReadOnlyServer(kubelet, ctx.logger.child('server'));
    ctx.onStart(async () => {
      await kubelet.start();
      if (ctx.config.readOnlyPort > 0) await server.listen(ctx.config.readOnlyPort, ctx.config.address);
    });
    ctx.onStop(async () => {
      await server.close();
      await kubelet.stop();
    });
  },
});

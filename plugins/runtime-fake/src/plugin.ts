import { ConfigError, definePlugin, errorMessage } from '@nodelet/kernel';
import { CriImage, CriRuntime, ProbeHandlerCapability, StatsProviderCapability } from '@nodelet/cri';
import { type FakeRuntimeConfig, fakeRuntimeConfigSchema } from './config.js';
import { FakeRuntime } from './fake-runtime.js';
import { fakeProbeHandlers } from './probes.js';

/**
 * The `runtime-fake` plugin: one in-memory FakeRuntime on the kernel's clock, provided as both
 * `cri.runtime` and `cri.image`, and its `httpGet`, `tcpSocket` and `grpc` probe handlers as
 * `probe.handler`, and the simulated usage of its containers (the `cpu`, `memory`, `disk`, `memoryGrowth`,
 * `diskGrowth` behaviour keys) on its simulated node (`node:` in the configuration) as `stats.provider`.
 * The pod IPs it hands out reach no host, so a kubelet on it answers those probes from the containers'
 * scripts (probes.ts) instead of opening sockets. Tests script it through the capability:
 *
 *     const runtime = kernel.get(CriRuntime) as FakeRuntime;
 *     runtime.script('app', 'exitAfter=5s,exitCode=1');
 */
export const runtimeFakePlugin = definePlugin<FakeRuntimeConfig>({
  manifest: {
    name: 'runtime-fake',
    version: '0.1.0',
    description: 'in-memory CRI v1 runtime on the kernel clock, for tests and for simulating many nodes',
    provides: [CriRuntime, CriImage, ProbeHandlerCapability, StatsProviderCapability],
    requires: [],
    configSchema: fakeRuntimeConfigSchema,
  },
  register(ctx) {
    let runtime: FakeRuntime;
    try {
      runtime = new FakeRuntime({ clock: ctx.clock, logger: ctx.logger, config: ctx.config });
    } catch (err) {
      throw new ConfigError(
        `plugin '${ctx.name}' configuration: ${errorMessage(err).replace(/^runtime-fake: /, '')}`,
      );
    }
    ctx.provide(CriRuntime, runtime);
    ctx.provide(CriImage, runtime);
    for (const handler of fakeProbeHandlers(runtime)) ctx.provide(ProbeHandlerCapability, handler);
    ctx.provide(StatsProviderCapability, runtime.statsProvider());
    ctx.onStop(() => runtime.close());
  },
});

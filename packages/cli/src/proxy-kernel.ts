import { resolve } from 'node:path';
import {
  Kernel,
  type Logger,
  loadPlugin,
  type NodeletPlugin,
  PluginLoadError,
  type PluginSpec,
} from '@nodelet/kernel';
import { CliError } from './errors.js';
import { proxyBackendLoading } from './plugins.js';
import { PROXY_MODES as BUILT_IN_MODES, type ProxySetup } from './proxy-command.js';

/**
 * The proxy's kernel, through the kernel's plugin loader: `proxy.mode` expands into the backend's
 * entry (a built-in name, a package or a path), beside the plugins `proxy.plugins` lists, the API
 * source and the proxy. `--cleanup` finds each mode's backend the same way.
 */
const PROXY_MODES: readonly string[] = BUILT_IN_MODES;

/** The modes that leave rules in the kernel, which starting in another mode (or --cleanup) removes. */
const RULE_MODES = ['iptables', 'nftables', 'ipvs'] as const;

/** A built-in mode's configuration, from the proxy's settings. */
function builtInConfig(setup: ProxySetup): Record<string, unknown> {
  switch (setup.mode) {
    case 'iptables':
      return { backend: setup.iptablesBackend };
    case 'ipvs':
      return { scheduler: setup.ipvsScheduler };
    case 'userspace':
      return { listenAddress: setup.listenAddress };
    default:
      return {};
  }
}

/**
 * The backend plugin of the mode, with its configuration; undefined when a plugin of `proxy.plugins`
 * is the backend.
 */
export async function backendPlugin(
  setup: ProxySetup,
): Promise<{ plugin: NodeletPlugin<any>; config: Record<string, unknown> } | undefined> {
  if (setup.listedBackend) return undefined;
  const spec: PluginSpec = { use: setup.mode, origin: `proxy mode ${setup.mode}`, baseDir: process.cwd() };
  try {
    return { plugin: await loadPlugin(spec, proxyBackendLoading), config: builtInConfig(setup) };
  } catch (err) {
    if (!(err instanceof PluginLoadError) || PROXY_MODES.includes(setup.mode)) throw err;
    if (err.failure === 'not-a-plugin') {
      throw new CliError(
        `--mode ${setup.mode}: the module exports no nodelet plugin (export default or export const plugin)`,
      );
    }
    throw new CliError(
      `proxy mode ${JSON.stringify(setup.mode)} is not one of ${PROXY_MODES.join(', ')}, and no plugin package or file of that name loads: ${err.detail}`,
    );
  }
}

/** Removes what every mode (but `except`) left in this network namespace. Failures are logged, not fatal. */
export async function cleanupModes(logger: Logger, except?: string): Promise<boolean> {
  let ok = true;
  for (const mode of RULE_MODES) {
    if (mode === except) continue;
    try {
      const { ProxyBackendCapability } = await import('@nodelet/proxy');
      const spec = { use: mode, origin: `cleanup of proxy mode ${mode}`, baseDir: resolve('.') };
      const kernel = new Kernel({ logger }).use(await loadPlugin(spec, proxyBackendLoading), {}, spec.origin);
      await kernel.start();
      try {
        await kernel.get(ProxyBackendCapability).cleanup();
      } finally {
        await kernel.stop();
      }
    } catch (err) {
      ok = false;
      logger.error(`cleaning up ${mode} rules failed`, { err: (err as Error).message });
    }
  }
  return ok;
}

/**
 * The proxy's kernel, not started: the backend plugin of the mode (or the listed one), the plugins of
 * `proxy.plugins`, the API source when the setup names an API server, and the proxy. `nodelet proxy`
 * and `nodelet up` both run this.
 */
export async function buildProxyKernel(setup: ProxySetup, logger: Logger): Promise<Kernel> {
  const [{ proxyPlugin, apiSourcePlugin }, backend] = await Promise.all([
    import('@nodelet/proxy'),
    backendPlugin(setup),
  ]);
  const kernel = new Kernel({ logger });
  if (backend) kernel.use(backend.plugin, backend.config, `proxy mode ${setup.mode}`);
  for (const { plugin, spec } of setup.plugins)
    kernel.use(plugin, spec.config, spec.configOrigin ?? spec.origin);
  if (setup.api) {
    kernel.use(apiSourcePlugin, { ...setup.api, nodeName: setup.proxy.nodeName }, 'proxy API source');
  }
  kernel.use(proxyPlugin, setup.proxy, 'proxy configuration');
  return kernel;
}

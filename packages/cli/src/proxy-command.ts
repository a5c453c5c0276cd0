import { isIPv4 } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parseGoDuration as parseGoDurationMs } from '@nodelet/api/go-duration';
import type { Kernel, Logger, PluginSpec } from '@nodelet/kernel';
import type { ProxyPluginConfig } from '@nodelet/proxy';
import { intFlag, parseFlags } from './args.js';
import { CliError } from './errors.js';
import { chooseProxyMode } from './proxy-mode.js';
import type { ProxySection } from './nodelet-config.js';
import type { ListedPlugin } from './plugins.js';

// Flags and help load nothing heavy; the kernel, the proxy and its backends are imported only to run.

export const PROXY_MODES = ['iptables', 'nftables', 'ipvs', 'userspace'] as const;
export type ProxyMode = (typeof PROXY_MODES)[number];

export const proxyHelp = `Run the proxy (kube-proxy): program Services and EndpointSlices into this node.

Usage:
  nodelet proxy --kubeconfig FILE [--hostname-override NAME] [flags]
  nodelet proxy --services FILE_OR_DIR [flags]
  nodelet proxy --cleanup

Modes:
  iptables     KUBE-SERVICES → KUBE-SVC-* → KUBE-SEP-* chains, one iptables-restore per sync (root)
  nftables     table ip kube-proxy with verdict maps, one nft -f transaction per sync (root)
  ipvs         IPVS virtual servers + ipset/iptables helpers; rendered only without an IPVS kernel (root)
  userspace    nodelet listens and splices connections itself; no root needed

Flags:
  --mode MODE                    iptables | nftables | ipvs | userspace (default as root: iptables if
                                 installed, else nftables if nft is, else userspace; userspace without root)
  --kubeconfig FILE              list and watch Services and EndpointSlices on the cluster of this kubeconfig
  --master URL                   the API server; overrides the kubeconfig's server (alone: no credentials)
  --services FILE_OR_DIR         Services and EndpointSlices from YAML/JSON files instead, re-read on change
  --config FILE                  a KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1) or a
                                 NodeletConfiguration (nodelet.dev/v1alpha1) with a proxy: section
  --cleanup                      remove every rule, chain, table and set of every mode, then exit
  --hostname-override NAME       node name, for internalTrafficPolicy/externalTrafficPolicy Local and the
                                 node's topology labels (default: the hostname, in lower case)
  --node-ip IP[,IP]              this node's IPv4 addresses (default: the non-loopback IPv4 addresses)
  --cluster-cidr CIDR            pod CIDR; traffic to a ClusterIP from outside it is masqueraded
  --masquerade-all               masquerade all traffic to services
  --healthz-bind-address H:P     /healthz address (default 127.0.0.1:10256; "" disables it)
  --metrics-bind-address H:P     /metrics address (default 127.0.0.1:10249; "" disables it)
  --min-sync-period D            at most one sync per D (default 1s)
  --sync-period D                a sync at least every D (default 30s)
  --iptables-backend B           auto | nft | legacy (default auto: as the host's existing rules)
  --ipvs-scheduler S             rr | lc | wrr | sh | dh (default rr)
  --listen-address IP            userspace: address to listen on (default 127.0.0.1)
  --v N                          log verbosity: 0-1 info, 2 and up debug
  -h, --help                     show this help

With --kubeconfig, Services labelled service.kubernetes.io/service-proxy-name (another proxy's) and
headless Services are skipped, as upstream kube-proxy does; an object with a bad field (a port out of
range, an address that is not an IP) is logged once and skipped, and the rules of its last good version
stay. Rules stay in force when the proxy stops; the next start adopts them. Starting in one mode removes
what the other modes left. Stop it with SIGINT or SIGTERM.

Examples:
  nodelet proxy --kubeconfig ~/.nodelet/kubeconfig --mode nftables
  nodelet proxy --mode nftables --services ./services.yaml
  nodelet proxy --mode userspace --services ./services/ --listen-address 127.0.0.1
  nodelet proxy --cleanup
`;

const options = {
  mode: { type: 'string' },
  kubeconfig: { type: 'string' },
  master: { type: 'string' },
  services: { type: 'string' },
  config: { type: 'string' },
  cleanup: { type: 'boolean' },
  'hostname-override': { type: 'string' },
  'node-ip': { type: 'string' },
  'cluster-cidr': { type: 'string' },
  'masquerade-all': { type: 'boolean' },
  'healthz-bind-address': { type: 'string' },
  'metrics-bind-address': { type: 'string' },
  'min-sync-period': { type: 'string' },
  'sync-period': { type: 'string' },
  'iptables-backend': { type: 'string' },
  'ipvs-scheduler': { type: 'string' },
  'listen-address': { type: 'string' },
  v: { type: 'string', short: 'v' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Everything `nodelet proxy` runs from, merged: flags > NodeletConfiguration proxy > KubeProxyConfiguration > defaults. */
export interface ProxySetup {
  mode: ProxyMode | string;
  /** Why `mode`, when neither flag nor file chose it. */
  modeReason?: string;
  proxy: ProxyPluginConfig;
  iptablesBackend: 'auto' | 'nft' | 'legacy';
  ipvsScheduler: string;
  listenAddress: string;
  v: number;
  /** The API server to list and watch (instead of `proxy.services`). */
  api?: { kubeconfig?: string; master?: string };
  /** Where the config came from, for logs. */
  configPath?: string;
  /** The plugins the config's `proxy.plugins` lists, loaded. */
  plugins: ListedPlugin[];
  /** No mode was asked for and a plugin of `plugins` provides `proxy.backend`: it is the backend. */
  listedBackend?: boolean;
}

/** Go duration strings ("1s", "500ms", "1m30s") in whole milliseconds. */
export function parseGoDuration(text: string, field: string): number {
  const ms = parseGoDurationMs(text);
  if (ms === undefined) {
    throw new CliError(`${field}: ${JSON.stringify(text)} is not a duration; write it like 1s, 30s or 500ms`);
  }
  return Math.round(ms);
}

function ipv4Addresses(): string[] {
  const out: string[] = [];
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (!a.internal && a.family === 'IPv4') out.push(a.address);
  }
  return out;
}

/** The upstream KubeProxyConfiguration fields nodelet reads; others are reported once by name. */
const KUBE_PROXY_FIELDS = new Set([
  'apiVersion',
  'kind',
  'mode',
  'clusterCIDR',
  'hostnameOverride',
  'healthzBindAddress',
  'metricsBindAddress',
  'nodePortAddresses',
  'iptables',
  'nftables',
  'ipvs',
  'syncPeriod',
  'minSyncPeriod',
  'clientConnection',
]);

interface FileValues {
  mode?: string;
  kubeconfig?: string;
  master?: string;
  services?: string;
  nodeName?: string;
  nodeIPs?: string[];
  clusterCIDR?: string;
  healthzBindAddress?: string;
  metricsBindAddress?: string;
  nodePortAddresses?: string[];
  masqueradeAll?: boolean;
  masqueradeBit?: number;
  minSyncPeriodMs?: number;
  syncPeriodMs?: number;
  iptablesBackend?: string;
  ipvsScheduler?: string;
  listenAddress?: string;
  plugins?: PluginSpec[];
}

async function readConfig(path: string, logger: Logger, seen = new Set<string>()): Promise<FileValues> {
  const { readYamlFile, validateConfig } = await import('@nodelet/kernel');
  if (seen.has(path)) throw new CliError(`${path}: configuration files include each other`);
  seen.add(path);
  const doc = readYamlFile(path) as Record<string, any>;
  const where = (f: string) => `${path}: field "${f}"`;
  const dur = (v: unknown, f: string) => (typeof v === 'string' ? parseGoDuration(v, where(f)) : undefined);
  if (doc.kind === 'KubeProxyConfiguration') {
    if (doc.apiVersion !== 'kubeproxy.config.k8s.io/v1alpha1') {
      throw new CliError(`${where('apiVersion')} must be "kubeproxy.config.k8s.io/v1alpha1"`);
    }
    for (const key of Object.keys(doc)) {
      if (!KUBE_PROXY_FIELDS.has(key))
        logger.once(
          `kube-proxy-field:${key}`,
          'info',
          'KubeProxyConfiguration field not implemented by nodelet; ignoring it',
          { field: key, file: path },
        );
    }
    const mode = doc.mode === '' || doc.mode === undefined ? undefined : String(doc.mode);
    const modeSection =
      (mode === 'nftables' ? doc.nftables : mode === 'ipvs' ? doc.ipvs : doc.iptables) ?? {};
    const kubeconfig = doc.clientConnection?.kubeconfig;
    return {
      ...(mode ? { mode } : {}),
      ...(typeof kubeconfig === 'string' && kubeconfig
        ? { kubeconfig: resolve(dirname(path), kubeconfig) }
        : {}),
      ...(doc.hostnameOverride ? { nodeName: String(doc.hostnameOverride) } : {}),
      ...(doc.clusterCIDR ? { clusterCIDR: String(doc.clusterCIDR).split(',')[0]! } : {}),
      ...(typeof doc.healthzBindAddress === 'string' ? { healthzBindAddress: doc.healthzBindAddress } : {}),
      ...(typeof doc.metricsBindAddress === 'string' ? { metricsBindAddress: doc.metricsBindAddress } : {}),
      ...(Array.isArray(doc.nodePortAddresses)
        ? { nodePortAddresses: doc.nodePortAddresses.filter((a: string) => a !== 'primary') }
        : {}),
      ...(typeof doc.iptables?.masqueradeAll === 'boolean'
        ? { masqueradeAll: doc.iptables.masqueradeAll }
        : {}),
      ...(typeof doc.iptables?.masqueradeBit === 'number'
        ? { masqueradeBit: doc.iptables.masqueradeBit }
        : {}),
      ...(dur(doc.minSyncPeriod ?? modeSection.minSyncPeriod, 'minSyncPeriod') !== undefined
        ? { minSyncPeriodMs: dur(doc.minSyncPeriod ?? modeSection.minSyncPeriod, 'minSyncPeriod')! }
        : {}),
      ...(dur(doc.syncPeriod ?? modeSection.syncPeriod, 'syncPeriod') !== undefined
        ? { syncPeriodMs: dur(doc.syncPeriod ?? modeSection.syncPeriod, 'syncPeriod')! }
        : {}),
      ...(doc.ipvs?.scheduler ? { ipvsScheduler: String(doc.ipvs.scheduler) } : {}),
    };
  }
  if (doc.kind === 'NodeletConfiguration') {
    const { nodeletConfigSchema } = await import('./nodelet-config.js');
    validateConfig(nodeletConfigSchema, doc, path);
    const p: ProxySection = (doc.proxy ?? {}) as ProxySection;
    const rel = (v: string) => (isAbsolute(v) ? v : resolve(dirname(path), v));
    const base = p.kubeProxyConfig ? await readConfig(rel(p.kubeProxyConfig), logger, seen) : {};
    const mode = p.mode ?? base.mode;
    // As in a KubeProxyConfiguration: the section of the mode in use, under the top-level fields.
    const section = (mode === 'nftables' ? p.nftables : mode === 'ipvs' ? p.ipvs : p.iptables) ?? {};
    const minSync = p.minSyncPeriod ?? section.minSyncPeriod;
    const sync = p.syncPeriod ?? section.syncPeriod;
    const field = (f: string) => `${path}: field "proxy.${f}"`;
    return {
      ...base,
      ...(doc.nodeName ? { nodeName: String(doc.nodeName) } : {}),
      ...(p.hostnameOverride ? { nodeName: p.hostnameOverride } : {}),
      ...(p.mode ? { mode: p.mode } : {}),
      ...(p.kubeconfig ? { kubeconfig: rel(p.kubeconfig) } : {}),
      ...(p.master ? { master: p.master } : {}),
      ...(p.services ? { services: rel(p.services) } : {}),
      ...(p.nodeIPs ? { nodeIPs: p.nodeIPs } : {}),
      ...(p.clusterCIDR ? { clusterCIDR: p.clusterCIDR } : {}),
      ...(p.healthzBindAddress !== undefined ? { healthzBindAddress: p.healthzBindAddress } : {}),
      ...(p.metricsBindAddress !== undefined ? { metricsBindAddress: p.metricsBindAddress } : {}),
      ...(p.nodePortAddresses ? { nodePortAddresses: p.nodePortAddresses } : {}),
      ...((p.masqueradeAll ?? p.iptables?.masqueradeAll) !== undefined
        ? { masqueradeAll: (p.masqueradeAll ?? p.iptables?.masqueradeAll)! }
        : {}),
      ...(p.iptables?.masqueradeBit !== undefined ? { masqueradeBit: p.iptables.masqueradeBit } : {}),
      ...(minSync
        ? {
            minSyncPeriodMs: parseGoDuration(
              minSync,
              field(p.minSyncPeriod ? 'minSyncPeriod' : `${mode ?? 'iptables'}.minSyncPeriod`),
            ),
          }
        : {}),
      ...(sync
        ? {
            syncPeriodMs: parseGoDuration(
              sync,
              field(p.syncPeriod ? 'syncPeriod' : `${mode ?? 'iptables'}.syncPeriod`),
            ),
          }
        : {}),
      ...(p.iptables?.backend ? { iptablesBackend: p.iptables.backend } : {}),
      ...(p.ipvs?.scheduler ? { ipvsScheduler: p.ipvs.scheduler } : {}),
      ...(p.userspace?.listenAddress ? { listenAddress: p.userspace.listenAddress } : {}),
      ...(p.plugins
        ? {
            plugins: (await import('./plugins.js')).pluginSpecs(
              p.plugins,
              path,
              dirname(path),
              'proxy.plugins',
            ),
          }
        : {}),
    };
  }
  throw new CliError(
    `${path}: kind must be KubeProxyConfiguration or NodeletConfiguration, got ${JSON.stringify(doc.kind)}`,
  );
}

export interface ParsedProxyArgs {
  help: boolean;
  cleanup: boolean;
  values: ReturnType<typeof parseFlags<typeof options>>['values'];
}

export function parseProxyArgs(args: readonly string[]): ParsedProxyArgs {
  const { values, positionals } = parseFlags(args, options, 'nodelet proxy');
  if (positionals.length > 0)
    throw new CliError(`unexpected argument ${JSON.stringify(positionals[0])}; see nodelet proxy --help`);
  return { help: !!values.help, cleanup: !!values.cleanup, values };
}

/** What differs when `nodelet up` runs the proxy: its flag names, defaults, and mode `none`. */
export interface ProxySetupContext {
  /** The mode flag's name in messages. Default `--mode`. */
  modeFlag?: string;
  /** Accept mode `none` (no proxy). */
  allowNone?: boolean;
  /** /healthz address when neither flag nor file sets it. Default 127.0.0.1:10256. */
  healthzBindAddress?: string;
  /** /metrics address when neither flag nor file sets it. Default 127.0.0.1:10249. */
  metricsBindAddress?: string;
  /** Whether a kernel tool is installed (a test seam; default: looked up in the system PATH). */
  has?: (command: string) => boolean;
}

export async function resolveProxySetup(
  parsed: ParsedProxyArgs,
  logger: Logger,
  context: ProxySetupContext = {},
): Promise<ProxySetup> {
  const f = parsed.values;
  const file: FileValues = f.config ? await readConfig(resolve(f.config), logger) : {};
  const isRoot = process.getuid?.() === 0;
  const requested = f.mode ?? file.mode;
  const modeFlag = context.modeFlag ?? '--mode';
  const mode = requested ?? 'auto';
  if (mode === 'none' && !context.allowNone) {
    throw new CliError(`${modeFlag} none means no proxy; choose ${PROXY_MODES.join(', ')}`);
  }
  if (
    mode !== 'none' &&
    !(PROXY_MODES as readonly string[]).includes(mode) &&
    !/^(\.|\/|@|[a-z0-9])/.test(mode)
  ) {
    throw new CliError(
      `${modeFlag} must be one of ${PROXY_MODES.join(', ')}${context.allowNone ? ', none' : ''} (or a plugin package or path); got ${JSON.stringify(mode)}`,
    );
  }
  const backend = f['iptables-backend'] ?? file.iptablesBackend ?? 'auto';
  if (!['auto', 'nft', 'legacy'].includes(backend))
    throw new CliError(`--iptables-backend must be auto, nft or legacy; got ${JSON.stringify(backend)}`);
  const plugins = file.plugins ? await (await import('./plugins.js')).loadListed(file.plugins) : [];
  const listedBackend = requested === undefined ? await findListedBackend(plugins) : undefined;
  const chosen = listedBackend
    ? {
        mode: listedBackend.plugin.manifest.name,
        reason: `${listedBackend.spec.origin} provides proxy.backend`,
      }
    : chooseProxyMode({
        requested,
        origin: f.mode !== undefined ? modeFlag : `${f.config}: proxy mode`,
        iptablesBackend: backend as ProxySetup['iptablesBackend'],
        isRoot,
        ...(context.has ? { has: context.has } : {}),
      });
  const scheduler = f['ipvs-scheduler'] ?? file.ipvsScheduler ?? 'rr';
  if (!['rr', 'lc', 'wrr', 'sh', 'dh'].includes(scheduler))
    throw new CliError(`--ipvs-scheduler must be rr, lc, wrr, sh or dh; got ${JSON.stringify(scheduler)}`);
  const nodeIPs = f['node-ip']
    ? f['node-ip'].split(',').map((s) => s.trim())
    : (file.nodeIPs ?? ipv4Addresses());
  for (const ip of nodeIPs)
    if (!isIPv4(ip)) throw new CliError(`--node-ip: ${JSON.stringify(ip)} is not an IPv4 address`);
  // Where Services come from: flags decide over the file; one place gives one kind of source.
  const fromFlags = f.services !== undefined || f.kubeconfig !== undefined || f.master !== undefined;
  const src = fromFlags
    ? {
        services: f.services !== undefined ? resolve(f.services) : undefined,
        kubeconfig: f.kubeconfig !== undefined ? resolve(f.kubeconfig) : undefined,
        master: f.master,
        where: 'flags --services and --kubeconfig/--master',
      }
    : { ...file, where: `${f.config}: fields proxy.services and proxy.kubeconfig/master` };
  if (src.services && (src.kubeconfig || src.master)) {
    throw new CliError(`${src.where} both give the Services to proxy; keep one`);
  }
  const services = src.services;
  const api =
    src.kubeconfig || src.master
      ? {
          ...(src.kubeconfig ? { kubeconfig: src.kubeconfig } : {}),
          ...(src.master ? { master: src.master } : {}),
        }
      : undefined;
  const minSync = f['min-sync-period']
    ? parseGoDuration(f['min-sync-period'], '--min-sync-period')
    : file.minSyncPeriodMs;
  const sync = f['sync-period'] ? parseGoDuration(f['sync-period'], '--sync-period') : file.syncPeriodMs;
  const proxy: ProxyPluginConfig = {
    nodeName: (f['hostname-override'] ?? file.nodeName ?? hostname()).toLowerCase(),
    nodeIPs,
    healthzBindAddress:
      f['healthz-bind-address'] ?? file.healthzBindAddress ?? context.healthzBindAddress ?? '127.0.0.1:10256',
    metricsBindAddress:
      f['metrics-bind-address'] ?? file.metricsBindAddress ?? context.metricsBindAddress ?? '127.0.0.1:10249',
    ...((f['cluster-cidr'] ?? file.clusterCIDR)
      ? { clusterCIDR: (f['cluster-cidr'] ?? file.clusterCIDR)! }
      : {}),
    ...(f['masquerade-all'] || file.masqueradeAll ? { masqueradeAll: true } : {}),
    ...(file.masqueradeBit !== undefined ? { masqueradeBit: file.masqueradeBit } : {}),
    ...(file.nodePortAddresses ? { nodePortAddresses: file.nodePortAddresses } : {}),
    ...(minSync !== undefined ? { minSyncPeriodMs: minSync } : {}),
    ...(sync !== undefined ? { syncPeriodMs: sync } : {}),
    ...(services ? { services } : {}),
  };
  return {
    mode: chosen.mode,
    ...(chosen.reason ? { modeReason: chosen.reason } : {}),
    proxy,
    iptablesBackend: backend as ProxySetup['iptablesBackend'],
    ipvsScheduler: scheduler,
    listenAddress: f['listen-address'] ?? file.listenAddress ?? '127.0.0.1',
    v: intFlag('v', f.v?.replace(/^=/, ''), 0, 10) ?? 0,
    ...(api ? { api } : {}),
    ...(f.config ? { configPath: resolve(f.config) } : {}),
    plugins,
    ...(listedBackend ? { listedBackend: true } : {}),
  };
}

/** The plugin of a `proxy.plugins` list that provides `proxy.backend`, if any. */
async function findListedBackend(plugins: ListedPlugin[]): Promise<ListedPlugin | undefined> {
  if (plugins.length === 0) return undefined;
  const [{ ProxyBackendCapability }, { providesCapability }] = await Promise.all([
    import('@nodelet/proxy'),
    import('./plugins.js'),
  ]);
  return plugins.find((l) => providesCapability(l.plugin, ProxyBackendCapability.id));
}

/**
 * `nodelet proxy`: resolves the configuration, cleans up what other modes left, starts the kernel with
 * the backend plugin and the proxy, and runs until a signal stops it (rules stay in force).
 */
export async function runProxy(
  args: readonly string[],
  io: { stdout: (text: string) => void; onStopped?: (signal: string) => void },
): Promise<Kernel | undefined> {
  const parsed = parseProxyArgs(args);
  if (parsed.help) {
    io.stdout(proxyHelp);
    return undefined;
  }
  const [{ createLogger }, { buildProxyKernel, cleanupModes }] = await Promise.all([
    import('@nodelet/kernel'),
    import('./proxy-kernel.js'),
  ]);
  const logger = createLogger({
    level: intFlag('v', parsed.values.v?.replace(/^=/, ''), 0, 10)! >= 2 ? 'debug' : 'info',
  });
  if (parsed.cleanup) {
    const ok = await cleanupModes(logger.child('cleanup'));
    if (!ok) throw new CliError('cleanup did not finish; see the errors above');
    logger.info('removed the proxy rules of every mode');
    return undefined;
  }
  const setup = await resolveProxySetup(parsed, logger);
  await cleanupModes(logger.child('cleanup'), setup.mode);
  const kernel = await buildProxyKernel(setup, logger);
  await kernel.start();
  kernel.stopOnSignals(io.onStopped ?? (() => process.exit(0)));
  logger.info('nodelet proxy running', {
    mode: setup.mode,
    ...(setup.modeReason ? { modeChosenBecause: setup.modeReason } : {}),
    node: setup.proxy.nodeName,
    healthz: setup.proxy.healthzBindAddress || 'disabled',
    metrics: setup.proxy.metricsBindAddress || 'disabled',
    ...(setup.proxy.services ? { services: setup.proxy.services } : {}),
    ...(setup.api?.kubeconfig ? { kubeconfig: setup.api.kubeconfig } : {}),
    ...(setup.api?.master ? { master: setup.api.master } : {}),
    ...(setup.configPath ? { config: setup.configPath } : {}),
  });
  return kernel;
}

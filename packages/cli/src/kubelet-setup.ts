import { isIP } from 'node:net';
import { homedir, hostname, networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import { parseGoDuration } from '@nodelet/api';
import type { Logger, PluginSpec } from '@nodelet/kernel';
import {
  type ApiServerOptions,
  DEFAULT_KUBELET_OOM_SCORE_ADJ,
  type KubeletConfigValues,
  type KubeletPluginConfig,
  opensslCiphers,
  parseLabels,
  parseTaints,
  tlsVersions,
} from '@nodelet/kubelet';
import type { ContainerGCFlags } from './container-gc-flags.js';
import { CliError } from './errors.js';
import { type LoadedConfig, loadConfigFile } from './nodelet-config.js';
import { checkRuntimeName, DEFAULT_RUNTIME_ORIGIN, pluginSpecs, type RuntimeChoice } from './plugins.js';

/** `nodelet kubelet` flags, parsed (names as upstream kubelet spells them). */
export interface KubeletFlags {
  podManifestPath?: string;
  manifestUrl?: string;
  /** Each `Key:Value[,Key:Value…]`, repeatable. */
  manifestUrlHeader?: string[];
  config?: string;
  runtime?: string;
  /** Upstream `--container-runtime-endpoint` / `--image-service-endpoint`: the CRI sockets. */
  containerRuntimeEndpoint?: string;
  imageServiceEndpoint?: string;
  hostnameOverride?: string;
  nodeIp?: string;
  /** `--kubeconfig`: join the cluster it points at. */
  kubeconfig?: string;
  /** `--bootstrap-kubeconfig`: TLS bootstrap credentials. */
  bootstrapKubeconfig?: string;
  /** Each `key=value[,key=value…]`, repeatable. */
  nodeLabels?: string[];
  /** Each `key[=value]:Effect[,…]`, repeatable. */
  registerWithTaints?: string[];
  rootDir?: string;
  readOnlyPort?: number;
  address?: string;
  /** The kubelet API (HTTPS): `--port`, its certificate, authentication and authorization. */
  port?: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  certDir?: string;
  /** Go names: VersionTLS12, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, … */
  tlsMinVersion?: string;
  tlsCipherSuites?: string[];
  clientCaFile?: string;
  authenticationTokenWebhook?: boolean;
  anonymousAuth?: boolean;
  authorizationMode?: 'AlwaysAllow' | 'Webhook';
  /** `--minimum-container-ttl-duration`, `--maximum-dead-containers-per-container`, `--maximum-dead-containers`. */
  containerGC?: ContainerGCFlags;
  v?: number;
}

/** What the host tells the defaults; injectable so tests do not depend on the machine. */
export interface SetupEnv {
  cwd: string;
  hostname: string;
  isRoot: boolean;
  homeDir: string;
  /** Non-loopback IPv4 addresses in interface order. */
  ipv4: string[];
  logger: Logger;
}

export function hostEnv(logger: Logger): SetupEnv {
  const ipv4: string[] = [];
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (!a.internal && (a.family === 'IPv4' || (a.family as unknown) === 4)) ipv4.push(a.address);
    }
  }
  return {
    cwd: process.cwd(),
    hostname: hostname(),
    isRoot: process.getuid?.() === 0,
    homeDir: homedir(),
    ipv4,
    logger,
  };
}

/** Everything `nodelet kubelet` starts from, merged: flags > nodelet config > KubeletConfiguration > defaults. */
export interface KubeletSetup {
  kubelet: KubeletPluginConfig;
  runtime: RuntimeChoice;
  /** The `plugins:` list of the nodelet config: plugins to load beside the runtime (or as it). */
  pluginList: PluginSpec[];
  /** `plugins.<name>` sections of the nodelet config (the map form of `plugins:`). */
  plugins: Record<string, Record<string, unknown>>;
  /** Origin prefix for plugin config errors, e.g. `/etc/nodelet.yaml: plugins`. */
  pluginsOrigin: string;
  /** CRI endpoints from a KubeletConfiguration, for CRI runtimes. */
  containerRuntimeEndpoint?: string;
  imageServiceEndpoint?: string;
  runtimeRequestTimeoutMs?: number;
  /** CRI endpoints from the flags: they win over the plugin's section and the KubeletConfiguration. */
  criFlags?: { runtimeEndpoint?: string; imageEndpoint?: string };
  config?: LoadedConfig;
}

export const DEFAULT_READ_ONLY_PORT = 10255;
export const DEFAULT_PORT = 10250;
export const DEFAULT_ADDRESS = '127.0.0.1';

/** Kubelet root and pod log directories: upstream's paths for root, under ~/.nodelet otherwise. */
export function defaultDirs(env: Pick<SetupEnv, 'isRoot' | 'homeDir'>): {
  rootDir: string;
  podLogsDir: string;
} {
  return env.isRoot
    ? { rootDir: '/var/lib/kubelet', podLogsDir: '/var/log/pods' }
    : {
        rootDir: join(env.homeDir, '.nodelet', 'kubelet'),
        podLogsDir: join(env.homeDir, '.nodelet', 'pods-logs'),
      };
}

/**
 * Upstream `--manifest-url-header`: `a:hello,b:again` and repeatable; a name given twice is sent with
 * both values, in order.
 */
export function parseHeaderFlags(values: readonly string[]): Record<string, string> {
  const headers: Record<string, string[]> = {};
  for (const value of values) {
    for (const pair of value.split(',')) {
      if (!pair.trim()) continue;
      const colon = pair.indexOf(':');
      const key = colon > 0 ? pair.slice(0, colon).trim() : '';
      if (!key) throw new CliError(`flag --manifest-url-header: ${JSON.stringify(pair)} is not Key:Value`);
      (headers[key] ??= []).push(pair.slice(colon + 1).trim());
    }
  }
  return joinHeaders(headers);
}

function joinHeaders(headers: Record<string, string | readonly string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = typeof v === 'string' ? v : v.join(', ');
  return out;
}

function positiveDuration(text: string, origin: string): number {
  const ms = parseGoDuration(text.trim());
  if (ms === undefined || ms <= 0)
    throw new CliError(
      `${origin} must be a positive duration such as 10s or 500ms, got ${JSON.stringify(text)}`,
    );
  return ms;
}

function nodeNameOf(value: string, origin: string): string {
  const name = value.trim().toLowerCase();
  if (!name) throw new CliError(`${origin} must not be empty`);
  return name;
}

export function resolveKubeletSetup(flags: KubeletFlags, env: SetupEnv): KubeletSetup {
  if (flags.nodeIp !== undefined && !isIP(flags.nodeIp)) {
    throw new CliError(`flag --node-ip must be an IP address, got ${JSON.stringify(flags.nodeIp)}`);
  }
  if (flags.address !== undefined && !isIP(flags.address)) {
    throw new CliError(`flag --address must be an IP address, got ${JSON.stringify(flags.address)}`);
  }

  const config = flags.config ? loadConfigFile(flags.config, env.logger) : undefined;
  const nc = config?.nodelet;
  const nk = nc?.kubelet ?? {};
  const kc = config?.kubelet ?? {};
  const fromCwd = (p: string) => resolve(env.cwd, p);
  const fromConfig = (p: string) => resolve(config!.dir, p);
  const defaults = defaultDirs(env);

  let runtime: RuntimeChoice;
  if (flags.runtime !== undefined)
    runtime = { name: flags.runtime, origin: 'flag --runtime', baseDir: env.cwd };
  else if (nc?.runtime !== undefined) {
    runtime = { name: nc.runtime, origin: `${config!.path}: field "runtime"`, baseDir: config!.dir };
  } else runtime = { name: 'fake', origin: DEFAULT_RUNTIME_ORIGIN, baseDir: env.cwd };
  checkRuntimeName(runtime);

  const nodeName =
    flags.hostnameOverride !== undefined
      ? nodeNameOf(flags.hostnameOverride, 'flag --hostname-override')
      : nc?.nodeName !== undefined
        ? nodeNameOf(nc.nodeName, `${config!.path}: field "nodeName"`)
        : nodeNameOf(env.hostname, 'the hostname');

  const headers =
    flags.manifestUrlHeader && flags.manifestUrlHeader.length > 0
      ? parseHeaderFlags(flags.manifestUrlHeader)
      : nk.manifestURLHeader
        ? joinHeaders(nk.manifestURLHeader)
        : kc.staticPodURLHeader;

  const kubelet: KubeletPluginConfig = {
    nodeName,
    hostIP: flags.nodeIp ?? env.ipv4[0] ?? '127.0.0.1',
    rootDir:
      flags.rootDir !== undefined
        ? fromCwd(flags.rootDir)
        : nk.rootDir
          ? fromConfig(nk.rootDir)
          : defaults.rootDir,
    podLogsDir: nk.podLogsDir
      ? fromConfig(nk.podLogsDir)
      : kc.podLogsDir
        ? resolve(kc.podLogsDir)
        : defaults.podLogsDir,
    readOnlyPort: flags.readOnlyPort ?? nk.readOnlyPort ?? kc.readOnlyPort ?? DEFAULT_READ_ONLY_PORT,
    address: flags.address ?? nk.address ?? kc.address ?? DEFAULT_ADDRESS,
  };
  const addressGiven = flags.address !== undefined || nk.address !== undefined || kc.address !== undefined;
  const podManifestPath =
    flags.podManifestPath !== undefined
      ? fromCwd(flags.podManifestPath)
      : nk.podManifestPath
        ? fromConfig(nk.podManifestPath)
        : kc.staticPodPath;
  const manifestUrl = flags.manifestUrl ?? nk.manifestURL ?? kc.staticPodURL;
  if (podManifestPath) kubelet.podManifestPath = podManifestPath;
  if (manifestUrl) kubelet.manifestUrl = manifestUrl;
  if (headers && Object.keys(headers).length > 0) kubelet.manifestUrlHeaders = headers;
  if (kc.fileCheckFrequencyMs !== undefined) kubelet.fileCheckFrequencyMs = kc.fileCheckFrequencyMs;
  if (kc.httpCheckFrequencyMs !== undefined) kubelet.httpCheckFrequencyMs = kc.httpCheckFrequencyMs;
  if (kc.syncFrequencyMs !== undefined) kubelet.syncFrequencyMs = kc.syncFrequencyMs;
  // Standalone, admission counts against it; joined, the Node's capacity carries it (apiServer below).
  if (kc.maxPods !== undefined) kubelet.maxPods = kc.maxPods;
  if (kc.seccompDefault !== undefined) kubelet.seccompDefault = kc.seccompDefault;
  if (kc.systemReserved || kc.kubeReserved || kc.evictionHard) {
    kubelet.reservation = {
      ...(kc.systemReserved ? { systemReserved: kc.systemReserved } : {}),
      ...(kc.kubeReserved ? { kubeReserved: kc.kubeReserved } : {}),
      ...(kc.evictionHard ? { evictionHard: kc.evictionHard } : {}),
    };
  }
  // The eviction manager's thresholds and image garbage collection (with a stats provider).
  if (kc.eviction) kubelet.eviction = kc.eviction;
  if (kc.imageGC) kubelet.imageGC = kc.imageGC;
  if (flags.containerGC) kubelet.containerGC = flags.containerGC;
  if (nk.evictionMonitoringPeriod !== undefined) {
    kubelet.evictionMonitoringPeriodMs = positiveDuration(
      nk.evictionMonitoringPeriod,
      `${config!.path}: field "kubelet.evictionMonitoringPeriod"`,
    );
  }
  if (kc.allowedUnsafeSysctls !== undefined) kubelet.allowedUnsafeSysctls = kc.allowedUnsafeSysctls;
  // Pods' DNS: resolv.conf from dnsPolicy, search paths and FQDNs under the cluster domain.
  if (kc.clusterDNS !== undefined) kubelet.clusterDNS = kc.clusterDNS;
  if (kc.clusterDomain !== undefined) kubelet.clusterDomain = kc.clusterDomain;
  if (kc.resolvConf !== undefined) kubelet.resolvConf = kc.resolvConf;
  // Simulated pods get their secret and token volumes as 0700 directories: no tmpfs mounted on the host
  // for pods that do not exist (every pod has one once admission adds kube-api-access).
  if (runtime.name === 'fake') kubelet.tmpfsVolumes = false;
  // Pod cgroups (cgroupsPerQOS, upstream's default) on a real runtime; simulated pods have none.
  if (runtime.name !== 'fake' && kc.cgroupsPerQOS !== false) {
    kubelet.cgroups = {
      driver: kc.cgroupDriver ?? 'cgroupfs',
      root: kc.cgroupRoot ?? '/',
      enforceNodeAllocatable: kc.enforceNodeAllocatable ?? ['pods'],
      ...(kc.podPidsLimit !== undefined ? { podPidsLimit: kc.podPidsLimit } : {}),
      ...(kc.cpuCFSQuota !== undefined ? { cpuCFSQuota: kc.cpuCFSQuota } : {}),
      ...(kc.qosReserved ? { qosReserved: kc.qosReserved } : {}),
    };
  } else if (kc.qosReserved) {
    env.logger.warn(
      'qosReserved limits the QoS cgroups: it has no effect without cgroupsPerQOS and a real runtime',
    );
  }
  // The kubelet's own OOM score (upstream's default -999) on a real node; a simulated node shares its
  // process with the control plane and other nodes, and sets it only when asked.
  const oomScoreAdj = kc.oomScoreAdj ?? (runtime.name !== 'fake' ? DEFAULT_KUBELET_OOM_SCORE_ADJ : undefined);
  if (oomScoreAdj !== undefined) kubelet.oomScoreAdj = oomScoreAdj;
  const apiServer = apiServerOptions(flags, fromCwd, kc);
  if (apiServer) kubelet.apiServer = apiServer;
  kubelet.server = serverConfig(flags, fromCwd, kc, config?.kubeletPath, kubelet.rootDir);
  if (!addressGiven) kubelet.address = defaultAddress(kubelet.server, env.logger, apiServer !== undefined);
  if (!apiServer && kubelet.server.enableServer !== false) {
    const { authentication, authorization } = kubelet.server;
    if (authorization.mode === 'Webhook' || authentication.webhook.enabled) {
      env.logger.warn(
        'the kubelet API uses webhook authentication or authorization but there is no API server (--kubeconfig): bearer tokens are refused and Webhook authorization fails every request; use --authorization-mode AlwaysAllow for a standalone kubelet',
      );
    }
  }

  const listed = Array.isArray(nc?.plugins) ? nc.plugins : undefined;
  const setup: KubeletSetup = {
    kubelet,
    runtime,
    pluginList: listed ? pluginSpecs(listed, config!.path, config!.dir) : [],
    plugins: listed ? {} : ((nc?.plugins as KubeletSetup['plugins'] | undefined) ?? {}),
    pluginsOrigin: config ? `${config.path}: plugins` : 'plugins',
  };
  if (config) setup.config = config;
  if (kc.containerRuntimeEndpoint) setup.containerRuntimeEndpoint = kc.containerRuntimeEndpoint;
  if (kc.imageServiceEndpoint) setup.imageServiceEndpoint = kc.imageServiceEndpoint;
  if (kc.runtimeRequestTimeoutMs !== undefined) setup.runtimeRequestTimeoutMs = kc.runtimeRequestTimeoutMs;
  if (flags.containerRuntimeEndpoint !== undefined || flags.imageServiceEndpoint !== undefined) {
    setup.criFlags = {
      ...(flags.containerRuntimeEndpoint !== undefined
        ? { runtimeEndpoint: flags.containerRuntimeEndpoint }
        : {}),
      ...(flags.imageServiceEndpoint !== undefined ? { imageEndpoint: flags.imageServiceEndpoint } : {}),
    };
  }
  return setup;
}

/**
 * Upstream's kubelet listens on 0.0.0.0, so the API server reaches it on the node's address. nodelet does
 * too when the API is authenticated and authorized; with the flags' defaults (anonymous requests allowed
 * everything) it stays on loopback, rather than open the node's logs and exec to the network.
 */
function defaultAddress(
  server: NonNullable<KubeletPluginConfig['server']>,
  logger: Logger,
  joined: boolean,
): string {
  const open = server.authentication.anonymous.enabled && server.authorization.mode === 'AlwaysAllow';
  if (!open || server.enableServer === false) return '0.0.0.0';
  // Joined, the API server cannot reach a loopback kubelet (kubectl logs, exec): say so by default.
  logger[joined ? 'warn' : 'debug'](
    'the kubelet API allows anonymous requests everything (--anonymous-auth, --authorization-mode AlwaysAllow), so it listens on 127.0.0.1 only; set --address to listen elsewhere, or secure it with --client-ca-file, --anonymous-auth=false and --authorization-mode Webhook (the defaults of a KubeletConfiguration file)',
  );
  return DEFAULT_ADDRESS;
}

/**
 * The kubelet API's configuration, as upstream merges it: a flag given wins; else the
 * KubeletConfiguration's field, with the file's defaults (webhook authentication on, anonymous off,
 * Webhook authorization); without a file, the flags' defaults (anonymous on, AlwaysAllow).
 */
function serverConfig(
  flags: KubeletFlags,
  fromCwd: (p: string) => string,
  kc: KubeletConfigValues,
  kubeletPath: string | undefined,
  rootDir: string,
): NonNullable<KubeletPluginConfig['server']> {
  const authentication = structuredClone(
    kc.authentication ?? {
      x509: {},
      webhook: { enabled: false, cacheTTLMs: 120_000 },
      anonymous: { enabled: true },
    },
  );
  const authorization = structuredClone(
    kc.authorization ?? {
      mode: 'AlwaysAllow' as const,
      webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
    },
  );
  if (flags.clientCaFile !== undefined) {
    if (flags.clientCaFile) authentication.x509.clientCAFile = fromCwd(flags.clientCaFile);
    else delete authentication.x509.clientCAFile;
  }
  if (flags.authenticationTokenWebhook !== undefined)
    authentication.webhook.enabled = flags.authenticationTokenWebhook;
  if (flags.anonymousAuth !== undefined) authentication.anonymous.enabled = flags.anonymousAuth;
  if (flags.authorizationMode !== undefined) authorization.mode = flags.authorizationMode;
  const tlsCertFile = flags.tlsCertFile !== undefined ? fromCwd(flags.tlsCertFile) : kc.tlsCertFile;
  const tlsPrivateKeyFile =
    flags.tlsPrivateKeyFile !== undefined ? fromCwd(flags.tlsPrivateKeyFile) : kc.tlsPrivateKeyFile;
  if (!tlsCertFile !== !tlsPrivateKeyFile) {
    const origin =
      flags.tlsCertFile !== undefined || flags.tlsPrivateKeyFile !== undefined
        ? 'flags --tls-cert-file and --tls-private-key-file'
        : `${kubeletPath}: fields "tlsCertFile" and "tlsPrivateKeyFile"`;
    throw new CliError(`${origin} go together: set both or neither`);
  }
  return {
    ...(kc.enableServer === false ? { enableServer: false } : {}),
    port: flags.port ?? kc.port ?? DEFAULT_PORT,
    ...(tlsCertFile ? { tlsCertFile, tlsPrivateKeyFile } : {}),
    certDir: flags.certDir !== undefined ? fromCwd(flags.certDir) : join(rootDir, 'pki'),
    ...tlsFlags(flags, kc),
    ...(kc.serverTLSBootstrap ? { serverTLSBootstrap: true } : {}),
    authentication,
    authorization,
  };
}

/** `--tls-min-version` / `--tls-cipher-suites` over the KubeletConfiguration's fields. */
function tlsFlags(
  flags: KubeletFlags,
  kc: KubeletConfigValues,
): { tlsMinVersion?: KubeletConfigValues['tlsMinVersion']; tlsCipherSuites?: string } {
  let tlsMinVersion = kc.tlsMinVersion;
  if (flags.tlsMinVersion !== undefined) {
    tlsMinVersion = tlsVersions[flags.tlsMinVersion] as KubeletConfigValues['tlsMinVersion'];
    if (!tlsMinVersion) {
      throw new CliError(
        `flag --tls-min-version must be one of ${Object.keys(tlsVersions).join(', ')}, got ${JSON.stringify(flags.tlsMinVersion)}`,
      );
    }
  }
  let tlsCipherSuites = kc.tlsCipherSuites;
  if (flags.tlsCipherSuites !== undefined) {
    try {
      tlsCipherSuites = opensslCiphers(flags.tlsCipherSuites);
    } catch (err) {
      throw new CliError(`flag --tls-cipher-suites: ${(err as Error).message}`);
    }
  }
  return { ...(tlsMinVersion ? { tlsMinVersion } : {}), ...(tlsCipherSuites ? { tlsCipherSuites } : {}) };
}

/**
 * `--kubeconfig`, `--bootstrap-kubeconfig`, `--node-labels`, `--register-with-taints`: how the kubelet
 * joins a cluster, or undefined to run standalone. Labels and taints without a kubeconfig are refused.
 */
function apiServerOptions(
  flags: KubeletFlags,
  fromCwd: (p: string) => string,
  kc: KubeletConfigValues,
): ApiServerOptions | undefined {
  const joining = flags.kubeconfig !== undefined || flags.bootstrapKubeconfig !== undefined;
  if (!joining) {
    for (const [flag, value] of [
      ['--node-labels', flags.nodeLabels],
      ['--register-with-taints', flags.registerWithTaints],
    ] as const) {
      if (value && value.length > 0)
        throw new CliError(`flag ${flag} needs --kubeconfig: there is no API server to register with`);
    }
    return undefined;
  }
  const options: ApiServerOptions = {};
  if (flags.kubeconfig !== undefined) options.kubeconfig = fromCwd(flags.kubeconfig);
  if (flags.bootstrapKubeconfig !== undefined)
    options.bootstrapKubeconfig = fromCwd(flags.bootstrapKubeconfig);
  if (kc.maxPods !== undefined) options.maxPods = kc.maxPods;
  // KubeletConfiguration fields of the API connection, node status and lease.
  for (const key of [
    'kubeAPIQPS',
    'kubeAPIBurst',
    'eventRecordQPS',
    'eventBurst',
    'nodeStatusUpdateFrequencyMs',
    'nodeStatusReportFrequencyMs',
    'nodeLeaseDurationSeconds',
  ] as const) {
    if (kc[key] !== undefined) options[key] = kc[key];
  }
  try {
    const labels = Object.assign({}, ...(flags.nodeLabels ?? []).map(parseLabels));
    if (Object.keys(labels).length > 0) options.nodeLabels = labels;
  } catch (err) {
    throw new CliError(`flag --node-labels: ${(err as Error).message}`);
  }
  try {
    const taints = (flags.registerWithTaints ?? []).flatMap(parseTaints);
    if (taints.length > 0) options.registerWithTaints = taints;
  } catch (err) {
    throw new CliError(`flag --register-with-taints: ${(err as Error).message}`);
  }
  return options;
}

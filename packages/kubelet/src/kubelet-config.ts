import { isIP } from 'node:net';
import { dirname, resolve } from 'node:path';
import { ConfigError, type Logger, readYamlFile } from '@nodelet/kernel';
import { parseDuration } from './duration.js';
import { type AuthenticationConfig, defaultAuthentication } from './server/authn.js';
import { type AuthorizationConfig, defaultAuthorization } from './server/authz.js';
import { opensslCiphers, tlsVersions } from './server/tls-options.js';
import { SysctlAllowlist } from './sysctl-admission.js';
import { type EvictionThreshold, parseEvictionThresholds } from './cm/node-allocatable.js';
import { evictionConfig, type EvictionSettings } from './eviction/thresholds.js';
import { DEFAULT_IMAGE_GC_POLICY, type ImageGCPolicy, validateImageGCPolicy } from './images/image-gc.js';
import { quantityValue } from '@nodelet/api';

/**
 * The upstream KubeletConfiguration file (kubelet.config.k8s.io/v1beta1, `--config`). Fields nodelet
 * implements are read; every other known field is reported once by name — never silently ignored —
 * and a field upstream does not have is an error.
 */
export interface KubeletConfigValues {
  staticPodPath?: string;
  staticPodURL?: string;
  staticPodURLHeader?: Record<string, string>;
  fileCheckFrequencyMs?: number;
  httpCheckFrequencyMs?: number;
  syncFrequencyMs?: number;
  readOnlyPort?: number;
  address?: string;
  podLogsDir?: string;
  maxPods?: number;
  /** RuntimeDefault seccomp for containers that set no profile. */
  seccompDefault?: boolean;
  /** Resources held back for the OS and for the kubelet and runtime (node allocatable). */
  systemReserved?: Record<string, string>;
  kubeReserved?: Record<string, string>;
  /** Hard eviction thresholds; given, they replace upstream's defaults (as upstream). */
  evictionHard?: EvictionThreshold[];
  /** The eviction manager's settings (`evictionHard`, `evictionSoft`, grace periods, minimum reclaim, …). */
  eviction?: EvictionSettings;
  /** `imageGCHighThresholdPercent`, `imageGCLowThresholdPercent`, `imageMinimumGCAge`, `imageMaximumGCAge`. */
  imageGC?: Partial<ImageGCPolicy>;
  /** Unsafe (namespaced) sysctls pods may set; `prefix*` patterns. */
  allowedUnsafeSysctls?: string[];
  /** The kubepods / QoS / pod cgroups (default true on a real runtime). */
  cgroupsPerQOS?: boolean;
  cgroupDriver?: 'cgroupfs' | 'systemd';
  /** Where kubepods goes (default `/`). */
  cgroupRoot?: string;
  /** `pods` limits kubepods to node allocatable (default [pods]); `none` enforces nothing. */
  enforceNodeAllocatable?: string[];
  podPidsLimit?: number;
  cpuCFSQuota?: boolean;
  containerRuntimeEndpoint?: string;
  imageServiceEndpoint?: string;
  runtimeRequestTimeoutMs?: number;
  nodeStatusUpdateFrequencyMs?: number;
  nodeStatusReportFrequencyMs?: number;
  nodeLeaseDurationSeconds?: number;
  kubeAPIQPS?: number;
  kubeAPIBurst?: number;
  eventRecordQPS?: number;
  eventBurst?: number;
  /** The HTTPS server (`enableServer`, default true) on `port` (10250; 0 picks a free one). */
  enableServer?: boolean;
  port?: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** Node's name of `tlsMinVersion` (VersionTLS12 → TLSv1.2). */
  tlsMinVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  /** `tlsCipherSuites` (Go names) as an OpenSSL cipher list. */
  tlsCipherSuites?: string;
  /** Request the serving certificate with a CSR (`kubernetes.io/kubelet-serving`) instead of self-signing. */
  serverTLSBootstrap?: boolean;
  /** Always set from a file, with the file's defaults (webhook on, anonymous off). */
  authentication?: AuthenticationConfig;
  /** Always set from a file, with the file's defaults (mode Webhook). */
  authorization?: AuthorizationConfig;
  /** The cluster DNS service's IPs: nameservers of ClusterFirst pods. */
  clusterDNS?: string[];
  /** The cluster's domain (`cluster.local`): pods' search path and FQDNs. */
  clusterDomain?: string;
  /** The node's resolver file, the base of pods' DNS ('' disables it; default /etc/resolv.conf). */
  resolvConf?: string;
}

type Reader = (value: unknown, field: string, out: KubeletConfigValues, baseDir: string) => void;

const str = (field: string, value: unknown): string => {
  if (typeof value !== 'string') throw new Error(`field "${field}" must be a string`);
  return value;
};
const int = (field: string, value: unknown, min: number, max: number): number => {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new Error(`field "${field}" must be an integer from ${min} to ${max}`);
  }
  return value;
};

const num = (field: string, value: unknown): number => {
  if (typeof value !== 'number' || !(value > 0)) throw new Error(`field "${field}" must be a number above 0`);
  return value;
};
const positive = (field: string, ms: number): number => {
  if (!(ms > 0)) throw new Error(`field "${field}" must be a duration above 0 such as "10s"`);
  return ms;
};

const bool = (field: string, value: unknown): boolean => {
  if (typeof value !== 'boolean') throw new Error(`field "${field}" must be true or false`);
  return value;
};

/** Reads a nested mapping field by field; a field it does not know is an error naming its full path. */
function mapping(
  field: string,
  value: unknown,
  fields: Record<string, (v: unknown, path: string) => void>,
): void {
  if (value === null || value === undefined) return;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new Error(`field "${field}" must be a mapping`);
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const read = fields[k];
    if (!read) {
      throw new Error(`unknown field "${field}.${k}"; known: ${Object.keys(fields).join(', ')}`);
    }
    read(v, `${field}.${k}`);
  }
}

function readAuthentication(value: unknown, field: string, base: string): AuthenticationConfig {
  const out = defaultAuthentication();
  mapping(field, value, {
    x509: (v, f) =>
      mapping(f, v, {
        clientCAFile: (file, ff) => {
          const path = str(ff, file);
          if (path) out.x509.clientCAFile = resolve(base, path);
        },
      }),
    webhook: (v, f) =>
      mapping(f, v, {
        enabled: (b, ff) => (out.webhook.enabled = bool(ff, b)),
        cacheTTL: (d, ff) => (out.webhook.cacheTTLMs = parseDuration(str(ff, d), ff)),
      }),
    anonymous: (v, f) => mapping(f, v, { enabled: (b, ff) => (out.anonymous.enabled = bool(ff, b)) }),
  });
  return out;
}

function readAuthorization(value: unknown, field: string): AuthorizationConfig {
  const out = defaultAuthorization();
  mapping(field, value, {
    mode: (v, f) => {
      if (v !== 'Webhook' && v !== 'AlwaysAllow') {
        throw new Error(`field "${f}" must be Webhook or AlwaysAllow, got ${JSON.stringify(v)}`);
      }
      out.mode = v;
    },
    webhook: (v, f) =>
      mapping(f, v, {
        cacheAuthorizedTTL: (d, ff) => (out.webhook.cacheAuthorizedTTLMs = parseDuration(str(ff, d), ff)),
        cacheUnauthorizedTTL: (d, ff) => (out.webhook.cacheUnauthorizedTTLMs = parseDuration(str(ff, d), ff)),
      }),
  });
  return out;
}

const implemented: Record<string, Reader> = {
  staticPodPath: (v, f, o, base) => (o.staticPodPath = resolve(base, str(f, v))),
  staticPodURL: (v, f, o) => (o.staticPodURL = str(f, v)),
  staticPodURLHeader: (v, _f, o) => {
    const headers: Record<string, string> = {};
    for (const [k, vals] of Object.entries((v ?? {}) as Record<string, unknown>)) {
      headers[k] = (Array.isArray(vals) ? vals : [vals]).map(String).join(', ');
    }
    o.staticPodURLHeader = headers;
  },
  fileCheckFrequency: (v, f, o) => (o.fileCheckFrequencyMs = parseDuration(str(f, v), f)),
  httpCheckFrequency: (v, f, o) => (o.httpCheckFrequencyMs = parseDuration(str(f, v), f)),
  syncFrequency: (v, f, o) => (o.syncFrequencyMs = parseDuration(str(f, v), f)),
  readOnlyPort: (v, f, o) => (o.readOnlyPort = int(f, v, 0, 65535)),
  address: (v, f, o) => (o.address = str(f, v)),
  podLogsDir: (v, f, o) => (o.podLogsDir = str(f, v)),
  containerRuntimeEndpoint: (v, f, o) => (o.containerRuntimeEndpoint = str(f, v)),
  imageServiceEndpoint: (v, f, o) => (o.imageServiceEndpoint = str(f, v)),
  runtimeRequestTimeout: (v, f, o) => (o.runtimeRequestTimeoutMs = parseDuration(str(f, v), f)),
  nodeStatusUpdateFrequency: (v, f, o) =>
    (o.nodeStatusUpdateFrequencyMs = positive(f, parseDuration(str(f, v), f))),
  nodeStatusReportFrequency: (v, f, o) =>
    (o.nodeStatusReportFrequencyMs = positive(f, parseDuration(str(f, v), f))),
  nodeLeaseDurationSeconds: (v, f, o) => (o.nodeLeaseDurationSeconds = int(f, v, 1, 3600)),
  kubeAPIQPS: (v, f, o) => (o.kubeAPIQPS = num(f, v)),
  kubeAPIBurst: (v, f, o) => (o.kubeAPIBurst = int(f, v, 1, 1_000_000)),
  eventRecordQPS: (v, f, o) => (o.eventRecordQPS = num(f, v)),
  eventBurst: (v, f, o) => (o.eventBurst = int(f, v, 1, 1_000_000)),
  maxPods: (v, f, o) => (o.maxPods = int(f, v, 1, 1_000_000)),
  seccompDefault: (v, f, o) => (o.seccompDefault = bool(f, v)),
  systemReserved: (v, f, o) => (o.systemReserved = reservedResources(v, f)),
  kubeReserved: (v, f, o) => (o.kubeReserved = reservedResources(v, f)),
  evictionHard: (v, f, o) => {
    o.evictionHard = parseEvictionThresholds(stringMap(v, f), f);
    (o.eviction ??= {}).evictionHard = stringMap(v, f);
  },
  evictionSoft: (v, f, o) => ((o.eviction ??= {}).evictionSoft = stringMap(v, f)),
  evictionSoftGracePeriod: (v, f, o) => {
    const ms: Record<string, number> = {};
    for (const [signal, d] of Object.entries(stringMap(v, f)))
      ms[signal] = parseDuration(d, `${f}.${signal}`);
    (o.eviction ??= {}).evictionSoftGracePeriod = ms;
  },
  evictionMinimumReclaim: (v, f, o) => ((o.eviction ??= {}).evictionMinimumReclaim = stringMap(v, f)),
  evictionMaxPodGracePeriod: (v, f, o) =>
    ((o.eviction ??= {}).evictionMaxPodGracePeriod = int(f, v, 0, 2 ** 31 - 1)),
  evictionPressureTransitionPeriod: (v, f, o) =>
    ((o.eviction ??= {}).evictionPressureTransitionPeriodMs = parseDuration(str(f, v), f)),
  imageGCHighThresholdPercent: (v, f, o) => ((o.imageGC ??= {}).highThresholdPercent = int(f, v, 0, 100)),
  imageGCLowThresholdPercent: (v, f, o) => ((o.imageGC ??= {}).lowThresholdPercent = int(f, v, 0, 100)),
  imageMinimumGCAge: (v, f, o) => ((o.imageGC ??= {}).minAgeMs = parseDuration(str(f, v), f)),
  imageMaximumGCAge: (v, f, o) => ((o.imageGC ??= {}).maxAgeMs = parseDuration(str(f, v), f)),
  allowedUnsafeSysctls: (v, f, o) => {
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new Error(`field "${f}" must be a list of sysctl names or patterns ending in *`);
    }
    new SysctlAllowlist(v as string[]); // refuses, by name, one the kernel does not namespace
    o.allowedUnsafeSysctls = v as string[];
  },
  cgroupsPerQOS: (v, f, o) => (o.cgroupsPerQOS = bool(f, v)),
  cgroupDriver: (v, f, o) => {
    const driver = str(f, v);
    if (driver !== 'cgroupfs' && driver !== 'systemd')
      throw new Error(
        `field "${f}" must be cgroupfs or systemd, as the container runtime's; got "${driver}"`,
      );
    o.cgroupDriver = driver;
  },
  cgroupRoot: (v, f, o) => {
    const root = str(f, v);
    if (!root.startsWith('/')) throw new Error(`field "${f}" must be an absolute cgroup path such as "/"`);
    o.cgroupRoot = root;
  },
  enforceNodeAllocatable: (v, f, o) => (o.enforceNodeAllocatable = enforcement(v, f)),
  podPidsLimit: (v, f, o) => (o.podPidsLimit = int(f, v, -1, 4_194_304)),
  cpuCFSQuota: (v, f, o) => (o.cpuCFSQuota = bool(f, v)),
  enableServer: (v, f, o) => (o.enableServer = bool(f, v)),
  port: (v, f, o) => (o.port = int(f, v, 0, 65535)),
  tlsCertFile: (v, f, o, base) => (o.tlsCertFile = resolve(base, str(f, v))),
  tlsPrivateKeyFile: (v, f, o, base) => (o.tlsPrivateKeyFile = resolve(base, str(f, v))),
  tlsMinVersion: (v, f, o) => {
    const version = tlsVersions[str(f, v)];
    if (!version)
      throw new Error(
        `field "${f}" must be one of ${Object.keys(tlsVersions).join(', ')}, got ${JSON.stringify(v)}`,
      );
    o.tlsMinVersion = version;
  },
  tlsCipherSuites: (v, f, o) => {
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new Error(`field "${f}" must be a list of cipher suite names`);
    }
    try {
      o.tlsCipherSuites = opensslCiphers(v as string[]);
    } catch (err) {
      throw new Error(`field "${f}": ${(err as Error).message}`);
    }
  },
  serverTLSBootstrap: (v, f, o) => (o.serverTLSBootstrap = bool(f, v)),
  authentication: (v, f, o, base) => (o.authentication = readAuthentication(v, f, base)),
  authorization: (v, f, o) => (o.authorization = readAuthorization(v, f)),
  clusterDNS: (v, f, o) => {
    if (!Array.isArray(v)) throw new Error(`field "${f}" must be a list of IP addresses`);
    o.clusterDNS = v.map((ip, i) => {
      if (typeof ip !== 'string' || isIP(ip) === 0) {
        throw new Error(`field "${f}[${i}]": ${JSON.stringify(ip)} is not an IP address`);
      }
      return ip;
    });
  },
  clusterDomain: (v, f, o) => (o.clusterDomain = str(f, v)),
  resolvConf: (v, f, o, base) => {
    const path = str(f, v);
    o.resolvConf = path === '' ? '' : resolve(base, path);
  },
};

/** Upstream v1beta1 fields nodelet does not implement yet: accepted, reported once by name. */
const notYetImplemented = new Set([
  'rotateCertificates',
  'registryPullQPS',
  'registryBurst',
  'enableDebuggingHandlers',
  'enableContentionProfiling',
  'healthzPort',
  'healthzBindAddress',
  'oomScoreAdj',
  'streamingConnectionIdleTimeout',
  'volumeStatsAggPeriod',
  'kubeletCgroups',
  'systemCgroups',
  'cpuManagerPolicy',
  'cpuManagerPolicyOptions',
  'cpuManagerReconcilePeriod',
  'memoryManagerPolicy',
  'topologyManagerPolicy',
  'topologyManagerScope',
  'topologyManagerPolicyOptions',
  'qosReserved',
  'hairpinMode',
  'podCIDR',
  'runOnce',
  'cpuCFSQuotaPeriod',
  'nodeStatusMaxImages',
  'maxOpenFiles',
  'contentType',
  'serializeImagePulls',
  'maxParallelImagePulls',
  'podsPerCore',
  'enableControllerAttachDetach',
  'protectKernelDefaults',
  'makeIPTablesUtilChains',
  'iptablesMasqueradeBit',
  'iptablesDropBit',
  'featureGates',
  'failSwapOn',
  'memorySwap',
  'containerLogMaxSize',
  'containerLogMaxFiles',
  'containerLogMaxWorkers',
  'containerLogMonitorInterval',
  'configMapAndSecretChangeDetectionStrategy',
  'reservedSystemCPUs',
  'showHiddenMetricsForVersion',
  'systemReservedCgroup',
  'kubeReservedCgroup',
  'volumePluginDir',
  'providerID',
  'kernelMemcgNotification',
  'logging',
  'enableSystemLogHandler',
  'enableSystemLogQuery',
  'shutdownGracePeriod',
  'shutdownGracePeriodCriticalPods',
  'shutdownGracePeriodByPodPriority',
  'crashLoopBackOff',
  'reservedMemory',
  'enableProfilingHandler',
  'enableDebugFlagsHandler',
  'memoryThrottlingFactor',
  'registerWithTaints',
  'registerNode',
  'tracing',
  'localStorageCapacityIsolation',
  'imageServiceEndpoint',
  'failCgroupV1',
  'userNamespaces',
  'mergeDefaultEvictionSettings',
  'imagePullCredentialsVerificationPolicy',
  'preloadedImagesVerificationAllowlist',
  'singleProcessOOMKill',
  'staticPodURLHeader',
]);

/**
 * `enforceNodeAllocatable` (upstream's validation): `pods`, `system-reserved`, `kube-reserved`, or
 * `none` alone. Only `pods` is enforced by nodelet: the other two need their own cgroups
 * (`systemReservedCgroup`, `kubeReservedCgroup`), which it does not manage yet.
 */
function enforcement(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
    throw new Error(`field "${field}" must be a list such as [pods]`);
  const list = v as string[];
  for (const key of list) {
    if (key === 'system-reserved' || key === 'kube-reserved') {
      throw new Error(
        `field "${field}": "${key}" needs ${key === 'system-reserved' ? 'systemReservedCgroup' : 'kubeReservedCgroup'}, which nodelet does not manage yet; use [pods]`,
      );
    }
    if (key !== 'pods' && key !== 'none')
      throw new Error(
        `field "${field}": unknown option "${key}" (pods, system-reserved, kube-reserved or none)`,
      );
  }
  if (list.includes('none') && list.length > 1)
    throw new Error(`field "${field}": "none" cannot be combined with other options`);
  return list.filter((k) => k !== 'none');
}

/** A mapping of strings (`cpu: 500m`). */
function stringMap(v: unknown, field: string): Record<string, string> {
  if (
    typeof v !== 'object' ||
    v === null ||
    Array.isArray(v) ||
    Object.values(v).some((x) => typeof x !== 'string')
  ) {
    throw new Error(`field "${field}" must be a mapping of names to strings (e.g. memory: 500Mi)`);
  }
  return v as Record<string, string>;
}

/** `systemReserved`/`kubeReserved`: cpu, memory, ephemeral-storage and pid, each a valid quantity. */
function reservedResources(v: unknown, field: string): Record<string, string> {
  const map = stringMap(v, field);
  for (const [resource, q] of Object.entries(map)) {
    if (!['cpu', 'memory', 'ephemeral-storage', 'pid'].includes(resource)) {
      throw new Error(
        `field "${field}": "${resource}" cannot be reserved (cpu, memory, ephemeral-storage or pid)`,
      );
    }
    try {
      if (quantityValue(q) < 0) throw new Error('negative');
    } catch {
      throw new Error(`field "${field}.${resource}": "${q}" is not a non-negative quantity`);
    }
  }
  return map;
}

export function readKubeletConfig(path: string, logger: Logger): KubeletConfigValues {
  const raw = readYamlFile(path);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${path}: a KubeletConfiguration must be a YAML mapping`);
  }
  const doc = raw as Record<string, unknown>;
  if (doc.kind !== 'KubeletConfiguration' || doc.apiVersion !== 'kubelet.config.k8s.io/v1beta1') {
    throw new ConfigError(
      `${path}: expected apiVersion "kubelet.config.k8s.io/v1beta1" and kind "KubeletConfiguration", got apiVersion ${JSON.stringify(doc.apiVersion)} and kind ${JSON.stringify(doc.kind)}`,
    );
  }
  const out: KubeletConfigValues = {};
  const base = dirname(resolve(path));
  for (const [field, value] of Object.entries(doc)) {
    if (field === 'apiVersion' || field === 'kind') continue;
    const reader = implemented[field];
    if (reader) {
      try {
        reader(value, field, out, base);
      } catch (err) {
        throw new ConfigError(`${path}: ${(err as Error).message}`);
      }
    } else if (notYetImplemented.has(field)) {
      logger.once(
        `kubelet-config:${field}`,
        'warn',
        `${path}: KubeletConfiguration field "${field}" is not supported by nodelet yet; ignoring it`,
      );
    } else {
      throw new ConfigError(
        `${path}: unknown KubeletConfiguration field "${field}"; remove it or check its spelling`,
      );
    }
  }
  if ((out.tlsCertFile === undefined) !== (out.tlsPrivateKeyFile === undefined)) {
    throw new ConfigError(
      `${path}: fields "tlsCertFile" and "tlsPrivateKeyFile" go together: set both or neither`,
    );
  }
  try {
    // Soft thresholds need their grace periods, minimum reclaims a known signal: checked as a whole.
    if (out.eviction) evictionConfig(out.eviction);
    if (out.imageGC) validateImageGCPolicy({ ...DEFAULT_IMAGE_GC_POLICY, ...out.imageGC });
  } catch (err) {
    throw new ConfigError(`${path}: ${(err as Error).message}`);
  }
  // The file's defaults, which differ from the flags' (upstream: anonymous off, authorization Webhook).
  out.authentication ??= defaultAuthentication();
  out.authorization ??= defaultAuthorization();
  out.readOnlyPort ??= 0;
  // As upstream, for backward compatibility: an explicit update frequency is also the report frequency
  // unless that is set too.
  if (out.nodeStatusUpdateFrequencyMs !== undefined && out.nodeStatusReportFrequencyMs === undefined) {
    out.nodeStatusReportFrequencyMs = out.nodeStatusUpdateFrequencyMs;
  }
  return out;
}

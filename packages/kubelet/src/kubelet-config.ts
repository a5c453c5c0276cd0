import { isIP } from 'node:net';
import { dirname, resolve } from 'node:path';
import { ConfigError, type Logger, readYamlFile } from '@nodelet/kernel';
import { parseDuration } from './duration.js';
import { type AuthenticationConfig, defaultAuthentication } from './server/authn.js';
import { type AuthorizationConfig, defaultAuthorization } from './server/authz.js';
import { opensslCiphers, tlsVersions } from './server/tls-options.js';
import { SysctlAllowlist } from './sysctl-admission.js';
import { bool, int, mapping, num, positive, type Reader, str } from './kubelet-config-fields.js';
import {
  type KubeletResourceValues,
  resourceReaders,
  validateResourceValues,
} from './kubelet-config-resources.js';

/**
 * The upstream KubeletConfiguration file (kubelet.config.k8s.io/v1beta1, `--config`). Fields nodelet
 * implements are read; every other known field is reported once by name — never silently ignored —
 * and a field upstream does not have is an error.
 */
export interface KubeletConfigValues extends KubeletResourceValues {
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
  /** Unsafe (namespaced) sysctls pods may set; `prefix*` patterns. */
  allowedUnsafeSysctls?: string[];
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
  ...resourceReaders,
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
  allowedUnsafeSysctls: (v, f, o) => {
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new Error(`field "${f}" must be a list of sysctl names or patterns ending in *`);
    }
    new SysctlAllowlist(v as string[]); // refuses, by name, one the kernel does not namespace
    o.allowedUnsafeSysctls = v as string[];
  },
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
    validateResourceValues(out);
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

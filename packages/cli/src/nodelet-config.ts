import { dirname, resolve } from 'node:path';
import { ConfigError, type Logger, readYamlFile, validateConfig } from '@nodelet/kernel';
import { type KubeletConfigValues, readKubeletConfig } from '@nodelet/kubelet';

/**
 * nodelet's own configuration file (`--config nodelet.yaml`):
 *
 *     apiVersion: nodelet.dev/v1alpha1
 *     kind: NodeletConfiguration
 *     nodeName: node1
 *     runtime: fake                     # fake | containerd | crio | <npm package or path>
 *     kubelet:
 *       podManifestPath: ./manifests    # relative paths are relative to this file
 *       kubeletConfig: ./kubelet-config.yaml
 *       evictionMonitoringPeriod: 10s   # how often eviction thresholds are checked (upstream's 10 s)
 *     plugins:                          # the kubelet's plugins: a built-in name, npm package or path
 *     - use: fake                       # (same as runtime: fake, with its configuration)
 *       config: { pullLatencyMs: 200 }
 *     - use: ./probes/my-probes.mjs     # a third-party plugin: a probe handler, a CNI network, …
 *       config: { table: ./health.yaml }
 *     proxy:                            # nodelet proxy --config, nodelet up --config
 *       mode: nftables                  # iptables | nftables | ipvs | userspace | none (nodelet up)
 *       kubeconfig: ./proxy.kubeconfig  # list + watch Services and EndpointSlices there
 *       nftables: { minSyncPeriod: 1s, syncPeriod: 30s }
 *       plugins: [{ use: nodelet-proxy-ebpf, config: {} }]  # the proxy's plugins (a backend, …)
 *
 * `runtime:` and `proxy.mode:` expand into an entry of their list; an entry that provides the
 * capability they would fill (`cri.runtime`, `proxy.backend`) takes the slot when they are not set.
 * `plugins:` may also be a map of configurations by plugin name (`plugins: { runtime-fake: {…} }`),
 * for the plugins `runtime:` loads.
 *
 * `--config` also takes an upstream KubeletConfiguration directly. The `proxy:` section is a subset of
 * upstream's KubeProxyConfiguration, with the same field names, plus nodelet's own (`services`,
 * `kubeProxyConfig`, `userspace`); `nodelet kubelet` ignores it, so one file can serve a node's kubelet
 * and proxy.
 */
export const NODELET_API_VERSION = 'nodelet.dev/v1alpha1';
export const NODELET_KIND = 'NodeletConfiguration';
export const KUBELET_API_VERSION = 'kubelet.config.k8s.io/v1beta1';

export interface NodeletConfiguration {
  apiVersion: typeof NODELET_API_VERSION;
  kind: typeof NODELET_KIND;
  nodeName?: string;
  runtime?: string;
  kubelet?: {
    podManifestPath?: string;
    manifestURL?: string;
    manifestURLHeader?: Record<string, string | string[]>;
    kubeletConfig?: string;
    rootDir?: string;
    podLogsDir?: string;
    readOnlyPort?: number;
    address?: string;
    /** How often the eviction manager reads the stats (a Go duration; upstream's constant 10 s). */
    evictionMonitoringPeriod?: Duration;
  };
  /** A list of plugins to load, or (the older form) configurations by plugin name. */
  plugins?: PluginEntry[] | Record<string, Record<string, unknown>>;
  proxy?: ProxySection;
}

/** One entry of a `plugins:` list. */
export interface PluginEntry {
  /** A built-in name (fake, containerd, iptables, …), an npm package, or a path relative to the file. */
  use: string;
  config?: Record<string, unknown>;
}

/** Go duration text: `1s`, `500ms`, `1m30s`. */
type Duration = string;

export interface ProxySection {
  mode?: string;
  kubeconfig?: string;
  master?: string;
  services?: string;
  kubeProxyConfig?: string;
  hostnameOverride?: string;
  nodeIPs?: string[];
  clusterCIDR?: string;
  healthzBindAddress?: string;
  metricsBindAddress?: string;
  nodePortAddresses?: string[];
  masqueradeAll?: boolean;
  minSyncPeriod?: Duration;
  syncPeriod?: Duration;
  iptables?: {
    backend?: 'auto' | 'nft' | 'legacy';
    masqueradeAll?: boolean;
    masqueradeBit?: number;
    minSyncPeriod?: Duration;
    syncPeriod?: Duration;
  };
  nftables?: { minSyncPeriod?: Duration; syncPeriod?: Duration };
  ipvs?: { scheduler?: string; minSyncPeriod?: Duration; syncPeriod?: Duration };
  userspace?: { listenAddress?: string };
  plugins?: PluginEntry[];
}

const path = { type: 'string', minLength: 1 };
const duration = { type: 'string', minLength: 1, description: 'a Go duration: 1s, 500ms, 1m30s' };
const syncPeriods = { minSyncPeriod: duration, syncPeriod: duration };

const pluginEntrySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['use'],
  properties: {
    use: {
      type: 'string',
      minLength: 1,
      description: 'a built-in plugin name, an npm package, or a path (relative to this file)',
    },
    config: { type: 'object', description: "the plugin's configuration, checked against its schema" },
  },
} as const;

/** The `proxy:` section: what `nodelet proxy --config` and `nodelet up --config` read. */
export const proxySectionSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    mode: {
      type: 'string',
      minLength: 1,
      description:
        'iptables, nftables, ipvs, userspace (none: no proxy in nodelet up), or a plugin package or path',
    },
    kubeconfig: { ...path, description: 'list and watch Services and EndpointSlices on this cluster' },
    master: { type: 'string', minLength: 1, description: 'API server URL; overrides the kubeconfig server' },
    services: {
      ...path,
      description: 'Services and EndpointSlices from YAML files instead of an API server',
    },
    kubeProxyConfig: { ...path, description: 'an upstream KubeProxyConfiguration read first' },
    hostnameOverride: { type: 'string', minLength: 1, description: 'node name of the proxy' },
    nodeIPs: { type: 'array', items: { type: 'string' } },
    clusterCIDR: { type: 'string' },
    healthzBindAddress: { type: 'string', description: 'host:port of /healthz; "" disables it' },
    metricsBindAddress: { type: 'string', description: 'host:port of /metrics; "" disables it' },
    nodePortAddresses: { type: 'array', items: { type: 'string' } },
    masqueradeAll: { type: 'boolean' },
    ...syncPeriods,
    iptables: {
      type: 'object',
      additionalProperties: false,
      properties: {
        backend: { enum: ['auto', 'nft', 'legacy'] },
        masqueradeAll: { type: 'boolean' },
        masqueradeBit: { type: 'integer', minimum: 0, maximum: 31 },
        ...syncPeriods,
      },
    },
    nftables: { type: 'object', additionalProperties: false, properties: { ...syncPeriods } },
    ipvs: {
      type: 'object',
      additionalProperties: false,
      properties: { scheduler: { enum: ['rr', 'lc', 'wrr', 'sh', 'dh'] }, ...syncPeriods },
    },
    userspace: {
      type: 'object',
      additionalProperties: false,
      properties: { listenAddress: { type: 'string', minLength: 1 } },
    },
    plugins: { type: 'array', items: pluginEntrySchema, description: "the proxy's plugins" },
  },
} as const;

export const nodeletConfigSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['apiVersion', 'kind'],
  properties: {
    apiVersion: { enum: [NODELET_API_VERSION] },
    kind: { enum: [NODELET_KIND] },
    nodeName: {
      type: 'string',
      minLength: 1,
      description: 'the node name; default: the hostname in lower case',
    },
    runtime: {
      type: 'string',
      minLength: 1,
      description: 'fake, containerd, crio, or an npm package or path exporting a nodelet plugin',
    },
    kubelet: {
      type: 'object',
      additionalProperties: false,
      properties: {
        podManifestPath: { ...path, description: 'static pod manifests directory (staticPodPath)' },
        manifestURL: { type: 'string', minLength: 1, description: 'URL of pod manifests (staticPodURL)' },
        manifestURLHeader: {
          type: 'object',
          additionalProperties: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
        },
        kubeletConfig: { ...path, description: 'path of an upstream KubeletConfiguration file' },
        rootDir: { ...path, description: 'kubelet root directory (volumes)' },
        podLogsDir: { ...path, description: 'pod log directory' },
        readOnlyPort: {
          type: 'integer',
          minimum: 0,
          maximum: 65535,
          description: 'read-only HTTP port; 0 disables it',
        },
        address: { type: 'string', minLength: 1, description: 'address the read-only port binds to' },
        evictionMonitoringPeriod: {
          ...duration,
          description: 'how often the eviction manager checks its thresholds (default 10s)',
        },
      },
    },
    plugins: {
      // A list of { use, config }; or, the older form, each plugin's configuration by plugin name.
      type: ['array', 'object'],
      description: 'the plugins to load ({ use, config }), or configurations by plugin name',
      items: pluginEntrySchema,
      additionalProperties: { type: 'object' },
    },
    proxy: proxySectionSchema,
  },
} as const;

export interface LoadedConfig {
  /** The file given to --config, as given. */
  path: string;
  /** Its directory: relative paths inside it are resolved against this. */
  dir: string;
  nodelet?: NodeletConfiguration;
  /** The KubeletConfiguration: the --config file itself, or the one nodelet.yaml names. */
  kubelet?: KubeletConfigValues;
  kubeletPath?: string;
}

/** Reads `--config`: a NodeletConfiguration or a KubeletConfiguration, told apart by `kind`. */
export function loadConfigFile(file: string, logger: Logger): LoadedConfig {
  const raw = readYamlFile(file);
  const dir = dirname(resolve(file));
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${file}: expected a ${NODELET_KIND} or a KubeletConfiguration mapping`);
  }
  const { kind, apiVersion } = raw as Record<string, unknown>;
  if (kind === 'KubeletConfiguration') {
    return { path: file, dir, kubelet: readKubeletConfig(file, logger), kubeletPath: file };
  }
  if (kind === NODELET_KIND || apiVersion === NODELET_API_VERSION) {
    const nodelet = validateConfig<NodeletConfiguration>(nodeletConfigSchema, raw, file);
    const out: LoadedConfig = { path: file, dir, nodelet };
    const kc = nodelet.kubelet?.kubeletConfig;
    if (kc) {
      out.kubeletPath = resolve(dir, kc);
      out.kubelet = readKubeletConfig(out.kubeletPath, logger);
    }
    return out;
  }
  throw new ConfigError(
    `${file}: expected kind "${NODELET_KIND}" (apiVersion "${NODELET_API_VERSION}") or "KubeletConfiguration" (apiVersion "${KUBELET_API_VERSION}"), got kind ${JSON.stringify(kind)}`,
  );
}

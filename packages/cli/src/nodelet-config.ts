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
 *     plugins:
 *       runtime-fake: { pullLatencyMs: 200 }
 *
 * `--config` also takes an upstream KubeletConfiguration directly.
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
  };
  plugins?: Record<string, Record<string, unknown>>;
}

const path = { type: 'string', minLength: 1 };

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
      },
    },
    plugins: {
      type: 'object',
      description: "each plugin's configuration, by plugin name",
      additionalProperties: { type: 'object' },
    },
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

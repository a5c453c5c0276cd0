/**
 * Configuration of a CRI runtime plugin (the `plugins.<name>` section: `plugins.runtime-containerd`,
 * `plugins.runtime-crio`, `plugins.runtime-cri`). Upstream kubelet's flags and KubeletConfiguration
 * fields map onto it: `--container-runtime-endpoint` (containerRuntimeEndpoint) → runtimeEndpoint,
 * `--image-service-endpoint` (imageServiceEndpoint) → imageEndpoint, `--runtime-request-timeout`
 * (runtimeRequestTimeout) → runtimeRequestTimeoutMs.
 */
import { ConfigError } from '@nodelet/kernel';

export interface CriRuntimeConfig {
  /** The RuntimeService endpoint: `unix:///path`, a bare `/path`, or `host:port`. */
  runtimeEndpoint: string;
  /** The ImageService endpoint; '' (the default) means the runtime endpoint, over the same connection. */
  imageEndpoint?: string;
  /** Deadline of each call in ms (upstream `--runtime-request-timeout`, 2 min). */
  runtimeRequestTimeoutMs?: number;
  /** Deadline of PullImage in ms; 0 (the default) means none, as upstream. */
  pullTimeoutMs?: number;
}

/** containerd's CRI socket: the default of upstream kubelet and of the `runtime-cri` plugin. */
export const CONTAINERD_ENDPOINT = 'unix:///run/containerd/containerd.sock';
/** CRI-O's socket. */
export const CRIO_ENDPOINT = 'unix:///var/run/crio/crio.sock';
/** Upstream kubelet's `--runtime-request-timeout` default. */
export const DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS = 2 * 60 * 1000;

/** JSON Schema of CriRuntimeConfig with `runtimeEndpoint` defaulting to `defaultEndpoint`. */
export function criRuntimeConfigSchema(defaultEndpoint: string) {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      runtimeEndpoint: {
        type: 'string',
        minLength: 1,
        default: defaultEndpoint,
        description:
          'CRI RuntimeService endpoint (unix:///path or host:port); flag --container-runtime-endpoint',
      },
      imageEndpoint: {
        type: 'string',
        default: '',
        description:
          'CRI ImageService endpoint; empty means the runtime endpoint; flag --image-service-endpoint',
      },
      runtimeRequestTimeoutMs: {
        type: 'integer',
        minimum: 1,
        default: DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
        description: 'deadline of each CRI call, in ms (upstream --runtime-request-timeout)',
      },
      pullTimeoutMs: {
        type: 'integer',
        minimum: 0,
        default: 0,
        description: 'deadline of PullImage, in ms; 0 means none',
      },
    },
  } as const;
}

const ENDPOINT =
  /^(?:unix:\/\/\/[^\s]+|unix:\/[^/\s][^\s]*|\/[^\s]*|[A-Za-z0-9.-]+:\d{1,5}|\[[0-9A-Fa-f:.]+\]:\d{1,5})$/;

/**
 * Refuses an endpoint gRPC cannot dial (`tcp://`, a relative path, `unix://relative`, …), naming the
 * field; `where` is e.g. `plugins.runtime-containerd.runtimeEndpoint`.
 */
export function checkEndpoint(endpoint: string, where: string): void {
  if (!ENDPOINT.test(endpoint)) {
    throw new ConfigError(
      `${where}: ${JSON.stringify(endpoint)} is not a CRI endpoint; use unix:///absolute/path.sock (or host:port)`,
    );
  }
}

/**
 * `RemoteCri`: a CRI v1 runtime across gRPC (containerd, CRI-O, a nodelet `cri serve`) as the
 * RuntimeService and ImageService capabilities, with upstream kubelet's startup checks.
 */
import { stat } from 'node:fs/promises';
import { NodeletError, errorMessage, isErrorCode, type Logger } from '@nodelet/kernel';
import { unixSocketPath, type ImageService, type RuntimeService, type VersionResponse } from '@nodelet/cri';
import { DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS } from './config.js';
import { CriConnection } from './cri-connection.js';

/** The CRI API version nodelet speaks (`runtime.v1`). */
export const CRI_API_VERSION = 'v1';

export interface RemoteCriOptions {
  runtimeEndpoint: string;
  /** '' or absent: the runtime endpoint, over the same connection. */
  imageEndpoint?: string;
  /** Deadline of each call (default 2 min). */
  runtimeRequestTimeoutMs?: number;
  /** Deadline of PullImage; 0 or absent: none. */
  pullTimeoutMs?: number;
  logger?: Logger;
  /** Who serves the socket, for messages: `containerd`, `CRI-O`. Default: `the container runtime`. */
  runtimeLabel?: string;
  /**
   * How a user points nodelet at another socket, appended to connection errors. Default: the
   * upstream flags.
   */
  endpointHint?: string;
}

/** What `validate()` found. */
export interface RemoteCriInfo {
  version: VersionResponse;
  runtimeEndpoint: string;
  imageEndpoint: string;
}

const DEFAULT_HINT =
  'set the socket with --container-runtime-endpoint (KubeletConfiguration containerRuntimeEndpoint)';
const IMAGE_HINT = 'set the socket with --image-service-endpoint (KubeletConfiguration imageServiceEndpoint)';

export class RemoteCri {
  readonly runtime: RuntimeService;
  readonly image: ImageService;
  readonly runtimeEndpoint: string;
  readonly imageEndpoint: string;
  private readonly connections: CriConnection[];
  private readonly timeoutMs: number;

  constructor(private readonly options: RemoteCriOptions) {
    this.timeoutMs = options.runtimeRequestTimeoutMs ?? DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS;
    const clientOptions = {
      timeoutMs: this.timeoutMs,
      ...(options.pullTimeoutMs ? { pullTimeoutMs: options.pullTimeoutMs } : {}),
    };
    this.runtimeEndpoint = options.runtimeEndpoint;
    this.imageEndpoint = options.imageEndpoint || options.runtimeEndpoint;
    const runtimeConnection = new CriConnection(this.runtimeEndpoint, clientOptions);
    const imageConnection =
      this.imageEndpoint === this.runtimeEndpoint
        ? runtimeConnection
        : new CriConnection(this.imageEndpoint, clientOptions);
    this.connections = [...new Set([runtimeConnection, imageConnection])];
    this.runtime = runtimeConnection.runtime;
    this.image = imageConnection.image;
  }

  /**
   * Upstream kubelet's start: the socket must exist, Version must answer with CRI `v1`, and the
   * image endpoint must implement the ImageService. Throws a NodeletError whose message names the
   * socket, what is wrong, and how to point nodelet elsewhere.
   */
  async validate(): Promise<RemoteCriInfo> {
    const label = this.options.runtimeLabel ?? 'the container runtime';
    const hint = this.options.endpointHint ?? DEFAULT_HINT;
    await checkSocket(this.runtimeEndpoint, label, hint);

    let version: VersionResponse;
    try {
      version = await this.runtime.version({ version: '0.1.0' });
    } catch (err) {
      throw startupError(err, this.runtimeEndpoint, label, hint, 'Version', 'runtime.v1.RuntimeService');
    }
    if (version.runtimeApiVersion !== CRI_API_VERSION) {
      throw new NodeletError(
        'FailedPrecondition',
        `the container runtime at ${this.runtimeEndpoint} (${describe(version)}) speaks CRI API ${JSON.stringify(version.runtimeApiVersion)}; nodelet speaks CRI ${CRI_API_VERSION} (runtime.v1) only — upgrade the runtime (containerd >= 1.6, CRI-O >= 1.20)`,
      );
    }

    if (this.imageEndpoint !== this.runtimeEndpoint) {
      await checkSocket(this.imageEndpoint, 'the image service', this.options.endpointHint ?? IMAGE_HINT);
    }
    try {
      // As upstream: the ImageService is validated with ImageFsInfo; only "not there" is fatal.
      await this.image.imageFsInfo({});
    } catch (err) {
      if (isErrorCode(err, 'Unimplemented') || isErrorCode(err, 'Unavailable')) {
        throw startupError(
          err,
          this.imageEndpoint,
          'the image service',
          this.options.endpointHint ?? IMAGE_HINT,
          'ImageFsInfo',
          'runtime.v1.ImageService',
        );
      }
      this.options.logger?.warn('ImageFsInfo failed; going on', {
        endpoint: this.imageEndpoint,
        err: errorMessage(err),
      });
    }
    return { version, runtimeEndpoint: this.runtimeEndpoint, imageEndpoint: this.imageEndpoint };
  }

  /** How many gRPC channels were dialled in all (1 per endpoint, plus one per reconnect). */
  get channelsDialled(): number {
    return this.connections.reduce((n, c) => n + c.channelsDialled, 0);
  }

  close(): void {
    for (const c of this.connections) c.close();
  }
}

function describe(v: VersionResponse): string {
  return `${v.runtimeName || 'unnamed runtime'} ${v.runtimeVersion}`.trim();
}

/** A unix endpoint's socket must exist and be a socket; TCP endpoints are left to the dial. */
async function checkSocket(endpoint: string, label: string, hint: string): Promise<void> {
  const path = unixSocketPath(endpoint);
  if (path === undefined) return;
  const info = await stat(path).catch((err: NodeJS.ErrnoException) => err);
  if (info instanceof Error) {
    const why = info.code === 'ENOENT' ? 'no such socket' : (info.code ?? info.message);
    throw new NodeletError(
      'Unavailable',
      `cannot connect to ${label} at ${endpoint}: ${why} (${path}); is ${label} running? ${hint}`,
      { cause: info },
    );
  }
  if (!info.isSocket()) {
    throw new NodeletError(
      'Unavailable',
      `cannot connect to ${label} at ${endpoint}: ${path} is not a socket; ${hint}`,
    );
  }
}

function startupError(
  err: unknown,
  endpoint: string,
  label: string,
  hint: string,
  rpc: string,
  service: string,
): NodeletError {
  const message = errorMessage(err);
  if (isErrorCode(err, 'Unimplemented')) {
    return new NodeletError(
      'FailedPrecondition',
      `${endpoint} does not serve CRI v1 (${rpc} of ${service} answered: ${message}); nodelet speaks CRI v1 only`,
      { cause: err },
    );
  }
  if (isErrorCode(err, 'Unavailable')) {
    return new NodeletError(
      'Unavailable',
      `cannot connect to ${label} at ${endpoint}: ${message.replace(/^cannot connect to the container runtime at \S+: /, '')}; is ${label} running? ${hint}`,
      { cause: err },
    );
  }
  const code = err instanceof NodeletError ? err.code : 'Internal';
  return new NodeletError(code, `${label} at ${endpoint} failed ${rpc}: ${message}`, { cause: err });
}

/**
 * `createCriClient`: the RuntimeService and ImageService capabilities over CRI v1 gRPC, for
 * containerd, CRI-O or a nodelet `serveCri`. Every call has a deadline; failures arrive as
 * NodeletError (NotFound, DeadlineExceeded, Unavailable, ...) via toNodeletError.
 */
import { Client, Metadata, credentials, type CallOptions } from '@grpc/grpc-js';
import { CRI_MAX_MESSAGE_BYTES, grpcTarget } from './address.js';
import type { ImageService, RuntimeService } from './capabilities.js';
import {
  GetEventsRequest,
  ImageServiceService,
  RuntimeServiceService,
  type ContainerEventResponse,
} from './gen/runtime/v1/api.js';
import { toNodeletError } from './grpc-status.js';

export interface CriClientOptions {
  /** Deadline of each call, in ms. Default 2 min (upstream kubelet's --runtime-request-timeout). */
  timeoutMs?: number;
  /**
   * Deadline of PullImage, in ms. Default (and 0): none, as upstream (a pull takes as long as the
   * image needs; the kubelet bounds it by progress instead).
   */
  pullTimeoutMs?: number;
}

export interface CriClient {
  readonly runtime: RuntimeService;
  readonly image: ImageService;
  /** Closes the channel; calls in flight fail with Unavailable. */
  close(): void;
}

/** The parts of a generated method definition a unary call needs. */
interface UnaryMethod<Req, Res> {
  path: string;
  requestSerialize: (value: Req) => Buffer;
  responseDeserialize: (bytes: Buffer) => Res;
}

export const DEFAULT_CRI_TIMEOUT_MS = 2 * 60 * 1000;

/**
 * A CRI client for `address` (`unix:///run/containerd/containerd.sock`, a bare socket path, or
 * `host:port`). The connection is made lazily, on the first call, and re-made after failures.
 */
export function createCriClient(address: string, options: CriClientOptions = {}): CriClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_CRI_TIMEOUT_MS;
  const client = new Client(grpcTarget(address), credentials.createInsecure(), {
    'grpc.max_receive_message_length': CRI_MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': CRI_MAX_MESSAGE_BYTES,
  });

  // `null`: no deadline at all (an `undefined` argument would take the default, the call deadline).
  function call<Req, Res>(method: UnaryMethod<Req, Res>, req: Req, deadlineMs: number | null = timeoutMs) {
    const callOptions: CallOptions = deadlineMs === null ? {} : { deadline: Date.now() + deadlineMs };
    return new Promise<Res>((resolve, reject) => {
      client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        req,
        new Metadata(),
        callOptions,
        (err, res) =>
          err || res === undefined ? reject(toNodeletError(err ?? 'empty response')) : resolve(res),
      );
    });
  }

  const rs = RuntimeServiceService;
  const runtime: RuntimeService = {
    version: (r) => call(rs.version, r),
    runPodSandbox: (r) => call(rs.runPodSandbox, r),
    stopPodSandbox: (r) => call(rs.stopPodSandbox, r),
    removePodSandbox: (r) => call(rs.removePodSandbox, r),
    podSandboxStatus: (r) => call(rs.podSandboxStatus, r),
    listPodSandbox: (r) => call(rs.listPodSandbox, r),
    createContainer: (r) => call(rs.createContainer, r),
    startContainer: (r) => call(rs.startContainer, r),
    // Stopping waits out the grace period: allow it on top of the call deadline, as upstream.
    stopContainer: (r) => call(rs.stopContainer, r, timeoutMs + Number(r.timeout) * 1000),
    removeContainer: (r) => call(rs.removeContainer, r),
    listContainers: (r) => call(rs.listContainers, r),
    containerStatus: (r) => call(rs.containerStatus, r),
    updateContainerResources: (r) => call(rs.updateContainerResources, r),
    reopenContainerLog: (r) => call(rs.reopenContainerLog, r),
    // A command's own timeout plus the call deadline; no timeout means no deadline, as upstream.
    execSync: (r) => call(rs.execSync, r, r.timeout > 0n ? timeoutMs + Number(r.timeout) * 1000 : null),
    exec: (r) => call(rs.exec, r),
    attach: (r) => call(rs.attach, r),
    portForward: (r) => call(rs.portForward, r),
    containerStats: (r) => call(rs.containerStats, r),
    listContainerStats: (r) => call(rs.listContainerStats, r),
    podSandboxStats: (r) => call(rs.podSandboxStats, r),
    listPodSandboxStats: (r) => call(rs.listPodSandboxStats, r),
    updateRuntimeConfig: (r) => call(rs.updateRuntimeConfig, r),
    status: (r) => call(rs.status, r),
    runtimeConfig: (r) => call(rs.runtimeConfig, r),
    updatePodSandboxResources: (r) => call(rs.updatePodSandboxResources, r),
    containerEvents: () => ({
      [Symbol.asyncIterator]: () => containerEvents(client),
    }),
  };

  const is = ImageServiceService;
  const image: ImageService = {
    listImages: (r) => call(is.listImages, r),
    imageStatus: (r) => call(is.imageStatus, r),
    pullImage: (r) => call(is.pullImage, r, options.pullTimeoutMs || null),
    removeImage: (r) => call(is.removeImage, r),
    imageFsInfo: (r) => call(is.imageFsInfo, r),
  };

  return { runtime, image, close: () => client.close() };
}

/** GetContainerEvents as an async iterator; leaving the iteration cancels the call. */
async function* containerEvents(client: Client): AsyncGenerator<ContainerEventResponse> {
  const method = RuntimeServiceService.getContainerEvents;
  const stream = client.makeServerStreamRequest(
    method.path,
    method.requestSerialize,
    method.responseDeserialize,
    GetEventsRequest.create(),
    new Metadata(),
  );
  // grpc-js reports the CANCELLED status of our own cancel() as an 'error' event: keep it from
  // becoming an uncaught exception once the iteration has ended.
  stream.on('error', () => undefined);
  try {
    for await (const event of stream) yield event as ContainerEventResponse;
  } catch (err) {
    throw toNodeletError(err);
  } finally {
    stream.cancel();
  }
}

/**
 * `serveCri`: serves a RuntimeService and an ImageService implementation as CRI v1 over gRPC, so
 * crictl, a kubelet, or nodelet's own gRPC client can talk to it (`nodelet cri serve`, and the
 * conformance suite's "fake over gRPC" target).
 */
import type { EventEmitter } from 'node:events';
import { mkdir, stat, unlink } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import {
  Server,
  ServerCredentials,
  type handleServerStreamingCall,
  type handleUnaryCall,
} from '@grpc/grpc-js';
import { type Clock, NodeletError, RealClock, errorMessage } from '@nodelet/kernel';
import { CRI_MAX_MESSAGE_BYTES, grpcTarget, unixSocketPath } from './address.js';
import type { ImageService, RuntimeService } from './capabilities.js';
import {
  ImageServiceService,
  RuntimeServiceService,
  type ContainerEventResponse,
  type GetEventsRequest,
  type ImageServiceServer,
  type RuntimeServiceServer,
} from './gen/runtime/v1/api.js';
import { GrpcStatus, toGrpcStatus } from './grpc-status.js';

export interface CriServer {
  /** The bound address: as given, with a TCP port 0 replaced by the chosen port. */
  readonly address: string;
  /** Stops accepting calls, lets running ones finish for up to `graceMs` (default 5 s), then cuts them. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Serves `runtime` and `image` on `address` (`unix:///path`, a bare `/path`, or `host:port`). A
 * stale unix socket (a file nobody listens on) is replaced; a live one is refused (AlreadyExists).
 * Errors thrown by the implementations reach the caller as the matching gRPC status. `clock` times the
 * grace period of `stop` (a RealClock when unset).
 */
export async function serveCri(
  runtime: RuntimeService,
  image: ImageService,
  address: string,
  options: { clock?: Clock } = {},
): Promise<CriServer> {
  const clock = options.clock ?? new RealClock();
  const socketPath = unixSocketPath(address);
  if (socketPath !== undefined) await prepareSocket(socketPath);

  const server = new Server({
    'grpc.max_receive_message_length': CRI_MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': CRI_MAX_MESSAGE_BYTES,
  });
  server.addService(RuntimeServiceService, runtimeHandlers(runtime));
  server.addService(ImageServiceService, imageHandlers(image));

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(grpcTarget(address), ServerCredentials.createInsecure(), (err, boundPort) =>
      err
        ? reject(
            new NodeletError('Unavailable', `cannot serve CRI on ${address}: ${err.message}`, { cause: err }),
          )
        : resolve(boundPort),
    );
  });

  let stopped: Promise<void> | undefined;
  return {
    address: socketPath !== undefined ? address : address.replace(/:\d+$/, `:${port}`),
    stop(graceMs = 5000) {
      stopped ??= new Promise<void>((resolve) => {
        // Calls still running when the grace period ends are cut off.
        const force = clock.setTimeout(() => server.forceShutdown(), graceMs);
        server.tryShutdown(() => {
          force();
          resolve();
        });
      });
      return stopped;
    },
  };
}

/** Adapts a promise-returning method to a grpc-js unary handler; a missing one answers UNIMPLEMENTED. */
function unary<Req, Res>(
  rpc: string,
  fn: ((req: Req) => Promise<Res>) | undefined,
): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    if (!fn) {
      callback({ code: GrpcStatus.UNIMPLEMENTED, details: `${rpc} is not implemented by this runtime` });
      return;
    }
    let result: Promise<Res>;
    try {
      result = fn(call.request);
    } catch (err) {
      callback(toGrpcStatus(err));
      return;
    }
    Promise.resolve(result).then(
      (res) => callback(null, res),
      (err: unknown) => callback(toGrpcStatus(err)),
    );
  };
}

/** GetContainerEvents: pumps the implementation's async iterable into the stream until either side ends. */
function containerEvents(
  runtime: RuntimeService,
): handleServerStreamingCall<GetEventsRequest, ContainerEventResponse> {
  return (call) => {
    if (!runtime.containerEvents) {
      call.emit('error', {
        code: GrpcStatus.UNIMPLEMENTED,
        details: 'GetContainerEvents is not implemented by this runtime',
      });
      return;
    }
    const events = runtime.containerEvents()[Symbol.asyncIterator]();
    const finish = () => void events.return?.()?.catch(() => undefined);
    call.on('cancelled', finish);
    void (async () => {
      try {
        for (;;) {
          const next = await events.next();
          if (next.done || call.cancelled) break;
          // Backpressure: a slow (or gone) reader pauses the source instead of buffering without end.
          if (!call.write(next.value)) await writable(call);
        }
        if (!call.cancelled) call.end();
      } catch (err) {
        if (!call.cancelled) call.emit('error', toGrpcStatus(err));
      }
    })();
  };
}

/** Resolves when the stream drains, or is cancelled or closed. */
function writable(call: EventEmitter): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done).off('cancelled', done).off('close', done);
      resolve();
    };
    call.on('drain', done).on('cancelled', done).on('close', done);
  });
}

function runtimeHandlers(rt: RuntimeService): RuntimeServiceServer {
  return {
    version: unary('Version', (r) => rt.version(r)),
    runPodSandbox: unary('RunPodSandbox', (r) => rt.runPodSandbox(r)),
    stopPodSandbox: unary('StopPodSandbox', (r) => rt.stopPodSandbox(r)),
    removePodSandbox: unary('RemovePodSandbox', (r) => rt.removePodSandbox(r)),
    podSandboxStatus: unary('PodSandboxStatus', (r) => rt.podSandboxStatus(r)),
    listPodSandbox: unary('ListPodSandbox', (r) => rt.listPodSandbox(r)),
    createContainer: unary('CreateContainer', (r) => rt.createContainer(r)),
    startContainer: unary('StartContainer', (r) => rt.startContainer(r)),
    stopContainer: unary('StopContainer', (r) => rt.stopContainer(r)),
    removeContainer: unary('RemoveContainer', (r) => rt.removeContainer(r)),
    listContainers: unary('ListContainers', (r) => rt.listContainers(r)),
    containerStatus: unary('ContainerStatus', (r) => rt.containerStatus(r)),
    updateContainerResources: unary('UpdateContainerResources', (r) => rt.updateContainerResources(r)),
    reopenContainerLog: unary('ReopenContainerLog', (r) => rt.reopenContainerLog(r)),
    execSync: unary('ExecSync', (r) => rt.execSync(r)),
    exec: unary('Exec', (r) => rt.exec(r)),
    attach: unary('Attach', (r) => rt.attach(r)),
    portForward: unary('PortForward', (r) => rt.portForward(r)),
    containerStats: unary('ContainerStats', (r) => rt.containerStats(r)),
    listContainerStats: unary('ListContainerStats', (r) => rt.listContainerStats(r)),
    podSandboxStats: unary('PodSandboxStats', (r) => rt.podSandboxStats(r)),
    listPodSandboxStats: unary('ListPodSandboxStats', (r) => rt.listPodSandboxStats(r)),
    updateRuntimeConfig: unary('UpdateRuntimeConfig', (r) => rt.updateRuntimeConfig(r)),
    status: unary('Status', (r) => rt.status(r)),
    getContainerEvents: containerEvents(rt),
    runtimeConfig: unary('RuntimeConfig', rt.runtimeConfig?.bind(rt)),
    updatePodSandboxResources: unary('UpdatePodSandboxResources', rt.updatePodSandboxResources?.bind(rt)),
  };
}

function imageHandlers(img: ImageService): ImageServiceServer {
  return {
    listImages: unary('ListImages', (r) => img.listImages(r)),
    imageStatus: unary('ImageStatus', (r) => img.imageStatus(r)),
    pullImage: unary('PullImage', (r) => img.pullImage(r)),
    removeImage: unary('RemoveImage', (r) => img.removeImage(r)),
    imageFsInfo: unary('ImageFsInfo', (r) => img.imageFsInfo(r)),
  };
}

/** Creates the socket's directory and removes a stale socket; refuses a socket someone listens on. */
async function prepareSocket(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const existing = await stat(path).catch(() => undefined);
  if (!existing) return;
  if (!existing.isSocket()) {
    throw new NodeletError(
      'AlreadyExists',
      `cannot serve CRI on ${path}: the path exists and is not a socket`,
    );
  }
  const live = await new Promise<boolean>((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (live)
    throw new NodeletError('AlreadyExists', `cannot serve CRI on ${path}: another server is listening there`);
  await unlink(path).catch((err: unknown) => {
    throw new NodeletError('Unavailable', `cannot remove stale socket ${path}: ${errorMessage(err)}`, {
      cause: err,
    });
  });
}

/**
 * The `cri.runtime` and `cri.image` capabilities: CRI v1 RuntimeService and ImageService as
 * promise-based TypeScript interfaces over the generated `runtime.v1` message types.
 *
 * Method names are the RPC names in lowerCamel case; each takes the RPC's request message and
 * resolves to its response message. Failures are thrown as the kernel's `NodeletError` with a
 * code (NotFound, InvalidInput, FailedPrecondition, Unavailable, DeadlineExceeded,
 * Unimplemented, ...); over gRPC the code travels as the matching status (see grpc-status.ts).
 *
 * Providers: the fake runtime (in memory), the gRPC client (containerd, CRI-O, or a nodelet
 * serving `cri serve`).
 */
import { defineCapability } from '@nodelet/kernel';
import type {
  AttachRequest,
  AttachResponse,
  ContainerEventResponse,
  ContainerStatsRequest,
  ContainerStatsResponse,
  ContainerStatusRequest,
  ContainerStatusResponse,
  CreateContainerRequest,
  CreateContainerResponse,
  ExecRequest,
  ExecResponse,
  ExecSyncRequest,
  ExecSyncResponse,
  ImageFsInfoRequest,
  ImageFsInfoResponse,
  ImageStatusRequest,
  ImageStatusResponse,
  ListContainerStatsRequest,
  ListContainerStatsResponse,
  ListContainersRequest,
  ListContainersResponse,
  ListImagesRequest,
  ListImagesResponse,
  ListPodSandboxRequest,
  ListPodSandboxResponse,
  ListPodSandboxStatsRequest,
  ListPodSandboxStatsResponse,
  PodSandboxStatsRequest,
  PodSandboxStatsResponse,
  PodSandboxStatusRequest,
  PodSandboxStatusResponse,
  PortForwardRequest,
  PortForwardResponse,
  PullImageRequest,
  PullImageResponse,
  RemoveContainerRequest,
  RemoveContainerResponse,
  RemoveImageRequest,
  RemoveImageResponse,
  RemovePodSandboxRequest,
  RemovePodSandboxResponse,
  ReopenContainerLogRequest,
  ReopenContainerLogResponse,
  RunPodSandboxRequest,
  RunPodSandboxResponse,
  RuntimeConfigRequest,
  RuntimeConfigResponse,
  StartContainerRequest,
  StartContainerResponse,
  StatusRequest,
  StatusResponse,
  StopContainerRequest,
  StopContainerResponse,
  StopPodSandboxRequest,
  StopPodSandboxResponse,
  UpdateContainerResourcesRequest,
  UpdateContainerResourcesResponse,
  UpdatePodSandboxResourcesRequest,
  UpdatePodSandboxResourcesResponse,
  UpdateRuntimeConfigRequest,
  UpdateRuntimeConfigResponse,
  VersionRequest,
  VersionResponse,
} from './gen/runtime/v1/api.js';

/** CRI v1 RuntimeService: pod sandboxes, containers, exec/attach/port-forward URLs, stats. */
export interface RuntimeService {
  version(req: VersionRequest): Promise<VersionResponse>;

  runPodSandbox(req: RunPodSandboxRequest): Promise<RunPodSandboxResponse>;
  /** Idempotent: stopping a stopped sandbox succeeds. */
  stopPodSandbox(req: StopPodSandboxRequest): Promise<StopPodSandboxResponse>;
  /** Idempotent: removing a sandbox that does not exist succeeds. */
  removePodSandbox(req: RemovePodSandboxRequest): Promise<RemovePodSandboxResponse>;
  podSandboxStatus(req: PodSandboxStatusRequest): Promise<PodSandboxStatusResponse>;
  listPodSandbox(req: ListPodSandboxRequest): Promise<ListPodSandboxResponse>;

  createContainer(req: CreateContainerRequest): Promise<CreateContainerResponse>;
  startContainer(req: StartContainerRequest): Promise<StartContainerResponse>;
  /** `timeout` is the grace period in seconds before the container is killed. Idempotent. */
  stopContainer(req: StopContainerRequest): Promise<StopContainerResponse>;
  /** Idempotent: removing a container that does not exist succeeds. */
  removeContainer(req: RemoveContainerRequest): Promise<RemoveContainerResponse>;
  listContainers(req: ListContainersRequest): Promise<ListContainersResponse>;
  containerStatus(req: ContainerStatusRequest): Promise<ContainerStatusResponse>;
  updateContainerResources(req: UpdateContainerResourcesRequest): Promise<UpdateContainerResourcesResponse>;
  reopenContainerLog(req: ReopenContainerLogRequest): Promise<ReopenContainerLogResponse>;

  /** Runs a command to completion; a non-zero exit is a response, not an error. */
  execSync(req: ExecSyncRequest): Promise<ExecSyncResponse>;
  /** Returns the streaming server URL that serves the exec session. */
  exec(req: ExecRequest): Promise<ExecResponse>;
  /** Returns the streaming server URL that serves the attach session. */
  attach(req: AttachRequest): Promise<AttachResponse>;
  /** Returns the streaming server URL that serves the port-forward session. */
  portForward(req: PortForwardRequest): Promise<PortForwardResponse>;

  containerStats(req: ContainerStatsRequest): Promise<ContainerStatsResponse>;
  listContainerStats(req: ListContainerStatsRequest): Promise<ListContainerStatsResponse>;
  podSandboxStats(req: PodSandboxStatsRequest): Promise<PodSandboxStatsResponse>;
  listPodSandboxStats(req: ListPodSandboxStatsRequest): Promise<ListPodSandboxStatsResponse>;

  updateRuntimeConfig(req: UpdateRuntimeConfigRequest): Promise<UpdateRuntimeConfigResponse>;
  /** Runtime conditions (RuntimeReady, NetworkReady), handlers and features. */
  status(req: StatusRequest): Promise<StatusResponse>;

  /**
   * The GetContainerEvents server stream, for evented PLEG. Optional: a provider without it (or
   * a remote runtime answering UNIMPLEMENTED) leaves the kubelet on relisting. Breaking out of
   * the iteration ends the stream.
   */
  containerEvents?(): AsyncIterable<ContainerEventResponse>;
  /** The runtime's cgroup driver. Optional; absent or Unimplemented means "use the configured one". */
  runtimeConfig?(req: RuntimeConfigRequest): Promise<RuntimeConfigResponse>;
  /** Pod-level in-place resize. Optional; absent or Unimplemented means unsupported. */
  updatePodSandboxResources?(
    req: UpdatePodSandboxResourcesRequest,
  ): Promise<UpdatePodSandboxResourcesResponse>;
}

/** CRI v1 ImageService. */
export interface ImageService {
  listImages(req: ListImagesRequest): Promise<ListImagesResponse>;
  /** Resolves with `image` unset when the image is not present (not a NotFound error). */
  imageStatus(req: ImageStatusRequest): Promise<ImageStatusResponse>;
  pullImage(req: PullImageRequest): Promise<PullImageResponse>;
  /** Idempotent: removing an image that is not present succeeds. */
  removeImage(req: RemoveImageRequest): Promise<RemoveImageResponse>;
  imageFsInfo(req: ImageFsInfoRequest): Promise<ImageFsInfoResponse>;
}

export const CriRuntime = defineCapability<RuntimeService>('cri.runtime', {
  version: 1,
  description: 'a CRI v1 RuntimeService (fake, containerd, cri-o)',
});

export const CriImage = defineCapability<ImageService>('cri.image', {
  version: 1,
  description: 'a CRI v1 ImageService',
});

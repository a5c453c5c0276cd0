import { createHash } from 'node:crypto';
import { join } from 'node:path';
import {
  type Clock,
  deadlineExceeded,
  errorMessage,
  failedPrecondition,
  invalidInput,
  type Logger,
  NodeletError,
  notFound,
  unavailable,
  unimplemented,
} from '@nodelet/kernel';
import {
  type AttachRequest,
  type AttachResponse,
  ContainerConfig,
  type ContainerFilter,
  ContainerState,
  type ContainerStats,
  type ContainerStatsFilter,
  type ContainerStatsRequest,
  type ContainerStatsResponse,
  type ContainerStatusRequest,
  type ContainerStatusResponse,
  type CreateContainerRequest,
  type CreateContainerResponse,
  type ExecRequest,
  type ExecResponse,
  type ExecSyncRequest,
  type ExecSyncResponse,
  type ImageFsInfoRequest,
  type ImageFsInfoResponse,
  type ImageService,
  type ImageStatusRequest,
  type ImageStatusResponse,
  LinuxContainerResources,
  type ListContainerStatsRequest,
  type ListContainerStatsResponse,
  type ListContainersRequest,
  type ListContainersResponse,
  type ListImagesRequest,
  type ListImagesResponse,
  type ListPodSandboxRequest,
  type ListPodSandboxResponse,
  type ListPodSandboxStatsRequest,
  type ListPodSandboxStatsResponse,
  NamespaceMode,
  PodSandboxConfig,
  type PodSandboxFilter,
  PodSandboxState,
  type PodSandboxStats,
  type PodSandboxStatsRequest,
  type PodSandboxStatsResponse,
  type PodSandboxStatusRequest,
  type PodSandboxStatusResponse,
  type PortForwardRequest,
  type PortForwardResponse,
  type PullImageRequest,
  type PullImageResponse,
  type RemoveContainerRequest,
  type RemoveContainerResponse,
  type RemoveImageRequest,
  type RemoveImageResponse,
  type RemovePodSandboxRequest,
  type RemovePodSandboxResponse,
  type ReopenContainerLogRequest,
  type ReopenContainerLogResponse,
  type RunPodSandboxRequest,
  type RunPodSandboxResponse,
  type RuntimeCondition,
  type RuntimeService,
  type StartContainerRequest,
  type StartContainerResponse,
  type StatusRequest,
  type StatusResponse,
  type StopContainerRequest,
  type StopContainerResponse,
  type StopPodSandboxRequest,
  type StopPodSandboxResponse,
  type UpdateContainerResourcesRequest,
  type UpdateContainerResourcesResponse,
  type UpdateRuntimeConfigRequest,
  type UpdateRuntimeConfigResponse,
  type VersionRequest,
  type VersionResponse,
  type ProbeType,
} from '@nodelet/cri';
import {
  ALL_CONTAINERS,
  behaviorsFromAnnotations,
  type ContainerBehavior,
  parseBehavior,
  PROBE_FIELDS,
  resolveBehavior,
  resolveProbeScript,
  SIGKILL_EXIT_CODE,
  validateBehavior,
} from './behavior.js';
import { DEFAULT_CONFIG, type FakeRuntimeConfig } from './config.js';
import { ContainerLifecycle } from './container-lifecycle.js';
import { ContainerLogs } from './container-logs.js';
import { type LogStream, msToNs } from './cri-log.js';
import { defaultExec, type ExecContext, type ExecHandler, type ExecResult } from './exec.js';
import { ImageStore, toImageMessage } from './image-store.js';
import { IpAllocator } from './ip-allocator.js';
import { type ProbeVerdict, probeVerdict } from './probes.js';
import {
  type ContainerRecord,
  containerStateName,
  IMAGE_FS_MOUNTPOINT,
  isSandboxReady,
  type SandboxRecord,
  toContainer,
  toContainerStats,
  toContainerStatus,
  toPodSandbox,
  toPodSandboxStats,
  toPodSandboxStatus,
} from './records.js';
import { POD_UID_LABEL, RuntimeStore } from './runtime-store.js';

export const RUNTIME_NAME = 'nodelet-fake';
export const RUNTIME_VERSION = '0.1.0';

export interface FakeRuntimeOptions {
  clock: Clock;
  logger?: Logger;
  config?: FakeRuntimeConfig;
}

/** What a `script()` predicate sees of a container being created. */
export interface ScriptTarget {
  readonly name: string;
  readonly podName: string;
  readonly podNamespace: string;
  readonly podUid: string;
  readonly podSandboxId: string;
  /** The image as CreateContainer named it. */
  readonly image: string;
  readonly labels: { readonly [key: string]: string };
  readonly annotations: { readonly [key: string]: string };
  readonly podLabels: { readonly [key: string]: string };
  readonly podAnnotations: { readonly [key: string]: string };
}

interface Script {
  matches(target: ScriptTarget): boolean;
  behavior: ContainerBehavior;
}

let instances = 0;

/**
 * An in-memory CRI v1 runtime on the kernel clock: sandboxes with IPs, containers through the CRI
 * state machine, images, exec and logs, with behaviour scripted per container.
 *
 * Container states (upstream CRI):
 *
 *     CreateContainer ──► CREATED ──StartContainer──► RUNNING ──exit / stop / kill──► EXITED
 *                            │    (startDelay on the clock)                              │
 *                            └──── failStart: EXITED 128 StartError ──────────────────►  │
 *                                                       RemoveContainer (any state) ──► gone
 *
 * Nothing runs between calls unless a behaviour scheduled it (exitAfter, stop grace, startDelay),
 * and then through `clock.setTimeout`, cancelled when the container stops or goes away: a node of
 * plain running pods holds no timers at all.
 */
export class FakeRuntime implements RuntimeService, ImageService {
  private readonly clock: Clock;
  private readonly logger: Logger | undefined;
  private readonly lifecycle: ContainerLifecycle;
  private readonly containerLogs: ContainerLogs;
  private readonly images: ImageStore;
  private ipPool: IpAllocator;
  private readonly idSalt: string;
  private idCounter = 0;
  private lastCreatedNs = 0n;

  private readonly store = new RuntimeStore();

  private readonly scripts: Script[] = [];
  private readonly execHandlers: ExecHandler[] = [];
  private readonly conditions = new Map<string, RuntimeCondition>([
    ['RuntimeReady', { type: 'RuntimeReady', status: true, reason: '', message: '' }],
    ['NetworkReady', { type: 'NetworkReady', status: true, reason: '', message: '' }],
  ]);
  private available = true;

  constructor(options: FakeRuntimeOptions) {
    const config = { ...DEFAULT_CONFIG, ...stripUndefined(options.config ?? {}) };
    this.clock = options.clock;
    this.logger = options.logger;
    if (!(Number.isInteger(config.maxLogLines) && config.maxLogLines >= 0)) {
      throw invalidInput(`runtime-fake: maxLogLines must be a whole number >= 0, not ${config.maxLogLines}`);
    }
    this.containerLogs = new ContainerLogs({
      writeLogs: config.writeLogs,
      maxLogLines: config.maxLogLines,
      logger: this.logger,
    });
    this.lifecycle = new ContainerLifecycle(this.clock);
    if (!(Number.isFinite(config.pullLatencyMs) && config.pullLatencyMs >= 0)) {
      throw invalidInput(`runtime-fake: pullLatencyMs must be a number >= 0, not ${config.pullLatencyMs}`);
    }
    this.images = new ImageStore(this.clock, config.pullLatencyMs);
    const field = (name: string, i: number, fn: () => void) => {
      try {
        fn();
      } catch (err) {
        throw invalidInput(`runtime-fake: ${name}[${i}]: ${errorMessage(err)}`);
      }
    };
    config.preloadedImages.forEach((ref, i) => field('preloadedImages', i, () => this.images.add(ref)));
    config.missingImages.forEach((ref, i) =>
      field('missingImages', i, () => this.images.setMissing(ref, true)),
    );
    try {
      this.ipPool = new IpAllocator(config.podCIDR);
    } catch (err) {
      throw invalidInput(`runtime-fake: podCIDR: ${errorMessage(err)}`);
    }
    this.idSalt = `nodelet-fake/${instances++}`;
  }

  // ---------------------------------------------------------------------------------------------
  // Test and simulation API
  // ---------------------------------------------------------------------------------------------

  /**
   * Scripts the behaviour of containers created from now on whose name is `match` (or for which the
   * predicate holds), e.g. `script('app', 'exitAfter=5s,exitCode=1')` or
   * `script((c) => c.podName.startsWith('web-'), { startDelayMs: 2000 })`. Layers over behaviour
   * from annotations, field by field. Returns a function that removes the script.
   */
  script(
    match: string | ((target: ScriptTarget) => boolean),
    behavior: ContainerBehavior | string,
  ): () => void {
    const parsed = typeof behavior === 'string' ? parseBehavior(behavior) : validateBehavior({ ...behavior });
    const entry: Script = {
      matches: typeof match === 'string' ? (t) => t.name === match : match,
      behavior: parsed,
    };
    this.scripts.push(entry);
    return () => {
      const i = this.scripts.indexOf(entry);
      if (i >= 0) this.scripts.splice(i, 1);
    };
  }

  /**
   * Makes a running container die "from outside" now (a crash, the OOM killer, `kill -9`): EXITED
   * with `exitCode` (default 137), reason OOMKilled when asked, else Completed (0) / Error.
   */
  killContainer(
    containerId: string,
    exitCode = SIGKILL_EXIT_CODE,
    options: { reason?: string; message?: string } = {},
  ): void {
    const c = this.mustContainer(containerId);
    if (c.state !== ContainerState.CONTAINER_RUNNING) {
      throw failedPrecondition(
        `container "${containerId}" is in ${containerStateName(c.state)} state, not running`,
      );
    }
    this.lifecycle.exit(c, exitCode, options.reason, options.message);
  }

  /**
   * Adds an ExecSync handler; the newest is asked first, and one that returns undefined passes the
   * command on (finally to the default: true/false/echo/sleep/`sh -c "exit N"`). Returns a remover.
   */
  onExec(handler: ExecHandler): () => void {
    this.execHandlers.unshift(handler);
    return () => {
      const i = this.execHandlers.indexOf(handler);
      if (i >= 0) this.execHandlers.splice(i, 1);
    };
  }

  /**
   * How the container answers its next probe of `type` (httpGet, tcpSocket or grpc, asked by the
   * runtime's probe handlers, see probes.ts), by its probe script; counts the probe. Throws NotFound
   * for a container it does not have.
   */
  answerProbe(containerId: string, type: ProbeType): ProbeVerdict {
    const c = this.mustContainer(containerId);
    const counts = (c.probeCounts ??= { liveness: 0, readiness: 0, startup: 0 });
    return probeVerdict(c.probes, type, ++counts[type]);
  }

  /**
   * Re-scripts the probes of an existing container from now on, e.g.
   * `scriptProbes(id, 'readinessFail')`, `scriptProbes(id, { probeTimeout: true })`, or `''` for
   * healthy again. Only the probe keys (probeFail, livenessFail, readinessFail, startupFail,
   * probeFailAfter, probeTimeout) are allowed; the count for probeFailAfter starts again.
   */
  scriptProbes(containerId: string, behavior: ContainerBehavior | string): void {
    const c = this.mustContainer(containerId);
    const parsed = typeof behavior === 'string' ? parseBehavior(behavior) : validateBehavior({ ...behavior });
    const other = Object.keys(parsed).filter((k) => !PROBE_FIELDS.includes(k as keyof ContainerBehavior));
    if (other.length > 0) {
      throw invalidInput(
        `scriptProbes takes only probe keys (${PROBE_FIELDS.join(', ')}); not ${other.join(', ')}`,
      );
    }
    c.probes = resolveProbeScript(parsed);
    c.probeCounts = undefined;
  }

  /** The container's log lines in CRI format (the newest `maxLogLines`), without newlines. */
  logs(containerId: string): string[] {
    return this.mustContainer(containerId).logs?.snapshot() ?? [];
  }

  /** Writes `text` to a running container's stdout or stderr, as the process would. */
  writeLog(containerId: string, text: string, stream: LogStream = 'stdout'): void {
    const c = this.mustContainer(containerId);
    if (c.state !== ContainerState.CONTAINER_RUNNING) {
      throw failedPrecondition(
        `container "${containerId}" is in ${containerStateName(c.state)} state, not running`,
      );
    }
    this.appendLog(c, stream, text);
  }

  /** Sets a runtime condition (RuntimeReady, NetworkReady, …) as Status reports it. */
  setCondition(type: string, status: boolean, reason = '', message = ''): void {
    this.conditions.set(type, { type, status, reason, message });
  }

  /** false: every CRI call fails with Unavailable, as when the runtime's socket is gone. Containers keep running. */
  setAvailable(available: boolean): void {
    this.available = available;
  }

  /** Makes future pulls of `ref` fail with a registry 404 (or succeed again). Without a tag: every tag. */
  setImageMissing(ref: string, missing = true): void {
    this.images.setMissing(ref, missing);
  }

  /** Makes an image present without a pull (as `ctr images import` does); returns its id. */
  loadImage(ref: string): string {
    return this.images.add(ref).id;
  }

  /** The configuration a container was created with (a copy). */
  containerConfig(containerId: string): ContainerConfig {
    return ContainerConfig.fromPartial(this.mustContainer(containerId).config);
  }

  /** The configuration a sandbox was created with (a copy). */
  sandboxConfig(podSandboxId: string): PodSandboxConfig {
    return PodSandboxConfig.fromPartial(this.mustSandbox(podSandboxId).config);
  }

  /** How much the runtime holds: for simulations and leak checks. */
  counts(): { sandboxes: number; containers: number; running: number; images: number; podIPs: number } {
    let running = 0;
    let podIPs = 0;
    for (const c of this.store.allContainers()) if (c.state === ContainerState.CONTAINER_RUNNING) running++;
    for (const s of this.store.allSandboxes()) if (s.ip !== '') podIPs++;
    return {
      sandboxes: this.store.sandboxCount,
      containers: this.store.containerCount,
      running,
      images: this.images.count,
      podIPs,
    };
  }

  /** Cancels every pending timer (scripted exits, stop deadlines, start delays). For shutdown. */
  close(): void {
    for (const c of this.store.allContainers()) {
      this.lifecycle.release(c);
      if (c.starting) {
        c.starting.cancel();
        c.starting.reject(new NodeletError('Unavailable', 'runtime-fake: the runtime was closed'));
        c.starting = undefined;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // RuntimeService: version, status, config
  // ---------------------------------------------------------------------------------------------

  async version(_req?: VersionRequest): Promise<VersionResponse> {
    this.check();
    return {
      version: '0.1.0',
      runtimeName: RUNTIME_NAME,
      runtimeVersion: RUNTIME_VERSION,
      runtimeApiVersion: 'v1',
    };
  }

  async status(_req?: StatusRequest): Promise<StatusResponse> {
    this.check();
    return {
      status: { conditions: [...this.conditions.values()].map((c) => ({ ...c })) },
      info: {},
      runtimeHandlers: [{ name: '', features: { recursiveReadOnlyMounts: false, userNamespaces: false } }],
      features: { supplementalGroupsPolicy: false, userNamespacesHostNetwork: false, mountOptions: false },
    };
  }

  /** The kubelet passes the node's pod CIDR here; sandboxes created afterwards get IPs from it. */
  async updateRuntimeConfig(req: UpdateRuntimeConfigRequest): Promise<UpdateRuntimeConfigResponse> {
    this.check();
    const cidrs = req.runtimeConfig?.networkConfig?.podCidr ?? '';
    // Dual-stack lists ("v4,v6"): the fake hands out the IPv4 range only.
    const v4 = cidrs
      .split(',')
      .map((c) => c.trim())
      .find((c) => c.includes('.'));
    if (v4 && v4 !== this.ipPool.cidr) {
      const pool = new IpAllocator(v4);
      if (pool.cidr !== this.ipPool.cidr) this.ipPool = pool;
    }
    return {};
  }

  // ---------------------------------------------------------------------------------------------
  // RuntimeService: sandboxes
  // ---------------------------------------------------------------------------------------------

  async runPodSandbox(req: RunPodSandboxRequest): Promise<RunPodSandboxResponse> {
    this.check();
    const config = PodSandboxConfig.fromPartial(req.config ?? {});
    const metadata = config.metadata;
    if (!metadata || metadata.name === '')
      throw invalidInput('sandbox config must include metadata with a name');
    const behaviors = behaviorsFromAnnotations(config.annotations);
    const reservedName = `${metadata.name}_${metadata.namespace}_${metadata.uid}_${metadata.attempt}`;
    const holder = this.store.sandboxNameHolder(reservedName);
    if (holder !== undefined) {
      throw new NodeletError(
        'AlreadyExists',
        `failed to reserve sandbox name "${reservedName}": name "${reservedName}" is reserved for "${holder}"`,
      );
    }
    const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === NamespaceMode.NODE;
    if (hostNetwork && config.hostname !== '') {
      // containerd gives a host-network sandbox the node's UTS namespace, where runc cannot set a
      // hostname: the kubelet leaves it empty for such pods.
      throw new NodeletError(
        'Internal',
        'failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to set hostname without a private UTS namespace: unknown',
      );
    }
    const id = this.newId();
    let ip = '';
    let ipPool: IpAllocator | undefined;
    if (!hostNetwork) {
      const network = this.conditions.get('NetworkReady');
      if (network && !network.status) {
        throw new NodeletError(
          'Internal',
          `failed to setup network for sandbox "${id}": ${network.message || 'cni plugin not initialized'}`,
        );
      }
      try {
        ip = this.ipPool.allocate();
      } catch (err) {
        throw new NodeletError(
          'Internal',
          `failed to setup network for sandbox "${id}": ${errorMessage(err)}`,
        );
      }
      ipPool = this.ipPool;
    }
    const podUid = config.labels[POD_UID_LABEL];
    const sandbox: SandboxRecord = {
      id,
      reservedName,
      config,
      metadata,
      runtimeHandler: req.runtimeHandler ?? '',
      createdAt: this.creationStamp(),
      podUid,
      ip,
      ipPool,
      behaviors,
      containers: new Set(),
      state: PodSandboxState.SANDBOX_READY,
    };
    this.store.addSandbox(sandbox);
    this.logger?.debug('sandbox ready', { id, pod: `${metadata.namespace}/${metadata.name}`, ip });
    return { podSandboxId: id };
  }

  /**
   * Kills the sandbox's containers at once (timeout 0, as runtimes do), tears its network down (the
   * IP goes back to the pool and PodSandboxStatus reports none, as containerd) and marks it NOTREADY.
   */
  async stopPodSandbox(req: StopPodSandboxRequest): Promise<StopPodSandboxResponse> {
    this.check();
    const sandbox = this.mustSandbox(req.podSandboxId);
    for (const c of sandbox.containers) this.lifecycle.kill(c, 'its sandbox was stopped');
    sandbox.state = PodSandboxState.SANDBOX_NOTREADY;
    this.releaseIp(sandbox);
    return {};
  }

  /** Removes the sandbox, its containers (killed first) and its IP. Unknown ids succeed. */
  async removePodSandbox(req: RemovePodSandboxRequest): Promise<RemovePodSandboxResponse> {
    this.check();
    const sandbox = this.store.sandbox(req.podSandboxId);
    if (!sandbox) return {};
    for (const c of [...sandbox.containers]) this.forgetContainer(c, 'its sandbox was removed');
    sandbox.state = PodSandboxState.SANDBOX_NOTREADY;
    this.releaseIp(sandbox);
    this.store.deleteSandbox(sandbox);
    return {};
  }

  async podSandboxStatus(req: PodSandboxStatusRequest): Promise<PodSandboxStatusResponse> {
    this.check();
    const sandbox = this.mustSandbox(req.podSandboxId);
    return { status: toPodSandboxStatus(sandbox), info: {}, containersStatuses: [], timestamp: this.nowNs() };
  }

  async listPodSandbox(req: ListPodSandboxRequest): Promise<ListPodSandboxResponse> {
    this.check();
    const items = [];
    for (const s of this.store.findSandboxes(req.filter)) items.push(toPodSandbox(s));
    return { items };
  }

  // ---------------------------------------------------------------------------------------------
  // RuntimeService: containers
  // ---------------------------------------------------------------------------------------------

  async createContainer(req: CreateContainerRequest): Promise<CreateContainerResponse> {
    this.check();
    const sandbox = this.store.sandbox(req.podSandboxId);
    if (!sandbox) throw notFound(`failed to find sandbox id "${req.podSandboxId}": not found`);
    if (!isSandboxReady(sandbox))
      throw failedPrecondition(`sandbox container "${sandbox.id}" is not running`);
    const config = ContainerConfig.fromPartial(req.config ?? {});
    const metadata = config.metadata;
    if (!metadata || metadata.name === '')
      throw invalidInput('container config must include metadata with a name');
    const imageName = config.image?.image ?? '';
    if (imageName === '') throw invalidInput(`container "${metadata.name}": config must name an image`);
    const image = this.images.resolve(imageName);
    if (!image) throw notFound(`failed to resolve image "${imageName}": not found`);

    const behavior = resolveBehavior(this.behaviorLayers(sandbox, config, imageName));
    if (behavior.failCreate !== undefined) throw new NodeletError('Internal', behavior.failCreate);

    const sm = sandbox.metadata;
    const reservedName = `${metadata.name}_${sm.name}_${sm.namespace}_${sm.uid}_${metadata.attempt}`;
    const holder = this.store.containerNameHolder(reservedName);
    if (holder !== undefined) {
      throw new NodeletError(
        'AlreadyExists',
        `failed to reserve container name "${reservedName}": name "${reservedName}" is reserved for "${holder}"`,
      );
    }
    const logDirectory = sandbox.config.logDirectory;
    const podUid = config.labels[POD_UID_LABEL];
    const c: ContainerRecord = {
      id: this.newId(),
      sandbox,
      reservedName,
      config,
      metadata,
      podUid,
      imageId: image.id,
      statusImage: image.repoTags[0] ?? image.id,
      statusImageRef: image.repoDigests[0] ?? image.id,
      logPath:
        logDirectory !== '' && config.logPath !== '' ? join(logDirectory, config.logPath) : config.logPath,
      createdAt: this.creationStamp(),
      behavior,
      state: ContainerState.CONTAINER_CREATED,
      startedAt: 0n,
      finishedAt: 0n,
      exitCode: 0,
      reason: '',
      message: '',
      resources: config.linux?.resources,
      starting: undefined,
      cancelExit: undefined,
      termination: undefined,
      waiters: undefined,
      logs: undefined,
      probes: behavior.probes,
      probeCounts: undefined,
    };
    this.store.addContainer(c);
    return { containerId: c.id };
  }

  async startContainer(req: StartContainerRequest): Promise<StartContainerResponse> {
    this.check();
    const c = this.mustContainer(req.containerId);
    if (c.state !== ContainerState.CONTAINER_CREATED || c.starting) {
      throw failedPrecondition(
        `container "${c.id}" is in ${c.starting ? 'starting' : containerStateName(c.state)} state, want CONTAINER_CREATED`,
      );
    }
    if (!isSandboxReady(c.sandbox))
      throw failedPrecondition(`sandbox container "${c.sandbox.id}" is not running`);
    const b = c.behavior;
    if (b.startDelayMs > 0) {
      await new Promise<void>((resolve, reject) => {
        const cancel = this.clock.setTimeout(() => {
          c.starting = undefined;
          resolve();
        }, b.startDelayMs);
        c.starting = { cancel, reject };
      });
    }
    if (b.failStart !== undefined) {
      this.lifecycle.startFailed(c, b.failStart);
      throw new NodeletError('Internal', b.failStart);
    }
    try {
      this.containerLogs.open(c);
    } catch (err) {
      const message = `failed to create container loggers: failed to create and open log file: ${errorMessage(err)}`;
      this.lifecycle.startFailed(c, message);
      throw new NodeletError('Internal', message);
    }
    c.state = ContainerState.CONTAINER_RUNNING;
    // Not before its creation stamp, which may run a few ns ahead of the clock (see creationStamp).
    const now = this.nowNs();
    c.startedAt = now > c.createdAt ? now : c.createdAt;
    if (b.stdout !== undefined) this.appendLog(c, 'stdout', withNewline(b.stdout));
    if (b.stderr !== undefined) this.appendLog(c, 'stderr', withNewline(b.stderr));
    this.lifecycle.scheduleExit(c);
    return {};
  }

  /**
   * SIGTERM, then SIGKILL when `timeout` seconds have passed. A plain container exits at once with
   * 143; `stopDelay` takes that long; `ignoreStop` is killed (137) at exactly the deadline. Resolves
   * once the container has exited. Timeout 0 kills at once. Idempotent on stopped containers.
   */
  async stopContainer(req: StopContainerRequest): Promise<StopContainerResponse> {
    this.check();
    const c = this.mustContainer(req.containerId);
    if (c.starting) {
      this.lifecycle.kill(c, 'it was stopped');
      return {};
    }
    if (c.state !== ContainerState.CONTAINER_RUNNING) return {};
    const graceMs = Math.max(0, Number(req.timeout ?? 0)) * 1000;
    const { stopDelayMs, stopExitCode } = c.behavior;
    if (graceMs === 0) {
      this.lifecycle.exit(c, SIGKILL_EXIT_CODE);
      return {};
    }
    if (stopDelayMs === 0) {
      this.lifecycle.exit(c, stopExitCode);
      return {};
    }
    if (stopDelayMs < graceMs) this.lifecycle.terminateIn(c, stopDelayMs, stopExitCode);
    else this.lifecycle.terminateIn(c, graceMs, SIGKILL_EXIT_CODE);
    await this.lifecycle.exited(c);
    return {};
  }

  /** Removes the container, killing it first if it runs (as containerd does). Unknown ids succeed. */
  async removeContainer(req: RemoveContainerRequest): Promise<RemoveContainerResponse> {
    this.check();
    const c = this.store.container(req.containerId);
    if (c) this.forgetContainer(c, 'it was removed');
    return {};
  }

  async listContainers(req: ListContainersRequest): Promise<ListContainersResponse> {
    this.check();
    const containers = [];
    for (const c of this.store.findContainers(req.filter)) containers.push(toContainer(c));
    return { containers };
  }

  async containerStatus(req: ContainerStatusRequest): Promise<ContainerStatusResponse> {
    this.check();
    return { status: toContainerStatus(this.mustContainer(req.containerId)), info: {} };
  }

  async updateContainerResources(
    req: UpdateContainerResourcesRequest,
  ): Promise<UpdateContainerResourcesResponse> {
    this.check();
    const c = this.mustContainer(req.containerId);
    if (c.state === ContainerState.CONTAINER_EXITED) {
      throw failedPrecondition(
        `container "${c.id}" is in CONTAINER_EXITED state; cannot update its resources`,
      );
    }
    if (req.linux) c.resources = LinuxContainerResources.fromPartial(req.linux);
    return {};
  }

  async reopenContainerLog(req: ReopenContainerLogRequest): Promise<ReopenContainerLogResponse> {
    this.check();
    const c = this.mustContainer(req.containerId);
    if (c.state !== ContainerState.CONTAINER_RUNNING)
      throw failedPrecondition(`container "${c.id}" is not running`);
    try {
      this.containerLogs.open(c);
    } catch (err) {
      throw new NodeletError(
        'Internal',
        `failed to reopen container log "${c.logPath}": ${errorMessage(err)}`,
      );
    }
    return {};
  }

  // ---------------------------------------------------------------------------------------------
  // RuntimeService: exec, attach, port-forward
  // ---------------------------------------------------------------------------------------------

  async execSync(req: ExecSyncRequest): Promise<ExecSyncResponse> {
    this.check();
    const c = this.mustContainer(req.containerId);
    if (c.state !== ContainerState.CONTAINER_RUNNING) {
      throw failedPrecondition(
        `failed to exec in container: container is in ${containerStateName(c.state)} state`,
      );
    }
    const cmd = [...(req.cmd ?? [])];
    const controller = new AbortController();
    const sm = c.sandbox.metadata;
    const context: ExecContext = {
      containerId: c.id,
      containerName: c.metadata.name,
      podSandboxId: c.sandbox.id,
      podName: sm.name,
      podNamespace: sm.namespace,
      podUid: sm.uid,
      clock: this.clock,
      signal: controller.signal,
    };
    const run = this.runExec(c.id, cmd, context);
    const timeoutS = Number(req.timeout ?? 0);
    let result: ExecResult;
    if (timeoutS > 0) {
      let cancel = () => {};
      const timedOut = new Promise<never>((_, reject) => {
        cancel = this.clock.setTimeout(() => {
          controller.abort(deadlineExceeded('exec timed out'));
          reject(
            deadlineExceeded(
              `failed to exec in container: timeout ${timeoutS}s exceeded: context deadline exceeded`,
            ),
          );
        }, timeoutS * 1000);
      });
      try {
        result = await Promise.race([run, timedOut]);
      } finally {
        cancel();
      }
    } else {
      result = await run;
    }
    return {
      stdout: toBuffer(result.stdout),
      stderr: toBuffer(result.stderr),
      exitCode: result.exitCode ?? 0,
    };
  }

  async exec(_req?: ExecRequest): Promise<ExecResponse> {
    this.check();
    throw unimplemented('the fake runtime has no streaming server: Exec is not implemented (use ExecSync)');
  }

  async attach(_req?: AttachRequest): Promise<AttachResponse> {
    this.check();
    throw unimplemented('the fake runtime has no streaming server: Attach is not implemented');
  }

  async portForward(_req?: PortForwardRequest): Promise<PortForwardResponse> {
    this.check();
    throw unimplemented('the fake runtime has no streaming server: PortForward is not implemented');
  }

  // ---------------------------------------------------------------------------------------------
  // RuntimeService: stats (identities and time stamps; usage is zero)
  // ---------------------------------------------------------------------------------------------

  async containerStats(req: ContainerStatsRequest): Promise<ContainerStatsResponse> {
    this.check();
    return { stats: toContainerStats(this.mustContainer(req.containerId), this.nowNs()) };
  }

  async listContainerStats(req: ListContainerStatsRequest): Promise<ListContainerStatsResponse> {
    this.check();
    const filter: ContainerStatsFilter | undefined = req.filter;
    const now = this.nowNs();
    const stats: ContainerStats[] = [];
    const containerFilter: ContainerFilter | undefined = filter && {
      id: filter.id,
      podSandboxId: filter.podSandboxId,
      labelSelector: filter.labelSelector,
      state: { state: ContainerState.CONTAINER_RUNNING },
    };
    for (const c of this.store.findContainers(containerFilter)) {
      if (c.state === ContainerState.CONTAINER_RUNNING) stats.push(toContainerStats(c, now));
    }
    return { stats };
  }

  async podSandboxStats(req: PodSandboxStatsRequest): Promise<PodSandboxStatsResponse> {
    this.check();
    return { stats: toPodSandboxStats(this.mustSandbox(req.podSandboxId), this.nowNs()) };
  }

  async listPodSandboxStats(req: ListPodSandboxStatsRequest): Promise<ListPodSandboxStatsResponse> {
    this.check();
    const filter: PodSandboxFilter | undefined = req.filter && {
      id: req.filter.id,
      labelSelector: req.filter.labelSelector,
      state: { state: PodSandboxState.SANDBOX_READY },
    };
    const now = this.nowNs();
    const stats: PodSandboxStats[] = [];
    for (const s of this.store.findSandboxes(filter))
      if (isSandboxReady(s)) stats.push(toPodSandboxStats(s, now));
    return { stats };
  }

  // ---------------------------------------------------------------------------------------------
  // ImageService
  // ---------------------------------------------------------------------------------------------

  async listImages(req: ListImagesRequest): Promise<ListImagesResponse> {
    this.check();
    const wanted = req.filter?.image?.image;
    if (wanted) {
      const record = this.images.resolve(wanted);
      return { images: record ? [toImageMessage(record)] : [] };
    }
    return { images: this.images.list().map(toImageMessage) };
  }

  async imageStatus(req: ImageStatusRequest): Promise<ImageStatusResponse> {
    this.check();
    const record = this.images.resolve(req.image?.image ?? '');
    return { image: record && toImageMessage(record), info: {} };
  }

  async pullImage(req: PullImageRequest): Promise<PullImageResponse> {
    this.check();
    const record = await this.images.pull(req.image?.image ?? '');
    return { imageRef: record.id };
  }

  async removeImage(req: RemoveImageRequest): Promise<RemoveImageResponse> {
    this.check();
    this.images.remove(req.image?.image ?? '');
    return {};
  }

  async imageFsInfo(_req?: ImageFsInfoRequest): Promise<ImageFsInfoResponse> {
    this.check();
    return {
      imageFilesystems: [
        {
          timestamp: this.nowNs(),
          fsId: { mountpoint: IMAGE_FS_MOUNTPOINT },
          usedBytes: { value: this.images.usedBytes() },
          inodesUsed: { value: BigInt(this.images.count) * 100n },
        },
      ],
      containerFilesystems: [],
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Internals
  // ---------------------------------------------------------------------------------------------

  private check(): void {
    if (!this.available) {
      throw unavailable(
        'connection error: desc = "transport: Error while dialing: dial unix /run/nodelet-fake.sock: connect: connection refused"',
      );
    }
  }

  private mustSandbox(id: string): SandboxRecord {
    const s = this.store.sandbox(id);
    if (!s) throw notFound(`an error occurred when try to find sandbox "${id}": not found`);
    return s;
  }

  private mustContainer(id: string): ContainerRecord {
    const c = this.store.container(id);
    if (!c) throw notFound(`an error occurred when try to find container "${id}": not found`);
    return c;
  }

  /** 64 hex digits, like containerd's ids; deterministic per runtime instance. */
  private newId(): string {
    return createHash('sha256').update(`${this.idSalt}/${this.idCounter++}`).digest('hex');
  }

  private nowNs(): bigint {
    return msToNs(this.clock.now());
  }

  /**
   * The clock's time, moved on by a nanosecond when needed so that creation times are strictly
   * increasing: under a virtual clock many objects are made in the same instant, and the kubelet
   * orders sandboxes and container attempts by creation time.
   */
  private creationStamp(): bigint {
    let ns = this.nowNs();
    if (ns <= this.lastCreatedNs) ns = this.lastCreatedNs + 1n;
    this.lastCreatedNs = ns;
    return ns;
  }

  private behaviorLayers(
    sandbox: SandboxRecord,
    config: ContainerConfig,
    image: string,
  ): ContainerBehavior[] {
    const name = config.metadata!.name;
    const layers: ContainerBehavior[] = [];
    const push = (b: ContainerBehavior | undefined) => void (b && layers.push(b));
    push(sandbox.behaviors?.get(ALL_CONTAINERS));
    push(sandbox.behaviors?.get(name));
    const own = behaviorsFromAnnotations(config.annotations);
    push(own?.get(ALL_CONTAINERS));
    push(own?.get(name));
    if (this.scripts.length > 0) {
      const sm = sandbox.metadata;
      const target: ScriptTarget = {
        name,
        podName: sm.name,
        podNamespace: sm.namespace,
        podUid: sm.uid,
        podSandboxId: sandbox.id,
        image,
        labels: config.labels,
        annotations: config.annotations,
        podLabels: sandbox.config.labels,
        podAnnotations: sandbox.config.annotations,
      };
      for (const s of this.scripts) if (s.matches(target)) layers.push(s.behavior);
    }
    return layers;
  }

  private releaseIp(sandbox: SandboxRecord): void {
    if (sandbox.ip === '') return;
    sandbox.ipPool?.release(sandbox.ip);
    sandbox.ip = '';
  }

  /** Kills the container if it runs, then forgets it. */
  private forgetContainer(c: ContainerRecord, why: string): void {
    this.lifecycle.kill(c, why);
    this.lifecycle.release(c);
    this.store.deleteContainer(c);
  }

  private appendLog(c: ContainerRecord, stream: LogStream, text: string): void {
    this.containerLogs.append(c, this.nowNs(), stream, text);
  }

  private async runExec(containerId: string, cmd: string[], context: ExecContext): Promise<ExecResult> {
    for (const handler of [...this.execHandlers]) {
      const result = await handler(containerId, cmd, context);
      if (result !== undefined) return result;
    }
    return defaultExec(cmd, this.clock, context.signal);
  }
}

function toBuffer(data: string | Uint8Array | undefined): Buffer {
  if (data === undefined) return Buffer.alloc(0);
  return Buffer.from(data); // a copy for bytes, so a handler's buffer is not shared
}

function withNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

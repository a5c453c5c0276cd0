/** The fake runtime's CRI container calls: create, start (with startDelay), stop with grace, remove, list, status. */
import { join } from 'node:path';
import { errorMessage, failedPrecondition, invalidInput, NodeletError, notFound } from '@nodelet/kernel';
import {
  ContainerConfig,
  ContainerState,
  type ContainerStatusRequest,
  type ContainerStatusResponse,
  type CreateContainerRequest,
  type CreateContainerResponse,
  LinuxContainerResources,
  type ListContainersRequest,
  type ListContainersResponse,
  type RemoveContainerRequest,
  type RemoveContainerResponse,
  type ReopenContainerLogRequest,
  type ReopenContainerLogResponse,
  type StartContainerRequest,
  type StartContainerResponse,
  type StopContainerRequest,
  type StopContainerResponse,
  type UpdateContainerResourcesRequest,
  type UpdateContainerResourcesResponse,
} from '@nodelet/cri';
import { resolveBehavior, SIGKILL_EXIT_CODE } from './behavior.js';
import { containerView } from './container-view.js';
import { startOutput } from './exec.js';
import { effectiveCommand } from './image-config.js';
import {
  type ContainerRecord,
  containerStateName,
  isSandboxReady,
  toContainer,
  toContainerStatus,
} from './records.js';
import { POD_UID_LABEL } from './runtime-store.js';
import { SandboxApi } from './sandbox-api.js';
import { withNewline } from './runtime-core.js';

export abstract class ContainerApi extends SandboxApi {
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
    const id = this.newId();
    const security = config.linux?.securityContext;
    if (security?.runAsGroup && !security.runAsUser && security.runAsUsername === '') {
      // containerd's spec generation: a group alone names no user to run as.
      throw invalidInput(
        `failed to generate container "${id}" spec: failed to generate user string: user group "${security.runAsGroup.value}" is specified without user`,
      );
    }
    const logDirectory = sandbox.config.logDirectory;
    const podUid = config.labels[POD_UID_LABEL];
    const c: ContainerRecord = {
      id,
      sandbox,
      reservedName,
      config,
      metadata,
      podUid,
      imageId: image.id,
      statusImage: image.repoTags[0] ?? image.id,
      statusImageRef: image.repoDigests[0] ?? image.id,
      imageConfig: image.config,
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
    this.writeStartOutput(c);
    this.lifecycle.scheduleExit(c);
    return {};
  }

  /**
   * What the process writes as it starts: the scripted stdout/stderr when the behaviour has them;
   * else the image entrypoint's start line (when the container keeps the entrypoint) and what its
   * command writes before it would block (see `startOutput`), e.g. `echo hello` → `hello`.
   */
  private writeStartOutput(c: ContainerRecord): void {
    const b = c.behavior;
    if (b.stdout !== undefined || b.stderr !== undefined) {
      if (b.stdout !== undefined) this.appendLog(c, 'stdout', withNewline(b.stdout));
      if (b.stderr !== undefined) this.appendLog(c, 'stderr', withNewline(b.stderr));
      return;
    }
    const { command, args } = c.config;
    if (command.length === 0 && c.imageConfig.stdout) this.appendLog(c, 'stdout', c.imageConfig.stdout);
    const out = startOutput(effectiveCommand(command, args, c.imageConfig), containerView(c));
    if (out.stdout !== '') this.appendLog(c, 'stdout', out.stdout);
    if (out.stderr !== '') this.appendLog(c, 'stderr', out.stderr);
  }

  /**
   * SIGTERM, then SIGKILL when `timeout` seconds have passed. A plain container exits at once with
   * 143; `stopDelay` takes that long; `ignoreStop` is killed (137) at exactly the deadline. Resolves
   * once the container has exited. Timeout 0 kills at once. Idempotent, as the CRI contract asks: a
   * stopped container and an unknown id succeed (as in CRI-O and containerd 1.7+).
   */
  async stopContainer(req: StopContainerRequest): Promise<StopContainerResponse> {
    this.check();
    const c = this.store.container(req.containerId);
    if (!c) return {};
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
}

import { mkdir, rm } from 'node:fs/promises';
import type { Container, Pod } from '@nodelet/api';
import {
  ContainerConfig,
  ContainerState,
  type Image,
  containerLogPath,
  CriAnnotations,
  CriLabels,
  Mount,
  NamespaceMode,
  nanosToMs,
  PodSandboxConfig,
  podLogsDirectory,
  PodSandboxState,
  Protocol,
  type RuntimeService,
} from '@nodelet/cri';
import { Backoff, type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import { hashContainer } from './container-hash.js';
import { containerEnv, EnvError, expandCommand } from './env.js';
import { ImagePullError, type ImagePuller, podRef } from './image-puller.js';
import {
  computePodActions,
  type ContainerToKill,
  type PodActions,
  type ProbeVerdicts,
} from './pod-actions.js';
import type { WaitingReason } from './pod-status.js';
import { containerResources, criLinuxResources } from './resources.js';
import { RuntimeCache } from './runtime-cache.js';
import {
  containerStateFromCri,
  type RuntimeContainer,
  type RuntimePodStatus,
  type RuntimeSandbox,
  emptyRuntimePodStatus,
} from './runtime-pod.js';
import { VolumeError, type VolumeManager } from './volumes.js';

/**
 * The kubelet's side of CRI (upstream kuberuntime): reads a pod's state back from the runtime through
 * our labels and annotations, and carries out the actions of one sync — sandbox, init containers, app
 * containers, kills — with CrashLoopBackOff and image pull policy on the way.
 */
/**
 * A nodelet label on every sandbox and container: the node that made it. Housekeeping removes only
 * its own node's orphans, so several kubelets (simulated nodes, tests) can share one runtime without
 * removing each other's pods — or sandboxes some other CRI client made.
 */
export const NODE_NAME_LABEL = 'nodelet.dev/node';

export interface KubeRuntimeOptions {
  nodeName: string;
  podLogsDir: string;
  memoryCapacityBytes: number;
  clock: Clock;
  logger: Logger;
  crashLoopBackoff?: Backoff;
  /** Minimum grace period when stopping a container on the kubelet's own initiative (upstream: 2 s). */
  minimumGracePeriodSeconds?: number;
  /** What is known of the runtime between reads; the kubelet shares it with PLEG. */
  cache?: RuntimeCache;
}

export interface SyncResult {
  /** Why containers wait, by container name (cleared for a container once it starts). */
  waiting: Map<string, WaitingReason>;
  /** When the pod should be synced again (a backoff ends), ms from now. */
  requeueAfterMs?: number;
  /** Whether anything was changed in the runtime. */
  changed: boolean;
  actions: PodActions;
  /** What this sync created: the sandbox (as PodSandboxStatus read it) and the containers it started. */
  created: { sandbox?: RuntimeSandbox; containerIds: string[] };
  /** Whether this sync stopped anything (a container or a sandbox). */
  killed: boolean;
}

export class KubeRuntime {
  readonly crashLoopBackoff: Backoff;
  private readonly cache: RuntimeCache;
  private readonly minGrace: number;
  /**
   * Pod IPs of ready sandboxes by sandbox id: a sandbox's network does not change in its life, so each
   * sync need not ask PodSandboxStatus again (a third of the CRI calls of starting a pod). Dropped when
   * the sandbox is seen not ready or the pod is removed.
   */
  private readonly sandboxIps = new Map<string, { ip: string; additionalIps: string[] }>();

  constructor(
    private readonly runtime: RuntimeService,
    private readonly images: ImagePuller,
    private readonly volumes: VolumeManager,
    private readonly options: KubeRuntimeOptions,
  ) {
    this.crashLoopBackoff = options.crashLoopBackoff ?? new Backoff(options.clock);
    this.minGrace = options.minimumGracePeriodSeconds ?? 2;
    this.cache = options.cache ?? new RuntimeCache();
  }

  /** Everything the runtime holds for one pod UID. */
  async getPodStatus(uid: string, name: string, namespace: string): Promise<RuntimePodStatus> {
    const selector = { [CriLabels.PodUID]: uid };
    const [sandboxes, containers] = await Promise.all([
      this.runtime.listPodSandbox({ filter: { id: '', labelSelector: selector } }),
      this.runtime.listContainers({ filter: { id: '', podSandboxId: '', labelSelector: selector } }),
    ]);
    const status = emptyRuntimePodStatus(uid, name, namespace);
    const ordered = [...sandboxes.items].sort((a, b) => Number(b.createdAt - a.createdAt));
    for (const sb of ordered) {
      const ready = sb.state === PodSandboxState.SANDBOX_READY;
      let ip = '';
      let additionalIps: string[] = [];
      if (ready) ({ ip, additionalIps } = await this.sandboxNetwork(sb.id));
      else this.sandboxIps.delete(sb.id);
      status.sandboxes.push({
        id: sb.id,
        ready,
        attempt: sb.metadata?.attempt ?? 0,
        createdAt: nanosToMs(sb.createdAt),
        ip,
        additionalIps,
      });
    }
    const running = new Set(
      containers.containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING).map((c) => c.id),
    );
    this.cache.podListed(uid, running);
    const details = await Promise.all(
      containers.containers.map(
        (c) => (running.has(c.id) && this.cache.runningContainer(c.id)) || this.readContainer(uid, c.id),
      ),
    );
    for (const c of details) if (c) status.containers.push(c);
    status.containers.sort((a, b) => b.createdAt - a.createdAt);
    return status;
  }

  /** One container's detailed status (ContainerStatus); undefined when it is gone. */
  private async readContainer(uid: string, containerId: string): Promise<RuntimeContainer | undefined> {
    const s = await this.runtime.containerStatus({ containerId, verbose: false }).then(
      (r) => r.status,
      () => undefined, // removed between list and status
    );
    if (!s) return undefined;
    const container: RuntimeContainer = {
      id: s.id,
      name: s.labels[CriLabels.ContainerName] ?? s.metadata?.name ?? '',
      state: containerStateFromCri(s.state),
      image: s.image?.image ?? '',
      imageRef: s.imageRef,
      createdAt: nanosToMs(s.createdAt),
      startedAt: nanosToMs(s.startedAt),
      finishedAt: nanosToMs(s.finishedAt),
      exitCode: s.exitCode,
      reason: s.reason,
      message: s.message,
      restartCount: Number(s.annotations[CriAnnotations.ContainerRestartCount] ?? 0),
      hash: s.annotations[CriAnnotations.ContainerHash] ?? '',
    };
    this.cache.containerRead(uid, container);
    return container;
  }

  /**
   * The pod's runtime status after a sync that changed it. A sync that only created a sandbox and started
   * containers knows what it made: the new sandbox was read when its IP was asked, and each started
   * container is read with one ContainerStatus — no relisting of the pod. A sync that killed anything
   * reads the whole pod again.
   */
  async statusAfterSync(before: RuntimePodStatus, result: SyncResult): Promise<RuntimePodStatus> {
    if (!result.changed) return before;
    const { created } = result;
    if (result.killed) return this.getPodStatus(before.uid, before.name, before.namespace);
    const status: RuntimePodStatus = {
      ...before,
      sandboxes: created.sandbox ? [created.sandbox, ...before.sandboxes] : [...before.sandboxes],
      containers: [...before.containers],
    };
    const started = await Promise.all(created.containerIds.map((id) => this.readContainer(before.uid, id)));
    for (const c of started) if (c) status.containers.push(c);
    status.sandboxes.sort((a, b) => b.createdAt - a.createdAt);
    status.containers.sort((a, b) => b.createdAt - a.createdAt);
    return status;
  }

  /** A new sandbox as PodSandboxStatus reports it; its IPs are kept while it is ready. */
  private async readSandbox(podSandboxId: string, attempt: number): Promise<RuntimeSandbox> {
    const { status: s } = await this.runtime.podSandboxStatus({ podSandboxId, verbose: false });
    const ready = s?.state === PodSandboxState.SANDBOX_READY;
    const network = {
      ip: s?.network?.ip ?? '',
      additionalIps: s?.network?.additionalIps.map((p) => p.ip) ?? [],
    };
    if (ready && network.ip) this.sandboxIps.set(podSandboxId, network);
    return {
      id: podSandboxId,
      ready,
      attempt: s?.metadata?.attempt ?? attempt,
      createdAt: nanosToMs(s?.createdAt ?? 0n),
      ...network,
    };
  }

  /** A ready sandbox's IPs: from PodSandboxStatus once, then from memory. */
  private async sandboxNetwork(podSandboxId: string): Promise<{ ip: string; additionalIps: string[] }> {
    let network = this.sandboxIps.get(podSandboxId);
    if (!network) {
      const s = await this.runtime.podSandboxStatus({ podSandboxId, verbose: false });
      network = {
        ip: s.status?.network?.ip ?? '',
        additionalIps: s.status?.network?.additionalIps.map((p) => p.ip) ?? [],
      };
      // A sandbox without an IP yet (host network, or a runtime still setting it up) is asked again.
      if (network.ip) this.sandboxIps.set(podSandboxId, network);
    }
    return network;
  }

  /** One sync: compute the actions and carry them out. */
  async syncPod(
    pod: Pod,
    status: RuntimePodStatus,
    hostIP: string,
    probes?: ProbeVerdicts,
    previousWaiting?: ReadonlyMap<string, WaitingReason>,
  ): Promise<SyncResult> {
    const actions = computePodActions(pod, status, probes);
    const result: SyncResult = {
      waiting: new Map(previousWaiting),
      changed: false,
      actions,
      created: { containerIds: [] },
      killed: false,
    };
    const uid = pod.metadata!.uid!;
    const wants = (ms: number) => {
      result.requeueAfterMs = Math.max(0, Math.min(result.requeueAfterMs ?? Infinity, ms));
    };

    if (actions.killPod) {
      result.killed = await this.killPodWithStatus(pod, status, undefined, 'the pod sandbox changed');
      result.changed = result.killed;
      if (!actions.createSandbox) return result;
    }
    for (const kill of actions.containersToKill) {
      this.options.logger.info('Killing container', {
        pod: podRef(pod),
        container: kill.container.name,
        reason: kill.message,
      });
      await this.killContainer(pod, kill.container, undefined, kill.reason);
      result.changed = true;
      result.killed = true;
    }

    let sandboxId = actions.sandboxId;
    let podIP = status.sandboxes[0]?.ip ?? '';
    const sandboxConfig = this.sandboxConfig(pod, actions.attempt);
    const toStart: Container[] = actions.nextInitContainerToStart
      ? [actions.nextInitContainerToStart]
      : actions.containersToStart;
    // A pod's first start waits on containerd for every call in turn, so what does not depend on the
    // sandbox runs beside its creation: volumes, and whether the images are present. The sandbox's IP is
    // waited for before a container only when that container's environment needs it.
    const volumesReady = this.options.clock.track(this.volumes.setUp(pod));
    volumesReady.catch(() => undefined); // handled below, after the sandbox
    const imagesPresent = new Map<string, Promise<Image | undefined>>();
    let sandboxRead: Promise<RuntimeSandbox> | undefined;
    // The new sandbox's status (its IP, for the pod status) is read while the first container starts:
    // StartContainer takes long enough to hide it, CreateContainer would wait on it in containerd.
    const readNewSandbox = () => {
      if (actions.createSandbox && !sandboxRead) {
        sandboxRead = this.readSandbox(sandboxId, actions.attempt);
        sandboxRead.catch(() => undefined); // awaited after the containers start
      }
    };
    if (actions.createSandbox) {
      for (const c of toStart) {
        const present = this.images.imagePresent(c);
        present?.catch(() => undefined); // a failure is met again by ensureImageExists
        if (present) imagesPresent.set(c.name, present);
      }
      try {
        await this.options.clock.track(mkdir(sandboxConfig.logDirectory, { recursive: true }));
        sandboxId = (
          await this.cache.creating(uid, () =>
            this.runtime.runPodSandbox({
              config: sandboxConfig,
              runtimeHandler: pod.spec?.runtimeClassName ?? '',
            }),
          )
        ).podSandboxId;
        if (toStart.some(usesPodIP)) {
          sandboxRead = this.readSandbox(sandboxId, actions.attempt);
          result.created.sandbox = await sandboxRead;
          podIP = result.created.sandbox.ip;
        }
        result.changed = true;
      } catch (err) {
        const message = `Failed to create pod sandbox: ${errorMessage(err)}`;
        this.options.logger.error('CreatePodSandbox failed', { pod: podRef(pod), err: errorMessage(err) });
        for (const c of [...(pod.spec?.initContainers ?? []), ...pod.spec!.containers]) {
          result.waiting.set(c.name, { reason: 'ContainerCreating', message });
        }
        wants(10_000);
        return result;
      }
    }

    let volumePaths: Map<string, string>;
    try {
      volumePaths = await volumesReady;
    } catch (err) {
      const message = errorMessage(err);
      this.options.logger.error('Unable to attach or mount volumes', { pod: podRef(pod), err: message });
      for (const c of pod.spec!.containers)
        result.waiting.set(c.name, { reason: 'ContainerCreating', message });
      wants(10_000);
      readNewSandbox();
      await this.settleSandboxRead(result, sandboxRead);
      return result;
    }

    await Promise.all(
      toStart.map(async (container) => {
        const outcome = await this.startContainer(
          pod,
          container,
          status,
          sandboxId,
          sandboxConfig,
          podIP,
          hostIP,
          volumePaths,
          imagesPresent.get(container.name),
          readNewSandbox,
        );
        if (outcome.started) {
          result.waiting.delete(container.name);
          result.changed = true;
          result.created.containerIds.push(outcome.containerId!);
        } else {
          result.waiting.set(container.name, outcome.waiting!);
          if (outcome.retryAt !== undefined) wants(outcome.retryAt - this.options.clock.now());
        }
      }),
    );
    // Containers that need nothing (running, or exited and done for good under the restart policy) have
    // no waiting reason: a container whose start failed under `Never` shows as terminated, as upstream.
    for (const name of [...result.waiting.keys()]) {
      const latest = status.containers.find((c) => c.name === name);
      if (
        !toStart.some((c) => c.name === name) &&
        (latest?.state === 'running' || latest?.state === 'exited')
      ) {
        result.waiting.delete(name);
      }
    }
    readNewSandbox();
    await this.settleSandboxRead(result, sandboxRead);
    return result;
  }

  /** The new sandbox's status, read beside the containers' start, for the pod status after the sync. */
  private async settleSandboxRead(result: SyncResult, read: Promise<RuntimeSandbox> | undefined) {
    if (!read || result.created.sandbox) return;
    try {
      result.created.sandbox = await read;
    } catch (err) {
      // The next sync reads the pod again: PLEG reports a sandbox this sync's status did not have.
      this.options.logger.warn('PodSandboxStatus of a new sandbox failed', { err: errorMessage(err) });
    }
  }

  /** Stops every running container (grace period: override, else the pod's) and every ready sandbox. */
  async killPodWithStatus(
    pod: Pod,
    status: RuntimePodStatus,
    gracePeriodOverride: number | undefined,
    why = 'the pod is being terminated',
  ): Promise<boolean> {
    let changed = false;
    const running = status.containers.filter(
      (c) => c.state === 'running' || c.state === 'created' || c.state === 'unknown',
    );
    if (running.length > 0) {
      this.options.logger.info('Killing pod containers', {
        pod: podRef(pod),
        reason: why,
        containers: running.length,
      });
    }
    await Promise.all(
      running.map(async (c) => {
        await this.killContainer(pod, c, gracePeriodOverride);
        changed = true;
      }),
    );
    for (const sb of status.sandboxes.filter((s) => s.ready)) {
      await this.runtime.stopPodSandbox({ podSandboxId: sb.id });
      changed = true;
    }
    return changed;
  }

  /** Removes every container and sandbox of the pod, and its volumes. */
  async removePod(pod: Pod, status: RuntimePodStatus): Promise<void> {
    for (const c of status.containers) {
      this.cache.forgetContainer(c.id);
      await this.runtime.removeContainer({ containerId: c.id });
    }
    for (const sb of status.sandboxes) {
      await this.runtime.removePodSandbox({ podSandboxId: sb.id });
      this.sandboxIps.delete(sb.id);
    }
    await this.options.clock.track(this.volumes.tearDown(pod.metadata!.uid!));
    const meta = pod.metadata!;
    await this.options.clock.track(
      rm(podLogsDirectory(this.options.podLogsDir, meta.namespace ?? 'default', meta.name!, meta.uid!), {
        recursive: true,
        force: true,
      }),
    );
    this.crashLoopBackoff.gc();
  }

  /**
   * Stops a container with the grace period upstream's setTerminationGracePeriod picks: the pod's
   * deletion grace period, else — for a kill a failed liveness or startup probe caused — that probe's
   * `terminationGracePeriodSeconds` when set, else the pod's; at least the minimum; an override wins.
   */
  async killContainer(
    pod: Pod,
    container: RuntimeContainer,
    gracePeriodOverride: number | undefined,
    reason?: ContainerToKill['reason'],
  ): Promise<void> {
    let grace = pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    if (pod.metadata?.deletionGracePeriodSeconds == null) {
      const spec = pod.spec?.containers.find((c) => c.name === container.name);
      const probe =
        reason === 'LivenessProbe'
          ? spec?.livenessProbe
          : reason === 'StartupProbe'
            ? spec?.startupProbe
            : undefined;
      if (typeof probe?.terminationGracePeriodSeconds === 'number')
        grace = probe.terminationGracePeriodSeconds;
    }
    if (grace < this.minGrace) grace = this.minGrace;
    if (gracePeriodOverride !== undefined) grace = gracePeriodOverride;
    this.cache.forgetContainer(container.id);
    await this.runtime.stopContainer({ containerId: container.id, timeout: BigInt(grace) });
  }

  private backoffKey(pod: Pod, container: Container): string {
    return `${pod.metadata?.name}_${pod.metadata?.namespace}_${pod.metadata?.uid}_${container.name}_${hashContainer(container)}`;
  }

  private async startContainer(
    pod: Pod,
    container: Container,
    status: RuntimePodStatus,
    sandboxId: string,
    sandboxConfig: PodSandboxConfig,
    podIP: string,
    hostIP: string,
    volumePaths: Map<string, string>,
    imagePresent?: Promise<Image | undefined>,
    /** Called once the container exists, as its start begins. */
    created?: () => void,
  ): Promise<{ started: boolean; containerId?: string; waiting?: WaitingReason; retryAt?: number }> {
    const clock = this.options.clock;
    // CrashLoopBackOff, as upstream doBackOff: measured from when the newest *exited* instance finished.
    // Not only the newest instance: one a failed liveness probe has just killed is still running in the
    // status this sync started from, and its restart backs off from the instance before it.
    const latest = status.containers.find((c) => c.name === container.name);
    const lastExited = status.containers.find((c) => c.name === container.name && c.state === 'exited');
    if (lastExited) {
      const key = this.backoffKey(pod, container);
      if (this.crashLoopBackoff.isInBackoffSince(key, lastExited.finishedAt)) {
        const delay = this.crashLoopBackoff.get(key);
        return {
          started: false,
          waiting: {
            reason: 'CrashLoopBackOff',
            message: `back-off ${formatDuration(delay)} restarting failed container=${container.name} pod=${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})`,
          },
          retryAt: lastExited.finishedAt + delay,
        };
      }
      this.crashLoopBackoff.next(key, lastExited.finishedAt);
    }

    let image: { image: string; imageRef: string };
    try {
      image = await this.images.ensureImageExists(pod, container, imagePresent);
    } catch (err) {
      if (err instanceof ImagePullError) {
        this.options.logger.warn('Failed to ensure image', {
          pod: podRef(pod),
          container: container.name,
          reason: err.reason,
          err: err.message,
        });
        // After a failed pull, sync again shortly so the status moves on to ImagePullBackOff (as users see
        // it upstream), then again when the backoff ends.
        const retryAt =
          err.reason === 'ErrImagePull' ? clock.now() + 1_000 : this.images.backoffEndsAt(pod, container);
        return { started: false, waiting: { reason: err.reason, message: err.message }, retryAt };
      }
      return {
        started: false,
        waiting: { reason: 'ErrImagePull', message: errorMessage(err) },
        retryAt: clock.now() + 10_000,
      };
    }

    const restartCount = latest ? latest.restartCount + 1 : 0;
    let config: ContainerConfig;
    try {
      config = this.containerConfig(
        pod,
        container,
        image.image,
        restartCount,
        { podIP, hostIP },
        volumePaths,
      );
    } catch (err) {
      const message = errorMessage(err);
      this.options.logger.error('Failed to generate container config', {
        pod: podRef(pod),
        container: container.name,
        err: message,
      });
      return {
        started: false,
        waiting: { reason: 'CreateContainerConfigError', message },
        retryAt: clock.now() + 10_000,
      };
    }

    let containerId: string;
    try {
      containerId = (
        await this.cache.creating(pod.metadata!.uid!, () =>
          this.runtime.createContainer({ podSandboxId: sandboxId, config, sandboxConfig }),
        )
      ).containerId;
    } catch (err) {
      const message = errorMessage(err);
      this.options.logger.error('CreateContainer failed', {
        pod: podRef(pod),
        container: container.name,
        err: message,
      });
      return {
        started: false,
        waiting: { reason: 'CreateContainerError', message },
        retryAt: clock.now() + 10_000,
      };
    }
    created?.();
    try {
      await this.runtime.startContainer({ containerId });
    } catch (err) {
      const message = errorMessage(err);
      this.options.logger.error('StartContainer failed', {
        pod: podRef(pod),
        container: container.name,
        err: message,
      });
      return {
        started: false,
        waiting: { reason: 'RunContainerError', message },
        retryAt: clock.now() + 10_000,
      };
    }
    this.options.logger.debug('Started container', {
      pod: podRef(pod),
      container: container.name,
      containerID: containerId,
    });
    return { started: true, containerId };
  }

  sandboxConfig(pod: Pod, attempt: number): PodSandboxConfig {
    const meta = pod.metadata!;
    const namespace = meta.namespace ?? 'default';
    const ports = pod.spec!.containers.flatMap((c) => c.ports ?? []).filter((p) => p.hostPort);
    return PodSandboxConfig.fromPartial({
      metadata: { name: meta.name!, namespace, uid: meta.uid!, attempt },
      // A host-network pod has the node's hostname (upstream sets none; runc refuses one without a UTS
      // namespace of the pod's own).
      hostname: pod.spec?.hostNetwork ? '' : (pod.spec?.hostname ?? meta.name!),
      logDirectory: podLogsDirectory(this.options.podLogsDir, namespace, meta.name!, meta.uid!),
      portMappings: ports.map((p) => ({
        protocol: p.protocol === 'UDP' ? Protocol.UDP : p.protocol === 'SCTP' ? Protocol.SCTP : Protocol.TCP,
        containerPort: p.containerPort,
        hostPort: p.hostPort ?? 0,
        hostIp: p.hostIP ?? '',
      })),
      labels: {
        ...(meta.labels ?? {}),
        [CriLabels.PodName]: meta.name!,
        [CriLabels.PodNamespace]: namespace,
        [CriLabels.PodUID]: meta.uid!,
        [NODE_NAME_LABEL]: this.options.nodeName,
      },
      annotations: { ...(meta.annotations ?? {}) },
      linux: {
        cgroupParent: '',
        securityContext: {
          namespaceOptions: {
            network: pod.spec?.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD,
            pid: pod.spec?.hostPID
              ? NamespaceMode.NODE
              : pod.spec?.shareProcessNamespace
                ? NamespaceMode.POD
                : NamespaceMode.CONTAINER,
            ipc: pod.spec?.hostIPC ? NamespaceMode.NODE : NamespaceMode.POD,
          },
        },
      },
    });
  }

  private containerConfig(
    pod: Pod,
    container: Container,
    image: string,
    restartCount: number,
    facts: { podIP: string; hostIP: string },
    volumePaths: Map<string, string>,
  ): ContainerConfig {
    const meta = pod.metadata!;
    const env = containerEnv(pod, container, { ...facts, nodeName: this.options.nodeName });
    const mounts = (container.volumeMounts ?? []).map((vm) => {
      const hostPath = volumePaths.get(vm.name);
      if (!hostPath)
        throw new VolumeError(
          `container "${container.name}": volumeMount "${vm.name}" names no volume of the pod`,
        );
      return Mount.fromPartial({
        containerPath: vm.mountPath,
        hostPath: vm.subPath ? `${hostPath}/${vm.subPath}` : hostPath,
        readonly: !!vm.readOnly,
      });
    });
    const res = containerResources(pod, container, this.options.memoryCapacityBytes);
    return ContainerConfig.fromPartial({
      metadata: { name: container.name, attempt: restartCount },
      image: { image, userSpecifiedImage: container.image ?? '' },
      command: expandCommand(container.command, env),
      args: expandCommand(container.args, env),
      workingDir: container.workingDir ?? '',
      envs: env.map(([key, value]) => ({ key, value })),
      mounts,
      labels: {
        [CriLabels.PodName]: meta.name!,
        [CriLabels.PodNamespace]: meta.namespace ?? 'default',
        [CriLabels.PodUID]: meta.uid!,
        [CriLabels.ContainerName]: container.name,
        [NODE_NAME_LABEL]: this.options.nodeName,
      },
      annotations: {
        [CriAnnotations.ContainerHash]: hashContainer(container),
        [CriAnnotations.ContainerRestartCount]: String(restartCount),
        [CriAnnotations.ContainerTerminationMessagePath]:
          container.terminationMessagePath ?? '/dev/termination-log',
        [CriAnnotations.ContainerTerminationMessagePolicy]: container.terminationMessagePolicy ?? 'File',
        [CriAnnotations.PodTerminationGracePeriod]: String(pod.spec?.terminationGracePeriodSeconds ?? 30),
        ...(container.ports?.length
          ? { [CriAnnotations.ContainerPorts]: JSON.stringify(container.ports) }
          : {}),
      },
      logPath: containerLogPath(container.name, restartCount),
      stdin: !!container.stdin,
      stdinOnce: !!container.stdinOnce,
      tty: !!container.tty,
      linux: {
        resources: criLinuxResources(res),
        securityContext: {
          privileged: !!container.securityContext?.privileged,
          readonlyRootfs: !!container.securityContext?.readOnlyRootFilesystem,
        },
      },
    });
  }
}

export { EnvError };

/** Whether a container's environment has the pod IP (downward API `status.podIP`). */
function usesPodIP(container: Container): boolean {
  return !!container.env?.some((e) => e.valueFrom?.fieldRef?.fieldPath === 'status.podIP');
}

/** Go's time.Duration.String() for whole seconds and minutes: 10s, 1m20s, 5m0s. */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${s % 60}s`;
}

import { rm } from 'node:fs/promises';
import type { Container, Pod } from '@nodelet/api';
import { ContainerState, CriLabels, type Image, podLogsDirectory, type RuntimeService } from '@nodelet/cri';
import { type Backoff, type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import { type ImagePuller, podRef } from '../image-puller.js';
import {
  computePodActions,
  type ContainerToKill,
  type PodActions,
  type ProbeVerdicts,
} from '../pod-actions.js';
import type { WaitingReason } from '../pod-status.js';
import { RuntimeCache } from '../runtime-cache.js';
import {
  type RuntimeContainer,
  type RuntimePodStatus,
  type RuntimeSandbox,
  emptyRuntimePodStatus,
  newestContainerFirst,
  newestSandboxFirst,
} from '../runtime-pod.js';
import type { PodNetwork } from '../network/index.js';
import type { VolumeManager } from '../volume/index.js';
import { type ContainerOptions, PodContainers, usesPodIP } from './container.js';
import { PodSandboxes } from './sandbox.js';
import { isSidecar } from '../sidecar-actions.js';
import { killInTerminationOrder } from './termination-order.js';

/**
 * The kubelet's side of CRI (upstream kuberuntime_manager.go): reads a pod's state back from the runtime
 * through our labels and annotations, and carries out the actions of one sync — sandbox, init
 * containers, app containers, kills — computed by `computePodActions`. Sandboxes and containers are
 * their own modules (`sandbox.ts`, `container.ts`); removing what no pod wants is `gc.ts`.
 */
export interface KubeRuntimeOptions extends Pick<
  ContainerOptions,
  'objects' | 'services' | 'allocatable' | 'bus' | 'hooks' | 'security' | 'rootDir'
> {
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
  /** Pods' hostnames, DNS config and /etc/hosts (network/). */
  network: PodNetwork;
  /** The pod's cgroup, the sandbox's cgroup parent (cgroupsPerQOS); absent: the runtime's default. */
  cgroupParent?: (pod: Pod) => string;
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
  readonly sandboxes: PodSandboxes;
  readonly containers: PodContainers;
  private readonly cache: RuntimeCache;

  constructor(
    private readonly runtime: RuntimeService,
    images: ImagePuller,
    private readonly volumes: VolumeManager,
    private readonly options: KubeRuntimeOptions,
  ) {
    this.cache = options.cache ?? new RuntimeCache();
    this.sandboxes = new PodSandboxes(runtime, { ...options, cache: this.cache });
    this.containers = new PodContainers(runtime, images, { ...options, cache: this.cache });
  }

  get crashLoopBackoff(): Backoff {
    return this.containers.crashLoopBackoff;
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
    for (const sb of ordered) status.sandboxes.push(await this.sandboxes.listed(sb));
    const running = new Set(
      containers.containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING).map((c) => c.id),
    );
    this.cache.podListed(uid, running);
    const details = await Promise.all(
      containers.containers.map(
        (c) => (running.has(c.id) && this.cache.runningContainer(c.id)) || this.containers.read(uid, c.id),
      ),
    );
    for (const c of details) if (c) status.containers.push(c);
    status.containers.sort(newestContainerFirst);
    return status;
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
    const started = await Promise.all(created.containerIds.map((id) => this.containers.read(before.uid, id)));
    for (const c of started) if (c) status.containers.push(c);
    status.sandboxes.sort(newestSandboxFirst);
    status.containers.sort(newestContainerFirst);
    return status;
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
    const wants = (ms: number) => {
      result.requeueAfterMs = Math.max(0, Math.min(result.requeueAfterMs ?? Infinity, ms));
    };

    if (actions.killPod) {
      result.killed = await this.killPodWithStatus(pod, status, undefined, 'the pod sandbox changed');
      result.changed = result.killed;
      if (!actions.createSandbox) return result;
    }
    const killedAt = new Map<string, number>();
    for (const kill of actions.containersToKill) {
      this.options.logger.info('Killing container', {
        pod: podRef(pod),
        container: kill.container.name,
        reason: kill.message,
      });
      await this.containers.kill(pod, kill.container, {
        reason: kill.reason,
        podIP: status.sandboxes[0]?.ip,
      });
      killedAt.set(kill.container.id, this.options.clock.now());
      result.changed = true;
      result.killed = true;
    }
    // The starts back off from the containers this sync killed as from ones that exited by themselves.
    const startFrom = killedAt.size > 0 ? asExited(status, killedAt) : status;

    let sandboxId = actions.sandboxId;
    let podIP = status.sandboxes[0]?.ip ?? '';
    let additionalIPs = status.sandboxes[0]?.additionalIps ?? [];
    const sandboxConfig = this.sandboxes.config(pod, actions.attempt);
    // Init containers start one after the other, before the app containers (sidecars: several a sync);
    // ephemeral containers first, whatever the init containers do.
    const initsToStart: Container[] =
      actions.initContainersToStart ??
      (actions.nextInitContainerToStart ? [actions.nextInitContainerToStart] : []);
    const toStart: Container[] = [
      ...actions.ephemeralContainersToStart,
      ...initsToStart,
      ...actions.containersToStart,
    ];
    // A pod's first start waits on containerd for every call in turn, so what does not depend on the
    // sandbox runs beside its creation: volumes, and whether the images are present. The sandbox's IP is
    // waited for before a container when its /etc/hosts (any pod on the pod network) or its environment
    // needs it.
    const volumesReady = this.volumes.setUp(pod); // tracks its own file I/O
    volumesReady.catch(() => undefined); // handled below, after the sandbox
    const imagesPresent = new Map<string, Promise<Image | undefined>>();
    let sandboxRead: Promise<RuntimeSandbox> | undefined;
    // Otherwise (a host-network pod) the new sandbox's status is read while the first container starts:
    // StartContainer takes long enough to hide it, CreateContainer would wait on it in containerd.
    const readNewSandbox = () => {
      if (actions.createSandbox && !sandboxRead) {
        sandboxRead = this.sandboxes.read(sandboxId, actions.attempt);
        sandboxRead.catch(() => undefined); // awaited after the containers start
      }
    };
    if (actions.createSandbox) {
      for (const c of toStart) {
        const present = this.containers.imagePresent(c);
        present?.catch(() => undefined); // a failure is met again by ensureImageExists
        if (present) imagesPresent.set(c.name, present);
      }
      try {
        sandboxId = await this.sandboxes.create(pod, sandboxConfig);
        // The pod's /etc/hosts names its IPs: a pod on the pod network waits for them too.
        if (toStart.some(usesPodIP) || (toStart.length > 0 && !pod.spec?.hostNetwork)) {
          sandboxRead = this.sandboxes.read(sandboxId, actions.attempt);
          result.created.sandbox = await sandboxRead;
          podIP = result.created.sandbox.ip;
          additionalIPs = result.created.sandbox.additionalIps;
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

    // Written once per sync, when the first container's config asks for it (upstream makeHostsMount).
    let hostsFile: Promise<string | undefined> | undefined;
    const podIPs = pod.spec?.hostNetwork ? (hostIP ? [hostIP] : []) : podIP ? [podIP, ...additionalIPs] : [];
    const ensureHostsFile = () =>
      (hostsFile ??= this.options.clock.track(this.options.network.hostsFile(pod, podIPs)));
    const start = async (container: Container): Promise<boolean> => {
      const outcome = await this.containers.start(pod, container, startFrom, {
        hostsFile: ensureHostsFile,
        sandboxId,
        sandboxConfig,
        podIP,
        hostIP,
        volumePaths,
        readOnlyVolumes: this.volumes.readOnlyVolumes(pod),
        imagePresent: imagesPresent.get(container.name),
        created: readNewSandbox,
        pidTarget: pidTargetOf(container, status),
      });
      if (outcome.started) {
        result.waiting.delete(container.name);
        result.changed = true;
        result.created.containerIds.push(outcome.containerId!);
      } else {
        // Started, then killed (its postStart hook failed): the pod's containers are read again.
        if (outcome.containerId) result.changed = result.killed = true;
        result.waiting.set(container.name, outcome.waiting!);
        if (outcome.retryAt !== undefined) wants(outcome.retryAt - this.options.clock.now());
      }
      return outcome.started;
    };
    await Promise.all(actions.ephemeralContainersToStart.map(start));
    let initsStarted = true;
    for (const container of initsToStart) {
      const started = await start(container);
      // A sidecar running is what the next init container waits for: sync again for it at once (its
      // start is no news to PLEG's next relist, which this sync already saw).
      if (started && isSidecar(container)) wants(0);
      // A sidecar that cannot start (backing off) does not hold the others back; an init container does.
      if (!started && !isSidecar(container)) {
        initsStarted = false;
        break;
      }
    }
    if (initsStarted) await Promise.all(actions.containersToStart.map(start));
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
    const podIP = status.sandboxes.find((s) => s.ready)?.ip ?? '';
    // Sidecars stop after the app containers, in reverse order (termination-order.ts).
    await killInTerminationOrder(pod, running, this.options.clock, async (c, waitTurn) => {
      await this.containers.kill(pod, c, { gracePeriodOverride, podIP, waitTurn });
      changed = true;
    });
    for (const sb of status.sandboxes.filter((s) => s.ready)) {
      await this.runtime.stopPodSandbox({ podSandboxId: sb.id });
      changed = true;
    }
    return changed;
  }

  /** Unmounts and removes the pod's volumes (a pod stopped for good, still known). */
  async tearDownVolumes(pod: Pod): Promise<void> {
    await this.options.clock.track(this.volumes.tearDownVolumes(pod.metadata!.uid!));
  }

  /** Removes every container and sandbox of the pod, and its volumes. */
  async removePod(pod: Pod, status: RuntimePodStatus): Promise<void> {
    for (const c of status.containers) await this.containers.remove(c.id);
    for (const sb of status.sandboxes) await this.sandboxes.remove(sb.id);
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

  /** Stops one container (see PodContainers.kill for the grace period). */
  killContainer(
    pod: Pod,
    container: RuntimeContainer,
    gracePeriodOverride: number | undefined,
    reason?: ContainerToKill['reason'],
  ): Promise<void> {
    return this.containers.kill(pod, container, { gracePeriodOverride, reason });
  }

  sandboxConfig(pod: Pod, attempt: number) {
    return this.sandboxes.config(pod, attempt);
  }
}

/**
 * The runtime status with the given containers exited at the given times. A container a failed
 * liveness probe kills is restarted in the same sync; CrashLoopBackOff must count from that death (as
 * it does for a container that exited by itself), not from the instance before it — else every other
 * restart after a kill came at once.
 */
function asExited(status: RuntimePodStatus, killedAt: ReadonlyMap<string, number>): RuntimePodStatus {
  return {
    ...status,
    containers: status.containers.map((c) => {
      const at = killedAt.get(c.id);
      return at === undefined ? c : { ...c, state: 'exited', finishedAt: at };
    }),
  };
}

/**
 * The running container whose process namespace an ephemeral container joins (`targetContainerName`,
 * as `kubectl debug --target`): its id; undefined when it names none or that one is not running.
 */
function pidTargetOf(container: Container, status: RuntimePodStatus): string | undefined {
  const target = (container as { targetContainerName?: string }).targetContainerName;
  if (!target) return undefined;
  return status.containers.find((c) => c.name === target && c.state === 'running')?.id;
}

import type { Container, Pod, Service } from '@nodelet/api';
import {
  ContainerConfig,
  ContainerState,
  type Image,
  containerLogPath,
  CriAnnotations,
  CriLabels,
  nanosToMs,
  type PodSandboxConfig,
  type RuntimeService,
} from '@nodelet/cri';
import { Backoff, type Clock, errorMessage, type EventBus, type Logger } from '@nodelet/kernel';
import type { PodObjects } from '@nodelet/volume';
import { hashContainer } from '../container-hash.js';
import { expandCommand, makeEnvironmentVariables } from '../env.js';
import { ImagePullError, type ImagePuller, podRef } from '../image-puller.js';
import { StandalonePodObjects } from '../objects/standalone.js';
import type { ContainerToKill } from '../pod-actions.js';
import type { WaitingReason } from '../pod-status.js';
import { containerResources, criLinuxResources } from '../resources.js';
import type { RuntimeCache } from '../runtime-cache.js';
import { containerStateFromCri, type RuntimeContainer, type RuntimePodStatus } from '../runtime-pod.js';
import { containerMounts } from './mounts.js';
import { NODE_NAME_LABEL } from './sandbox.js';
import { exitedContainerMessage, terminationMessageMount } from './termination-message.js';

export interface ContainerOptions {
  nodeName: string;
  memoryCapacityBytes: number;
  clock: Clock;
  logger: Logger;
  cache: RuntimeCache;
  crashLoopBackoff?: Backoff;
  /** Minimum grace period when stopping a container on the kubelet's own initiative (upstream: 2 s). */
  minimumGracePeriodSeconds?: number;
  /** The ConfigMaps and Secrets env reads (default: none, as a standalone kubelet). */
  objects?: PodObjects;
  /** The Services of the pod's service variables (absent: none, as a standalone kubelet). */
  services?: (pod: Pod) => Promise<Service[]>;
  /** The node's allocatable resources: the limits resourceFieldRef reports for a container without. */
  allocatable?: () => Record<string, string>;
  /** Where the pod's events go (invalid envFrom keys). */
  bus?: EventBus;
  /** Kubelet root directory: termination-message files live under `<root>/pods/<uid>/containers/` (none without). */
  rootDir?: string;
}

/** What one container's start came to. */
export interface StartOutcome {
  started: boolean;
  containerId?: string;
  waiting?: WaitingReason;
  /** When the pod should be synced again to retry (clock time). */
  retryAt?: number;
}

/** Where a container starts: its pod's sandbox and what its environment and mounts need. */
export interface StartTarget {
  sandboxId: string;
  sandboxConfig: PodSandboxConfig;
  podIP: string;
  hostIP: string;
  volumePaths: Map<string, string>;
  /** Volumes mounted read-only whatever the volumeMount says (configMap, secret, downwardAPI, projected). */
  readOnlyVolumes?: ReadonlySet<string>;
  /** The answer of ImageStatus, asked ahead. */
  imagePresent?: Promise<Image | undefined>;
  /** Called once the container exists, as its start begins. */
  created?: () => void;
}

/**
 * Containers (upstream kuberuntime_container.go): starting one — CrashLoopBackOff, the image, its
 * config, CreateContainer, StartContainer — stopping one with the right grace period, and reading one.
 */
export class PodContainers {
  readonly crashLoopBackoff: Backoff;
  private readonly minGrace: number;

  constructor(
    private readonly runtime: RuntimeService,
    private readonly images: ImagePuller,
    private readonly options: ContainerOptions,
  ) {
    this.crashLoopBackoff = options.crashLoopBackoff ?? new Backoff(options.clock);
    this.minGrace = options.minimumGracePeriodSeconds ?? 2;
  }

  /** One container's detailed status (ContainerStatus); undefined when it is gone. */
  async read(uid: string, containerId: string): Promise<RuntimeContainer | undefined> {
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
      message:
        s.state === ContainerState.CONTAINER_EXITED
          ? await this.options.clock.track(exitedContainerMessage(s))
          : s.message,
      restartCount: Number(s.annotations[CriAnnotations.ContainerRestartCount] ?? 0),
      hash: s.annotations[CriAnnotations.ContainerHash] ?? '',
    };
    this.options.cache.containerRead(uid, container);
    return container;
  }

  /** Asks ahead whether the container's image is present (see ImagePuller.imagePresent). */
  imagePresent(container: Container): Promise<Image | undefined> | undefined {
    return this.images.imagePresent(container);
  }

  async remove(containerId: string): Promise<void> {
    this.options.cache.forgetContainer(containerId);
    await this.runtime.removeContainer({ containerId });
  }

  /**
   * Stops a container with the grace period upstream's setTerminationGracePeriod picks: the pod's
   * deletion grace period, else — for a kill a failed liveness or startup probe caused — that probe's
   * `terminationGracePeriodSeconds` when set, else the pod's; at least the minimum; an override wins.
   */
  async kill(
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
    this.options.cache.forgetContainer(container.id);
    await this.runtime.stopContainer({ containerId: container.id, timeout: BigInt(grace) });
  }

  private backoffKey(pod: Pod, container: Container): string {
    return `${pod.metadata?.name}_${pod.metadata?.namespace}_${pod.metadata?.uid}_${container.name}_${hashContainer(container)}`;
  }

  /** Starts one container of the pod in its sandbox, or says why it waits. */
  async start(
    pod: Pod,
    container: Container,
    status: RuntimePodStatus,
    target: StartTarget,
  ): Promise<StartOutcome> {
    const clock = this.options.clock;
    const backoff = this.inCrashLoopBackoff(pod, container, status);
    if (backoff) return backoff;
    // Only the newest instance counts the restarts.
    const latest = status.containers.find((c) => c.name === container.name);

    let image: { image: string; imageRef: string };
    try {
      image = await this.images.ensureImageExists(pod, container, target.imagePresent);
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
      return this.failed('ErrImagePull', errorMessage(err));
    }

    const restartCount = latest ? latest.restartCount + 1 : 0;
    let config: ContainerConfig;
    try {
      config = await this.config(pod, container, image.image, restartCount, target);
    } catch (err) {
      // Retried by the pod's next sync (10 s): a ConfigMap or Secret created or fixed meanwhile is seen.
      // (The Failed event comes from the waiting reason: PodEventSource.)
      return this.failed(
        'CreateContainerConfigError',
        errorMessage(err),
        'Failed to generate container config',
        {
          pod,
          container,
        },
      );
    }

    let containerId: string;
    try {
      containerId = (
        await this.options.cache.creating(pod.metadata!.uid!, () =>
          this.runtime.createContainer({
            podSandboxId: target.sandboxId,
            config,
            sandboxConfig: target.sandboxConfig,
          }),
        )
      ).containerId;
    } catch (err) {
      return this.failed('CreateContainerError', errorMessage(err), 'CreateContainer failed', {
        pod,
        container,
      });
    }
    target.created?.();
    try {
      await this.runtime.startContainer({ containerId });
    } catch (err) {
      return this.failed('RunContainerError', errorMessage(err), 'StartContainer failed', { pod, container });
    }
    this.options.logger.debug('Started container', {
      pod: podRef(pod),
      container: container.name,
      containerID: containerId,
    });
    return { started: true, containerId };
  }

  /**
   * CrashLoopBackOff, as upstream doBackOff: measured from when the newest *exited* instance finished.
   * Not only the newest instance: one a failed liveness probe has just killed is still running in the
   * status this sync started from, and its restart backs off from the instance before it.
   */
  private inCrashLoopBackoff(
    pod: Pod,
    container: Container,
    status: RuntimePodStatus,
  ): StartOutcome | undefined {
    const lastExited = status.containers.find((c) => c.name === container.name && c.state === 'exited');
    if (!lastExited) return undefined;
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
    return undefined;
  }

  /** A start that failed: logged (when `log` names the step), retried in 10 s. */
  private failed(
    reason: WaitingReason['reason'],
    message: string,
    log?: string,
    of?: { pod: Pod; container: Container },
  ): StartOutcome {
    if (log && of) {
      this.options.logger.error(log, { pod: podRef(of.pod), container: of.container.name, err: message });
    }
    return { started: false, waiting: { reason, message }, retryAt: this.options.clock.now() + 10_000 };
  }

  /** A Warning event on the pod about one of its containers. */
  private event(pod: Pod, container: Container, reason: string, message: string): void {
    this.options.bus?.emit('[Kubelet] Pod Event', {
      podUid: pod.metadata!.uid!,
      podName: pod.metadata!.name!,
      namespace: pod.metadata!.namespace ?? 'default',
      eventType: 'Warning',
      reason,
      message,
      container: container.name,
    });
  }

  private async config(
    pod: Pod,
    container: Container,
    image: string,
    restartCount: number,
    target: Pick<StartTarget, 'podIP' | 'hostIP' | 'volumePaths' | 'readOnlyVolumes'>,
  ): Promise<ContainerConfig> {
    const meta = pod.metadata!;
    const { options } = this;
    const env = await makeEnvironmentVariables(pod, container, {
      objects: options.objects ?? standalone,
      services: options.services,
      facts: {
        nodeName: options.nodeName,
        hostIPs: target.hostIP ? [target.hostIP] : [],
        podIPs: target.podIP ? [target.podIP] : [],
        allocatable: options.allocatable?.() ?? {},
      },
      warn: (reason, message) => this.event(pod, container, reason, message),
    });
    const mounts = await options.clock.track(
      containerMounts(container, target.volumePaths, env, target.readOnlyVolumes),
    );
    const message = options.rootDir
      ? await options.clock.track(terminationMessageMount(options.rootDir, meta.uid!, container))
      : undefined;
    if (message) mounts.push(message);
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

const standalone = new StandalonePodObjects();

/** Whether a container's environment has the pod IP (downward API `status.podIP`, `status.podIPs`). */
export function usesPodIP(container: Container): boolean {
  return !!container.env?.some((e) => /^status\.podIPs?$/.test(e.valueFrom?.fieldRef?.fieldPath ?? ''));
}

/** Go's time.Duration.String() for whole seconds and minutes: 10s, 1m20s, 5m0s. */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${s % 60}s`;
}

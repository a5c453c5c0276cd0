import type { Container, LifecycleHandler, Pod, Service } from '@nodelet/api';
import {
  ContainerConfig,
  ContainerState,
  type Image,
  CriAnnotations,
  CriLabels,
  nanosToMs,
  type PodSandboxConfig,
  type RuntimeService,
} from '@nodelet/cri';
import { Backoff, type Clock, errorMessage, type EventBus, type Logger } from '@nodelet/kernel';
import type { PodObjects } from '@nodelet/volume';
import { hashContainer } from '../container-hash.js';
import { LifecycleHookRunner } from '../lifecycle/hook-runner.js';
import { ImagePullError, type ImagePuller, podRef } from '../image-puller.js';
import type { ContainerToKill } from '../pod-actions.js';
import type { WaitingReason } from '../pod-status.js';
import { builtInProbeHandlers } from '../prober/handlers.js';
import { ProbeHandlerRegistry } from '../prober/probe-handler.js';
import type { RuntimeCache } from '../runtime-cache.js';
import { containerStateFromCri, type RuntimeContainer, type RuntimePodStatus } from '../runtime-pod.js';
import { type ConfigDeps, containerConfig } from './container-config.js';
import type { SecurityOptions } from './security-context.js';
import type { WaitTurn } from './termination-order.js';
import { exitedContainerMessage } from './termination-message.js';

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
  /** Where the pod's events go (invalid envFrom keys, failed hooks). */
  bus?: EventBus;
  /** Runs lifecycle hooks (default: with the built-in probe handlers only). */
  hooks?: LifecycleHookRunner;
  /** Seccomp settings of the node (default: profiles under /var/lib/kubelet/seccomp, no default profile). */
  security?: SecurityOptions;
  /** Kubelet root directory: termination-message files live under `<root>/pods/<uid>/containers/` (none without). */
  rootDir?: string;
}

/** How a container is stopped: who asked, and what the pod's network is (for a preStop `httpGet`). */
export interface KillOptions {
  gracePeriodOverride?: number;
  reason?: ContainerToKill['reason'] | 'FailedPostStartHook';
  podIP?: string;
  /** Waits for the container's turn after its preStop (sidecars stop after the app, termination-order.ts). */
  waitTurn?: WaitTurn;
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
  /** The container whose process namespace this one joins (an ephemeral container's target). */
  pidTarget?: string;
  /** The pod's /etc/hosts, written on first call; undefined: none to mount (no pod IP yet). */
  hostsFile?: () => Promise<string | undefined>;
}

/**
 * Containers (upstream kuberuntime_container.go): starting one — CrashLoopBackOff, the image, its
 * config, CreateContainer, StartContainer — stopping one with the right grace period, and reading one.
 */
export class PodContainers {
  readonly crashLoopBackoff: Backoff;
  private readonly minGrace: number;
  private readonly hooks: LifecycleHookRunner;
  private readonly configDeps: ConfigDeps;

  constructor(
    private readonly runtime: RuntimeService,
    private readonly images: ImagePuller,
    private readonly options: ContainerOptions,
  ) {
    this.crashLoopBackoff = options.crashLoopBackoff ?? new Backoff(options.clock);
    this.minGrace = options.minimumGracePeriodSeconds ?? 2;
    this.configDeps = {
      options,
      images,
      warn: (pod, container, reason, message) => this.event(pod, container, reason, message),
    };
    this.hooks =
      options.hooks ??
      new LifecycleHookRunner({
        runtime,
        clock: options.clock,
        logger: options.logger,
        handlers: () => builtInHandlers,
      });
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
   * Stops a container as upstream's killContainer: the grace period setTerminationGracePeriod picks —
   * the pod's deletion grace period, else (for a kill a failed liveness or startup probe caused) that
   * probe's `terminationGracePeriodSeconds` when set, else the pod's — or the override; then the
   * preStop hook, whose time counts against it (cut off when it is used up); then, for a sidecar, the
   * wait for its turn (`waitTurn`), which counts too; then StopContainer with
   * what is left, never less than the minimum (2 s), so a container always gets a chance after SIGTERM.
   */
  async kill(pod: Pod, container: RuntimeContainer, options: KillOptions = {}): Promise<void> {
    const spec = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find(
      (c) => c.name === container.name,
    );
    let grace = pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    if (pod.metadata?.deletionGracePeriodSeconds == null) {
      const probe =
        options.reason === 'LivenessProbe'
          ? spec?.livenessProbe
          : options.reason === 'StartupProbe'
            ? spec?.startupProbe
            : undefined;
      if (typeof probe?.terminationGracePeriodSeconds === 'number')
        grace = probe.terminationGracePeriodSeconds;
    }
    if (options.gracePeriodOverride !== undefined) grace = options.gracePeriodOverride;
    const preStop = spec?.lifecycle?.preStop;
    if (spec && preStop && grace > 0 && container.state === 'running') {
      grace -= await this.runPreStop(pod, spec, container.id, preStop, grace, options.podIP ?? '');
    }
    if (options.waitTurn && grace > 0) grace -= await options.waitTurn(grace);
    if (grace < this.minGrace) grace = this.minGrace;
    this.options.cache.forgetContainer(container.id);
    await this.runtime.stopContainer({ containerId: container.id, timeout: BigInt(grace) });
  }

  /**
   * The preStop hook, given `graceSeconds` to finish (upstream executePreStopHook): whole seconds it
   * took, rounded down. A failure is a Warning event without the hook's output (which may hold secrets).
   */
  private async runPreStop(
    pod: Pod,
    container: Container,
    containerId: string,
    hook: LifecycleHandler,
    graceSeconds: number,
    podIP: string,
  ): Promise<number> {
    const { clock, logger } = this.options;
    const began = clock.now();
    const deadline = clock.deadline(graceSeconds * 1000);
    const run = this.hooks.run('preStop', hook, { pod, container, containerId, podIP }, deadline.signal);
    const outcome = await Promise.race([
      run,
      new Promise<'timeout'>((resolve) =>
        deadline.signal.addEventListener('abort', () => resolve('timeout'), { once: true }),
      ),
    ]);
    deadline.cancel();
    if (outcome === 'timeout') {
      logger.info('PreStop hook not completed in grace period', {
        pod: podRef(pod),
        container: container.name,
        gracePeriod: graceSeconds,
      });
    } else if (outcome !== undefined) {
      logger.error('PreStop hook failed', { pod: podRef(pod), container: container.name, err: outcome });
      this.event(pod, container, 'FailedPreStopHook', 'PreStopHook failed');
    }
    return Math.floor((clock.now() - began) / 1000);
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
      config = await containerConfig(this.configDeps, pod, container, image.image, restartCount, target);
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
    const postStart = container.lifecycle?.postStart;
    if (postStart) {
      const failure = await this.runPostStart(pod, container, containerId, postStart, target.podIP);
      if (failure) return failure;
    }
    this.options.logger.debug('Started container', {
      pod: podRef(pod),
      container: container.name,
      containerID: containerId,
    });
    return { started: true, containerId };
  }

  /**
   * The postStart hook, right after StartContainer; the sync waits for it, so the container shows
   * Running (and is probed) only once it returned. A failure kills the container (its preStop runs,
   * as upstream) and leaves `PostStartHookError`; the restart policy and CrashLoopBackOff do the rest.
   */
  private async runPostStart(
    pod: Pod,
    container: Container,
    containerId: string,
    hook: LifecycleHandler,
    podIP: string,
  ): Promise<StartOutcome | undefined> {
    const message = await this.hooks.run('postStart', hook, { pod, container, containerId, podIP });
    if (message === undefined) return undefined;
    this.options.logger.error('Failed to execute PostStartHook', {
      pod: podRef(pod),
      container: container.name,
      containerID: containerId,
      err: message,
    });
    // Not the hook's output in the event: it may hold secrets.
    this.event(pod, container, 'FailedPostStartHook', 'PostStartHook failed');
    this.event(pod, container, 'Killing', 'FailedPostStartHook', 'Normal');
    const killed = { id: containerId, name: container.name, state: 'running' } as RuntimeContainer;
    await this.kill(pod, killed, { reason: 'FailedPostStartHook', podIP }).catch((err: unknown) =>
      this.options.logger.error('Failed to kill container', {
        pod: podRef(pod),
        container: container.name,
        err: errorMessage(err),
      }),
    );
    // Synced again a PLEG relist later (upstream: its relist sees the container dead): that sync
    // restarts it, or waits out CrashLoopBackOff.
    const retryAt = this.options.clock.now() + 1_000;
    return { started: false, containerId, waiting: { reason: 'PostStartHookError', message }, retryAt };
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

  /** An event (Warning unless said) on the pod about one of its containers. */
  private event(
    pod: Pod,
    container: Container,
    reason: string,
    message: string,
    eventType: 'Warning' | 'Normal' = 'Warning',
  ): void {
    this.options.bus?.emit('[Kubelet] Pod Event', {
      podUid: pod.metadata!.uid!,
      podName: pod.metadata!.name!,
      namespace: pod.metadata!.namespace ?? 'default',
      eventType,
      reason,
      message,
      container: container.name,
    });
  }
}

/**
 * Whether a container's start needs the pod IP: its environment has it (downward API `status.podIP`,
 * `status.podIPs`), or its postStart hook is an `httpGet` to the pod.
 */
export function usesPodIP(container: Container): boolean {
  const postStart = container.lifecycle?.postStart?.httpGet;
  if (postStart && !postStart.host) return true;
  return !!container.env?.some((e) => /^status\.podIPs?$/.test(e.valueFrom?.fieldRef?.fieldPath ?? ''));
}

const builtInHandlers = new ProbeHandlerRegistry(builtInProbeHandlers);

/** Go's time.Duration.String() for whole seconds and minutes: 10s, 1m20s, 5m0s. */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${s % 60}s`;
}

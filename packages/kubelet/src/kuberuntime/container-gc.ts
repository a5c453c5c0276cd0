import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Container,
  containerLogPath,
  ContainerState,
  CriLabels,
  podLogsDirectory,
  type RuntimeService,
} from '@nodelet/cri';
import { type Clock, errorMessage, type Logger, type Loop } from '@nodelet/kernel';
import {
  containerPodUid,
  containersToRemove,
  type PodGCState,
  podUidOfLogDirectory,
  sandboxesToRemove,
} from './container-gc-plan.js';
import {
  CONTAINER_GC_PERIOD_MS,
  type ContainerGCPolicy,
  DEFAULT_CONTAINER_GC_POLICY,
  validateContainerGCPolicy,
} from './container-gc-policy.js';
import { NODE_NAME_LABEL } from './sandbox.js';

export interface ContainerGCDeps {
  runtime: RuntimeService;
  /** Removes a container as the kubelet does (forgetting what it cached of it). */
  removeContainer(containerId: string): Promise<void>;
  clock: Clock;
  logger: Logger;
  /** Only this node's sandboxes and containers: another kubelet on the same runtime owns the others. */
  nodeName: string;
  /** Where pod logs are (`podLogsDir`, upstream /var/log/pods). */
  podLogsDir: string;
  pods: PodGCState;
  /** Whether every pod source has been seen: until then no pod's containers or logs count as unwanted. */
  allSourcesReady(): boolean;
}

/**
 * Container garbage collection (upstream pkg/kubelet/kuberuntime/kuberuntime_gc.go), every
 * `ContainerGCPeriod` (1 min): dead containers beyond the policy (see containersToRemove), with their
 * log files; sandboxes that are not ready, hold no container and are not their pod's newest (or whose pod
 * is deleted); the log directories of deleted pods whose containers are gone.
 */
export class ContainerGarbageCollector {
  private loop?: Loop;
  private failures = 0;

  constructor(
    private readonly deps: ContainerGCDeps,
    readonly policy: ContainerGCPolicy = DEFAULT_CONTAINER_GC_POLICY,
  ) {
    validateContainerGCPolicy(policy);
  }

  start(periodMs = CONTAINER_GC_PERIOD_MS): void {
    this.loop = this.deps.clock.loop(() => this.periodic(), { period: periodMs, initialDelay: periodMs });
  }

  stop(): void {
    this.loop?.stop();
  }

  /**
   * Upstream GarbageCollect: containers, then sandboxes, then pod log directories; a failing step does
   * not stop the next ones. `evictTerminatedPods`: also everything of pods that are terminated but not
   * deleted (under disk pressure).
   */
  async garbageCollect(evictTerminatedPods = false): Promise<void> {
    const allSourcesReady = this.deps.allSourcesReady();
    const errors: string[] = [];
    const steps = [
      () => this.evictContainers(allSourcesReady, evictTerminatedPods),
      () => this.evictSandboxes(evictTerminatedPods),
      () => this.evictPodLogsDirectories(allSourcesReady),
    ];
    for (const step of steps) await step().catch((err: unknown) => errors.push(errorMessage(err)));
    if (errors.length > 0) throw new Error(`container garbage collection: ${errors.join('; ')}`);
  }

  /**
   * Under disk pressure (upstream DeleteAllUnusedContainers): the same policy, and the dead containers
   * and sandboxes of terminated pods too.
   */
  deleteAllUnusedContainers(): Promise<void> {
    this.deps.logger.info('Attempting to delete unused containers');
    return this.garbageCollect(true);
  }

  async evictContainers(allSourcesReady: boolean, evictTerminatedPods: boolean): Promise<void> {
    const containers = await this.nodeContainers();
    const doomed = containersToRemove(containers, this.policy, this.deps.pods, {
      allSourcesReady,
      evictTerminatedPods,
      nowMs: this.deps.clock.now(),
    });
    for (const c of doomed) await this.removeContainer(c);
  }

  async evictSandboxes(evictTerminatedPods: boolean): Promise<void> {
    const [containers, { items }] = await Promise.all([
      this.nodeContainers(),
      this.deps.runtime.listPodSandbox({}),
    ]);
    const sandboxes = items.filter((sb) => sb.labels[NODE_NAME_LABEL] === this.deps.nodeName);
    for (const sb of sandboxesToRemove(sandboxes, containers, this.deps.pods, evictTerminatedPods)) {
      this.deps.logger.debug('Removing sandbox', { podSandboxID: sb.id });
      try {
        // The kubelet stopped it already, normally; stopping first guards against the rare case it did not.
        await this.deps.runtime.stopPodSandbox({ podSandboxId: sb.id });
        await this.deps.runtime.removePodSandbox({ podSandboxId: sb.id });
      } catch (err) {
        this.deps.logger.warn('Failed to remove sandbox', { podSandboxID: sb.id, err: errorMessage(err) });
      }
    }
  }

  /**
   * The log directories of deleted pods, once every source is seen and no container or sandbox of the pod
   * is left in the runtime (a pod's UID is the same on every node, so another kubelet's pod is never
   * taken for one of ours while it has anything in the runtime).
   */
  async evictPodLogsDirectories(allSourcesReady: boolean): Promise<void> {
    if (!allSourcesReady) return;
    const { podLogsDir } = this.deps;
    let names: string[];
    try {
      names = await this.deps.clock.track(readdir(podLogsDir));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw new Error(`failed to read the pod logs directory ${podLogsDir}: ${errorMessage(err)}`);
    }
    const [{ containers }, { items }] = await Promise.all([
      this.deps.runtime.listContainers({}),
      this.deps.runtime.listPodSandbox({}),
    ]);
    const present = new Set([
      ...containers.map(containerPodUid),
      ...items.map((sb) => sb.labels[CriLabels.PodUID] ?? sb.metadata?.uid ?? ''),
    ]);
    for (const name of names) {
      const uid = podUidOfLogDirectory(name);
      if (!uid || present.has(uid) || !this.deps.pods.isDeleted(uid)) continue;
      this.deps.logger.debug('Removing pod logs', { podUID: uid });
      await this.deps.clock
        .track(rm(join(podLogsDir, name), { recursive: true, force: true }))
        .catch((err: unknown) =>
          this.deps.logger.warn('Failed to remove pod logs directory', {
            path: name,
            err: errorMessage(err),
          }),
        );
    }
  }

  private async nodeContainers(): Promise<Container[]> {
    const { containers } = await this.deps.runtime.listContainers({});
    return containers.filter((c) => c.labels[NODE_NAME_LABEL] === this.deps.nodeName);
  }

  /** Upstream removeContainer: a container in unknown state is stopped first; its log file goes with it. */
  private async removeContainer(c: Container): Promise<void> {
    try {
      if (c.state === ContainerState.CONTAINER_UNKNOWN) {
        await this.deps.runtime.stopContainer({ containerId: c.id, timeout: 0n });
      }
      const { labels } = c;
      const podName = labels[CriLabels.PodName];
      const namespace = labels[CriLabels.PodNamespace];
      if (podName && namespace && c.metadata) {
        const dir = podLogsDirectory(this.deps.podLogsDir, namespace, podName, containerPodUid(c));
        const file = join(dir, containerLogPath(c.metadata.name, c.metadata.attempt));
        await this.deps.clock.track(rm(file, { force: true }));
      }
      await this.deps.removeContainer(c.id);
    } catch (err) {
      this.deps.logger.warn('Failed to remove container', { containerID: c.id, err: errorMessage(err) });
    }
  }

  /** One periodic pass; a failure is logged once per backoff step (1, 2, 4, … in a row). */
  private async periodic(): Promise<void> {
    try {
      await this.garbageCollect();
      if (this.failures > 0) this.deps.logger.info('Container garbage collection succeeded again');
      this.failures = 0;
    } catch (err) {
      const failures = ++this.failures;
      if ((failures & (failures - 1)) === 0) {
        this.deps.logger.warn('Container garbage collection failed', { failures, err: errorMessage(err) });
      }
    }
  }
}

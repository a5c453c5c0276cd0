import type { RuntimeContainer } from './runtime-pod.js';

/**
 * What the kubelet knows of the container runtime between its reads (after upstream's
 * kubecontainer.Cache), so that a sync asks the runtime only what it cannot know:
 *
 * - **Which pods the runtime holds nothing for.** Each PLEG relist lists every sandbox and container; a
 *   pod UID absent from a relist that started after the kubelet last created anything for that pod has
 *   nothing in the runtime (only this kubelet creates objects for its pods). The first sync of a new pod
 *   then needs no ListPodSandbox + ListContainers. Before the first relist nothing is known, so a
 *   restarted kubelet reads the runtime and adopts what it finds.
 * - **ContainerStatus of running containers.** Image, image ref, creation and start times, restart count
 *   and hash do not change while a container runs, so the detailed status read once is reused while
 *   the runtime's lists say it is running; it is dropped as soon as a list shows another state or no
 *   container.
 *
 * Times are a logical clock (one tick per read or write), not the kernel clock: under a virtual clock
 * many reads happen at the same instant, and only their order matters.
 */
export class RuntimeCache {
  private tick = 0;
  /** Tick at which the last successful relist started; -1 before the first. */
  private relistStartedAt = -1;
  /** Pod UIDs with a sandbox or container in that relist. */
  private inRuntime = new Set<string>();
  /** Tick at which the kubelet last finished creating something for a pod (until a relist covers it). */
  private readonly createdAt = new Map<string, number>();
  /** Creations in flight per pod UID. */
  private readonly inFlight = new Map<string, number>();
  /** ContainerStatus of containers last seen running, by container id. */
  private readonly running = new Map<string, { uid: string; container: RuntimeContainer }>();

  /** Marks the start of a relist: its lists are issued after this tick. */
  relistStarted(): number {
    return ++this.tick;
  }

  /**
   * A relist that started at `startedAt` succeeded: `pods` are the UIDs it saw anything for,
   * `runningContainers` the ids of the containers it saw running.
   */
  relistDone(startedAt: number, pods: Set<string>, runningContainers: Set<string>): void {
    if (startedAt <= this.relistStartedAt) return; // an older relist finishing late
    this.relistStartedAt = startedAt;
    this.inRuntime = pods;
    for (const [uid, at] of this.createdAt) if (at < startedAt) this.createdAt.delete(uid);
    for (const id of this.running.keys()) if (!runningContainers.has(id)) this.running.delete(id);
  }

  /** Runs a call that creates a sandbox or container for the pod, noting it for `knownEmpty`. */
  async creating<T>(uid: string, create: () => Promise<T>): Promise<T> {
    this.inFlight.set(uid, (this.inFlight.get(uid) ?? 0) + 1);
    try {
      return await create();
    } finally {
      const left = this.inFlight.get(uid)! - 1;
      if (left > 0) this.inFlight.set(uid, left);
      else this.inFlight.delete(uid);
      this.createdAt.set(uid, ++this.tick);
    }
  }

  /** True when the runtime is known to hold no sandbox and no container of the pod. */
  knownEmpty(uid: string): boolean {
    if (this.relistStartedAt < 0 || this.inRuntime.has(uid) || this.inFlight.has(uid)) return false;
    const created = this.createdAt.get(uid);
    return created === undefined || created < this.relistStartedAt;
  }

  /** The detailed status of a container a list shows running, when it was read while running. */
  runningContainer(id: string): RuntimeContainer | undefined {
    return this.running.get(id)?.container;
  }

  /** Keeps a container's detailed status if it is running (and forgets it otherwise). */
  containerRead(uid: string, container: RuntimeContainer): void {
    if (container.state === 'running') this.running.set(container.id, { uid, container });
    else this.running.delete(container.id);
  }

  /** A list of one pod's containers: cached statuses of its containers no longer running are dropped. */
  podListed(uid: string, runningContainers: Set<string>): void {
    for (const [id, entry] of this.running) {
      if (entry.uid === uid && !runningContainers.has(id)) this.running.delete(id);
    }
  }

  /** A container is being stopped or removed by the kubelet. */
  forgetContainer(id: string): void {
    this.running.delete(id);
  }

  /** Entries held (tests, memory accounting). */
  get size(): { runningContainers: number; createdPods: number } {
    return { runningContainers: this.running.size, createdPods: this.createdAt.size };
  }
}

import { ContainerState } from '@nodelet/cri';

/**
 * The kubelet's view of a pod in the container runtime (upstream kubecontainer.PodStatus): what the
 * runtime holds for one pod UID, read back through CRI labels and annotations, in plain numbers.
 */
export type ContainerRuntimeState = 'created' | 'running' | 'exited' | 'unknown';

export function containerStateFromCri(state: ContainerState): ContainerRuntimeState {
  switch (state) {
    case ContainerState.CONTAINER_RUNNING:
      return 'running';
    case ContainerState.CONTAINER_EXITED:
      return 'exited';
    case ContainerState.CONTAINER_CREATED:
      return 'created';
    default:
      return 'unknown';
  }
}

export interface RuntimeContainer {
  id: string;
  /** Container name in the pod spec. */
  name: string;
  state: ContainerRuntimeState;
  image: string;
  imageRef: string;
  /** Times in ms since the epoch; 0 when not reached. */
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  /** From our annotations: how many times this container name was restarted before this one. */
  restartCount: number;
  /** From our annotations: hash of the container spec it was created from. */
  hash: string;
}

export interface RuntimeSandbox {
  id: string;
  ready: boolean;
  attempt: number;
  createdAt: number;
  ip: string;
  additionalIps: string[];
}

export interface RuntimePodStatus {
  uid: string;
  name: string;
  namespace: string;
  /** Newest first. */
  sandboxes: RuntimeSandbox[];
  /** Newest first (by createdAt). */
  containers: RuntimeContainer[];
}

export function emptyRuntimePodStatus(uid: string, name: string, namespace: string): RuntimePodStatus {
  return { uid, name, namespace, sandboxes: [], containers: [] };
}

/**
 * Orders newest first: by creation time, then by attempt. A container restarted in the very
 * millisecond its predecessor was killed (virtual time; a liveness kill and the restart in one sync)
 * is told apart by its restart count, a sandbox by its attempt.
 */
export function newestContainerFirst(a: RuntimeContainer, b: RuntimeContainer): number {
  return b.createdAt - a.createdAt || b.restartCount - a.restartCount;
}

export function newestSandboxFirst(a: RuntimeSandbox, b: RuntimeSandbox): number {
  return b.createdAt - a.createdAt || b.attempt - a.attempt;
}

/** The newest runtime container of a spec container name, if any. */
export function latestContainer(status: RuntimePodStatus, name: string): RuntimeContainer | undefined {
  return status.containers.find((c) => c.name === name);
}

/** The container before the newest one of `name` (for `lastState`). */
export function previousContainer(status: RuntimePodStatus, name: string): RuntimeContainer | undefined {
  let seen = false;
  for (const c of status.containers) {
    if (c.name !== name) continue;
    if (seen) return c;
    seen = true;
  }
  return undefined;
}

import type { Container, Pod } from '@nodelet/api';
import { hashContainer } from './container-hash.js';
import { latestContainer, type RuntimeContainer, type RuntimePodStatus } from './runtime-pod.js';
import { computeInitContainerActions, hasSidecars } from './sidecar-actions.js';

/**
 * What one sync of a pod must do, computed from the desired spec and what the runtime holds — upstream's
 * computePodActions. A pure function: the table-driven tests call it directly.
 *
 *   sandbox missing/not ready ──► kill pod, create sandbox ──► init containers one by one ──► app containers
 *                                                   │ (Never and already ran: do nothing more)
 *   sandbox ready ──► init containers not all done? ──► next init container (or kill pod: Never + failed)
 *                 └─► app containers: start the ones that should run, kill changed / unhealthy / unknown
 *                     nothing to keep and nothing to start ──► kill pod (stop the sandbox)
 * A pod with sidecars decides its init containers as upstream's SidecarContainers (sidecar-actions.ts).
 */
export interface ContainerToKill {
  container: RuntimeContainer;
  reason: 'SpecChanged' | 'LivenessProbe' | 'StartupProbe' | 'Unknown' | 'NotInSpec';
  message: string;
}

export interface PodActions {
  killPod: boolean;
  createSandbox: boolean;
  /** The ready sandbox to reuse when not creating one. */
  sandboxId: string;
  /** Attempt number of the sandbox to create. */
  attempt: number;
  nextInitContainerToStart?: Container;
  /** Pods with sidecars: the init containers to start, in order, before `containersToStart`. */
  initContainersToStart?: Container[];
  containersToStart: Container[];
  /** Ephemeral containers (`kubectl debug`) never started yet: started once, never restarted. */
  ephemeralContainersToStart: Container[];
  containersToKill: ContainerToKill[];
}

/** Probe verdicts the actions depend on; the prober manager supplies them. */
export interface ProbeVerdicts {
  livenessFailed(containerId: string): boolean;
  startupFailed(containerId: string): boolean;
  /** Whether a running container's startup probe has succeeded (sidecars wait for it); default true. */
  started?(containerId: string, container: Container): boolean;
}

const noProbeFailures: ProbeVerdicts = { livenessFailed: () => false, startupFailed: () => false };

export function shouldRestartOnFailure(pod: Pod): boolean {
  return (pod.spec?.restartPolicy ?? 'Always') !== 'Never';
}

function containerSucceeded(container: Container, status: RuntimePodStatus): boolean {
  const c = latestContainer(status, container.name);
  return !!c && c.state === 'exited' && c.exitCode === 0;
}

/** Upstream ShouldContainerBeRestarted. */
export function shouldContainerBeRestarted(
  container: Container,
  pod: Pod,
  status: RuntimePodStatus,
): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  const c = latestContainer(status, container.name);
  if (!c) return true;
  if (c.state === 'running') return false;
  if (c.state === 'unknown' || c.state === 'created') return true;
  const policy = pod.spec?.restartPolicy ?? 'Always';
  if (policy === 'Never') return false;
  if (policy === 'OnFailure' && c.exitCode === 0) return false;
  return true;
}

function isInitContainerFailed(c: RuntimeContainer): boolean {
  return (c.state === 'exited' && c.exitCode !== 0) || c.state === 'unknown';
}

/** Upstream findNextInitContainerToRun: the last failed status, the next container to run, and whether init is done. */
export function findNextInitContainerToRun(
  pod: Pod,
  status: RuntimePodStatus,
): { lastStatus?: RuntimeContainer; next?: Container; done: boolean } {
  const inits = pod.spec?.initContainers ?? [];
  if (inits.length === 0) return { done: true };
  for (const c of pod.spec?.containers ?? []) {
    if (latestContainer(status, c.name)?.state === 'running') return { done: true };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const s = latestContainer(status, inits[i]!.name);
    if (s && isInitContainerFailed(s)) return { lastStatus: s, next: inits[i], done: false };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const s = latestContainer(status, inits[i]!.name);
    if (!s) continue;
    if (s.state === 'running') return { done: false };
    if (s.state === 'exited') {
      if (i === inits.length - 1) return { done: true };
      return { next: inits[i + 1], done: false };
    }
  }
  return { next: inits[0], done: false };
}

/** Upstream podSandboxChanged: whether a (new) sandbox is needed, its attempt, and the sandbox to reuse. */
export function podSandboxChanged(
  pod: Pod,
  status: RuntimePodStatus,
): { changed: boolean; attempt: number; sandboxId: string } {
  const sandboxes = status.sandboxes;
  if (sandboxes.length === 0) return { changed: true, attempt: 0, sandboxId: '' };
  const latest = sandboxes[0]!;
  const readyCount = sandboxes.filter((s) => s.ready).length;
  if (readyCount > 1) return { changed: true, attempt: latest.attempt + 1, sandboxId: latest.id };
  if (!latest.ready) return { changed: true, attempt: latest.attempt + 1, sandboxId: latest.id };
  if (!pod.spec?.hostNetwork && !latest.ip)
    return { changed: true, attempt: latest.attempt + 1, sandboxId: latest.id };
  return { changed: false, attempt: latest.attempt, sandboxId: latest.id };
}

export function computePodActions(
  pod: Pod,
  status: RuntimePodStatus,
  probes: ProbeVerdicts = noProbeFailures,
): PodActions {
  const spec = pod.spec!;
  const sandbox = podSandboxChanged(pod, status);
  const sidecars = hasSidecars(pod);
  const actions: PodActions = {
    killPod: sandbox.changed,
    createSandbox: sandbox.changed,
    sandboxId: sandbox.sandboxId,
    attempt: sandbox.attempt,
    containersToStart: [],
    ephemeralContainersToStart: [],
    containersToKill: [],
  };

  if (sandbox.changed) {
    // A pod that must not restart and already ran keeps its dead sandbox.
    if (!shouldRestartOnFailure(pod) && sandbox.attempt !== 0 && status.containers.length > 0) {
      actions.createSandbox = false;
      return actions;
    }
    const toStart = spec.containers.filter(
      (c) => !((spec.restartPolicy ?? 'Always') === 'OnFailure' && containerSucceeded(c, status)),
    );
    if (toStart.length === 0 && (spec.initContainers ?? []).length === 0) {
      actions.createSandbox = false;
      return actions;
    }
    if (sidecars) {
      // Any app container created before: the pod was initialized, and there is nothing left to run.
      if (toStart.length === 0 && spec.containers.some((c) => latestContainer(status, c.name))) {
        actions.createSandbox = false;
        return actions;
      }
      actions.initContainersToStart = [spec.initContainers![0]!];
      return actions;
    }
    if ((spec.initContainers ?? []).length > 0) {
      actions.nextInitContainerToStart = spec.initContainers![0];
      return actions;
    }
    actions.containersToStart = toStart;
    return actions;
  }

  killContainersNotInSpec(pod, status, actions);
  // Started even while init containers run or fail: they are how one debugs that (upstream).
  actions.ephemeralContainersToStart = (spec.ephemeralContainers ?? []).filter(
    (c) => !latestContainer(status, c.name),
  ) as Container[];

  if (sidecars) {
    const initialized = computeInitContainerActions(pod, status, probes, actions);
    if (actions.killPod || !initialized) return actions;
  }
  const init = sidecars ? { done: true as const } : findNextInitContainerToRun(pod, status);
  if (!init.done) {
    if (init.next) {
      const failed = init.lastStatus && isInitContainerFailed(init.lastStatus);
      if (failed && !shouldRestartOnFailure(pod)) {
        actions.killPod = true;
      } else {
        if (init.lastStatus?.state === 'unknown') {
          actions.containersToKill.push({
            container: init.lastStatus,
            reason: 'Unknown',
            message: `Init container ${init.next.name} is in an unknown state`,
          });
        }
        actions.nextInitContainerToStart = init.next;
      }
    }
    return actions;
  }

  let keepCount = 0;
  for (const container of spec.containers) {
    const c = latestContainer(status, container.name);
    if (!c || c.state !== 'running') {
      if (shouldContainerBeRestarted(container, pod, status)) {
        actions.containersToStart.push(container);
        if (c?.state === 'unknown') {
          actions.containersToKill.push({
            container: c,
            reason: 'Unknown',
            message: `Container ${container.name} is in an unknown state`,
          });
        }
      }
      continue;
    }
    let restart = shouldRestartOnFailure(pod);
    let kill: Omit<ContainerToKill, 'container'> | undefined;
    if (c.hash && c.hash !== hashContainer(container)) {
      kill = { reason: 'SpecChanged', message: `Container ${container.name} definition changed` };
      restart = true;
    } else if (probes.livenessFailed(c.id)) {
      kill = { reason: 'LivenessProbe', message: `Container ${container.name} failed liveness probe` };
    } else if (probes.startupFailed(c.id)) {
      kill = { reason: 'StartupProbe', message: `Container ${container.name} failed startup probe` };
    } else {
      keepCount++;
      continue;
    }
    if (restart) {
      kill.message += ', will be restarted';
      actions.containersToStart.push(container);
    }
    actions.containersToKill.push({ container: c, ...kill });
  }
  if (keepCount === 0 && actions.containersToStart.length === 0) {
    actions.killPod = true;
    // Sidecars do not keep a pod alive whose app containers are done.
    if (sidecars) actions.initContainersToStart = [];
  }
  return actions;
}

function killContainersNotInSpec(pod: Pod, status: RuntimePodStatus, actions: PodActions): void {
  const spec = pod.spec;
  const names = new Set(
    [...(spec?.initContainers ?? []), ...(spec?.containers ?? []), ...(spec?.ephemeralContainers ?? [])].map(
      (c) => c.name,
    ),
  );
  for (const c of status.containers) {
    if (c.state === 'running' && !names.has(c.name)) {
      actions.containersToKill.push({
        container: c,
        reason: 'NotInSpec',
        message: `Container ${c.name} is not in the pod spec`,
      });
    }
  }
}

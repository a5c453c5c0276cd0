import type {
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  PodCondition,
  PodPhase,
  PodStatus,
} from '@nodelet/api';
import { foreignConditions, unreadyGatesMessage } from './readiness-gates.js';
import { isSidecar } from './sidecar-actions.js';
import { limitTerminationMessages } from './kuberuntime/termination-message.js';
import {
  latestContainer,
  previousContainer,
  type RuntimeContainer,
  type RuntimePodStatus,
} from './runtime-pod.js';

/**
 * The API status of a pod from its spec and what the runtime holds — upstream's generateAPIPodStatus and
 * getPhase. Pure functions: the phase table and the waiting reasons are tested directly.
 */

/** Why a container is waiting, from the last sync (upstream's reasonCache): CrashLoopBackOff, ErrImagePull, … */
export interface WaitingReason {
  reason: string;
  message: string;
}

export interface StatusInputs {
  pod: Pod;
  runtime: RuntimePodStatus;
  /** Last sync's failure per container name. */
  waiting: ReadonlyMap<string, WaitingReason>;
  /** Readiness by runtime container id; a container absent here is ready when running. */
  ready: (containerId: string, container: Container) => boolean;
  /** Whether the startup probe of a running container has succeeded (true when it has none). */
  started: (containerId: string, container: Container) => boolean;
  hostIP: string;
  /** The time this status is generated, ms since the epoch. */
  now: number;
  /** The previous status, to keep transition times and startTime stable. */
  previous?: PodStatus;
  /** True once the kubelet has stopped the pod for good (terminal). */
  terminal?: boolean;
  /** The pod ran past its `activeDeadlineSeconds`: Failed, with upstream's reason and message. */
  deadlineExceeded?: boolean;
  /** The eviction manager stopped the pod: Failed, reason Evicted, this message, DisruptionTarget. */
  evicted?: { message: string };
  /**
   * The runtime's name as CRI Version reports it (`containerd`, `cri-o`, `nodelet-fake`): container IDs
   * are `<runtimeName>://<id>`, as upstream. Default `containerd`.
   */
  runtimeName?: string;
}

// The last second formatted: a sync formats "now" several times, and many syncs fall in the same second.
let lastSecond = NaN;
let lastText = '';

export const rfc3339 = (ms: number): string => {
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    lastText = new Date(second * 1000).toISOString().replace('.000Z', 'Z');
    lastSecond = second;
  }
  return lastText;
};

function terminatedState(c: RuntimeContainer, runtimeName: string): ContainerState {
  const reason = c.reason || (c.exitCode === 0 ? 'Completed' : 'Error');
  return {
    terminated: {
      exitCode: c.exitCode,
      reason,
      ...(c.message ? { message: c.message } : {}),
      startedAt: c.startedAt ? rfc3339(c.startedAt) : undefined,
      finishedAt: c.finishedAt ? rfc3339(c.finishedAt) : undefined,
      containerID: `${runtimeName}://${c.id}`,
    } as any,
  };
}

export function containerStatus(
  container: Container,
  inputs: StatusInputs,
  defaultWaiting: string,
  isInit: boolean,
): ContainerStatus {
  const latest = latestContainer(inputs.runtime, container.name);
  const waiting = inputs.waiting.get(container.name);
  const status: ContainerStatus = {
    name: container.name,
    image: container.image ?? '',
    imageID: latest?.imageRef ?? '',
    ready: false,
    restartCount: latest?.restartCount ?? 0,
    started: false,
    state: { waiting: { reason: defaultWaiting } },
    lastState: {},
  };
  const runtimeName = inputs.runtimeName ?? 'containerd';
  if (latest) status.containerID = `${runtimeName}://${latest.id}`;
  const previous = previousContainer(inputs.runtime, container.name);
  if (previous && previous.state === 'exited') status.lastState = terminatedState(previous, runtimeName);

  if (latest?.state === 'running') {
    status.state = { running: { startedAt: rfc3339(latest.startedAt) } };
    status.started = inputs.started(latest.id, container);
    status.ready = (!isInit || isSidecar(container)) && status.started && inputs.ready(latest.id, container);
  } else if (latest?.state === 'exited') {
    // A dead container that will be restarted shows as waiting (CrashLoopBackOff while backing off),
    // with the dead one as lastState — as kubectl users know it.
    if (waiting) {
      status.state = { waiting: { reason: waiting.reason, message: waiting.message } };
      status.lastState = terminatedState(latest, runtimeName);
    } else {
      status.state = terminatedState(latest, runtimeName);
    }
  } else if (waiting) {
    status.state = { waiting: { reason: waiting.reason, message: waiting.message } };
  }
  if (isInit && !isSidecar(container) && status.state?.terminated?.exitCode === 0) status.ready = true;
  return status;
}

/** Upstream getPhase, with sidecars (restartable init containers). */
export function getPhase(
  pod: Pod,
  init: ContainerStatus[],
  app: ContainerStatus[],
  terminal = false,
): PodPhase {
  const spec = pod.spec!;
  let pendingInit = 0;
  let failedInit = 0;
  for (const container of spec.initContainers ?? []) {
    if (isSidecar(container)) continue; // counted below, beside the app containers
    const s = init.find((c) => c.name === container.name);
    if (!s) {
      pendingInit++;
    } else if (s.state?.running) {
      pendingInit++;
    } else if (s.state?.terminated) {
      if (s.state.terminated.exitCode !== 0) failedInit++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) {
        if (s.lastState.terminated.exitCode !== 0) failedInit++;
      } else {
        pendingInit++;
      }
    } else {
      pendingInit++;
    }
  }
  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  // Sidecars: running ones count (not yet started: still initializing); exited ones do not count at all.
  for (const container of (spec.initContainers ?? []).filter(isSidecar)) {
    const s = init.find((c) => c.name === container.name);
    if (!s) {
      unknown++;
    } else if (s.state?.running) {
      if (!s.started) pendingInit++;
      running++;
    } else if (s.state?.terminated) {
      // not counted
    } else if (s.state?.waiting) {
      if (!s.lastState?.terminated) {
        pendingInit++;
        waiting++;
      }
    } else {
      pendingInit++;
      unknown++;
    }
  }
  for (const container of spec.containers) {
    const s = app.find((c) => c.name === container.name);
    if (!s) unknown++;
    else if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }
  const policy = spec.restartPolicy ?? 'Always';
  if (failedInit > 0 && policy === 'Never') return 'Failed';
  const anyAppStarted = app.some((s) => s.state?.running || s.state?.terminated || s.lastState?.terminated);
  if ((pendingInit > 0 && !anyAppStarted) || waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (terminal) return stopped === succeeded ? 'Succeeded' : 'Failed';
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (policy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

function condition(
  type: string,
  ok: boolean,
  now: number,
  previous: PodStatus | undefined,
  reason?: string,
  message?: string,
): PodCondition {
  const status = ok ? 'True' : 'False';
  const before = previous?.conditions?.find((c) => c.type === type);
  const lastTransitionTime = before && before.status === status ? before.lastTransitionTime : rfc3339(now);
  return {
    type,
    status,
    lastProbeTime: null as any,
    lastTransitionTime,
    ...(ok || !reason ? {} : { reason, message }),
  };
}

export function generatePodStatus(inputs: StatusInputs): PodStatus {
  const { pod, runtime, now, previous } = inputs;
  const spec = pod.spec!;
  // Init containers are done when each exited 0 — a sidecar when it is running and started.
  const initDone = (spec.initContainers ?? []).every((c) => {
    const latest = latestContainer(runtime, c.name);
    if (isSidecar(c)) return latest?.state === 'running' && inputs.started(latest.id, c);
    return latest?.state === 'exited' && latest.exitCode === 0;
  });
  const appStarted = spec.containers.some((c) => latestContainer(runtime, c.name));
  const initStatuses = (spec.initContainers ?? []).map((c) =>
    containerStatus(c, inputs, 'PodInitializing', true),
  );
  const appStatuses = spec.containers.map((c) =>
    containerStatus(
      c,
      inputs,
      (spec.initContainers ?? []).length > 0 && !initDone ? 'PodInitializing' : 'ContainerCreating',
      false,
    ),
  );
  // Ephemeral containers: shown, never ready, never counted for the phase or readiness.
  const ephemeralStatuses = ((spec.ephemeralContainers ?? []) as Container[]).map((c) => ({
    ...containerStatus(c, inputs, 'ContainerCreating', false),
    ready: false,
  }));
  const phase =
    inputs.deadlineExceeded || inputs.evicted
      ? 'Failed'
      : getPhase(pod, initStatuses, appStatuses, inputs.terminal);
  const initialized = initDone || appStarted;
  const sidecarStatuses = initStatuses.filter((_, i) => isSidecar(spec.initContainers![i]!));
  const notReady = [...sidecarStatuses, ...appStatuses].filter((s) => !s.ready).map((s) => s.name);
  const containersReady = notReady.length === 0;
  const pendingInit = initStatuses
    .filter((s, i) => (isSidecar(spec.initContainers![i]!) ? !s.started : !s.ready))
    .map((s) => s.name);
  const sandbox = runtime.sandboxes[0];
  const sandboxReady = !!sandbox?.ready && (!!sandbox.ip || !!spec.hostNetwork);
  const completed = phase === 'Succeeded' || phase === 'Failed';
  // Upstream's reason of ContainersReady and Ready in a terminal phase.
  const terminalReason = phase === 'Failed' ? 'PodFailed' : 'PodCompleted';

  // Conditions others own are kept; the readiness gates among them decide Ready once the containers are.
  const foreign = foreignConditions(pod);
  const gates = containersReady && !completed ? unreadyGatesMessage(pod, foreign) : '';
  const conditions: PodCondition[] = [
    ...foreign.filter((c) => !(inputs.evicted && c.type === 'DisruptionTarget')),
    ...(inputs.evicted ? [disruptionTarget(inputs.evicted.message, now, previous)] : []),
    condition('PodReadyToStartContainers', sandboxReady, now, previous),
    condition(
      'Initialized',
      initialized,
      now,
      previous,
      'ContainersNotInitialized',
      `containers with incomplete status: [${pendingInit.join(' ')}]`,
    ),
    condition(
      'Ready',
      containersReady && !completed && !gates,
      now,
      previous,
      gates ? 'ReadinessGatesNotReady' : completed ? terminalReason : 'ContainersNotReady',
      gates || (completed ? '' : `containers with unready status: [${notReady.join(' ')}]`),
    ),
    condition(
      'ContainersReady',
      containersReady && !completed,
      now,
      previous,
      completed ? terminalReason : 'ContainersNotReady',
      completed ? '' : `containers with unready status: [${notReady.join(' ')}]`,
    ),
    condition('PodScheduled', true, now, previous),
  ];

  const podIP = sandbox?.ip || (spec.hostNetwork ? inputs.hostIP : '');
  const status: PodStatus = {
    phase,
    conditions,
    hostIP: inputs.hostIP,
    hostIPs: inputs.hostIP ? [{ ip: inputs.hostIP }] : [],
    ...(podIP ? { podIP, podIPs: [podIP, ...(sandbox?.additionalIps ?? [])].map((ip) => ({ ip })) } : {}),
    ...(inputs.deadlineExceeded ? deadlineExceeded : {}),
    ...(inputs.evicted ? { reason: 'Evicted', message: inputs.evicted.message } : {}),
    startTime: previous?.startTime ?? rfc3339(now),
    ...(initStatuses.length ? { initContainerStatuses: initStatuses } : {}),
    containerStatuses: appStatuses,
    ...(ephemeralStatuses.length ? { ephemeralContainerStatuses: ephemeralStatuses } : {}),
    qosClass: qosClass(pod),
  };
  limitTerminationMessages(pod, status);
  return status;
}

/** The condition of a pod the kubelet stopped to reclaim a resource (upstream's eviction manager). */
function disruptionTarget(message: string, now: number, previous: PodStatus | undefined): PodCondition {
  return {
    ...condition('DisruptionTarget', true, now, previous),
    reason: 'TerminationByKubelet',
    message,
  };
}

/** Upstream's status of a pod that ran past its active deadline (kubelet_pods.go, pastActiveDeadline). */
export const deadlineExceeded = {
  reason: 'DeadlineExceeded',
  message: 'Pod was active on the node longer than the specified deadline',
} as const;

/**
 * How long the pod may still run under `spec.activeDeadlineSeconds`, counted from its status'
 * `startTime` (when the kubelet first saw it): ms, ≤ 0 once passed; undefined without a deadline or a
 * start time yet.
 */
export function activeDeadlineLeftMs(
  pod: Pod,
  startTime: string | undefined,
  now: number,
): number | undefined {
  const seconds = pod.spec?.activeDeadlineSeconds;
  if (seconds === undefined || seconds === null || !startTime) return undefined;
  const start = Date.parse(startTime);
  if (Number.isNaN(start)) return undefined;
  return start + seconds * 1000 - now;
}

/** Upstream GetPodQOS: Guaranteed when every container's requests equal limits for cpu and memory. */
export function qosClass(pod: Pod): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const req = c.resources?.requests ?? {};
    const lim = c.resources?.limits ?? {};
    if (Object.keys(req).length || Object.keys(lim).length) any = true;
    for (const r of ['cpu', 'memory']) {
      const limit = lim[r];
      const request = req[r] ?? limit;
      if (!limit || request !== limit) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

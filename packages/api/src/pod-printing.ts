import { humanDuration, parseTime } from './human-duration.js';
import type { ContainerStatus, Pod } from './types.js';

/**
 * The pod cells of `kubectl get pods` — READY, STATUS, RESTARTS and the `-o wide` ones — as kubectl's
 * printPod (pkg/printers/internalversion/printers.go) computes them, so that a pod reads the same in
 * `nodelet get pods` and in the API server's Tables. A pure function of a pod and "now".
 */
export interface PodCells {
  /** `ready/total`, e.g. `1/1`; restartable init containers (sidecars) count. */
  ready: string;
  /** `Running`, `Init:1/2`, `CrashLoopBackOff`, `Completed`, `NotReady`, `Terminating`, … */
  status: string;
  /** `N`, or `N (5s ago)` after the last termination of a restarted container. */
  restarts: string;
  ip: string;
  node: string;
  nominatedNode: string;
  /** `true/total` readiness gates, or `<none>`. */
  readinessGates: string;
}

const hasTrueCondition = (pod: Pod, type: string) =>
  (pod.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');

/** The later of `current` and the container's last termination (ms since the epoch; 0 = none). */
function lastTermination(current: number, status: ContainerStatus): number {
  const finished = parseTime(status.lastState?.terminated?.finishedAt);
  return finished !== undefined && finished > current ? finished : current;
}

export function podCells(pod: Pod, now: number): PodCells {
  const spec = pod.spec ?? { containers: [] };
  const status = pod.status ?? {};
  const initSpecs = spec.initContainers ?? [];
  const isSidecar = (name: string) => initSpecs.find((c) => c.name === name)?.restartPolicy === 'Always';

  const total = (spec.containers ?? []).length + initSpecs.filter((c) => c.restartPolicy === 'Always').length;
  let ready = 0;
  let restarts = 0;
  let lastRestart = 0;
  let sidecarRestarts = 0;
  let lastSidecarRestart = 0;

  let reason = status.reason || status.phase || '';
  if ((status.conditions ?? []).some((c) => c.type === 'PodScheduled' && c.reason === 'SchedulingGated')) {
    reason = 'SchedulingGated';
  }

  // Init containers in order: the first that has not succeeded (and is no started sidecar) decides.
  let initializing = false;
  const inits = status.initContainerStatuses ?? [];
  for (let i = 0; i < inits.length; i++) {
    const c = inits[i]!;
    restarts += c.restartCount ?? 0;
    lastRestart = lastTermination(lastRestart, c);
    const sidecar = isSidecar(c.name);
    if (sidecar) {
      sidecarRestarts += c.restartCount ?? 0;
      lastSidecarRestart = lastTermination(lastSidecarRestart, c);
    }
    const { terminated, waiting } = c.state ?? {};
    if (terminated && terminated.exitCode === 0) continue;
    if (sidecar && c.started) {
      if (c.ready) ready++;
      continue;
    }
    if (terminated) {
      reason = terminated.reason
        ? `Init:${terminated.reason}`
        : terminated.signal
          ? `Init:Signal:${terminated.signal}`
          : `Init:ExitCode:${terminated.exitCode}`;
    } else if (waiting?.reason && waiting.reason !== 'PodInitializing') {
      reason = `Init:${waiting.reason}`;
    } else {
      reason = `Init:${i}/${initSpecs.length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || hasTrueCondition(pod, 'Initialized')) {
    // Past initialization only sidecars' restarts stay counted with the app containers'.
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const statuses = status.containerStatuses ?? [];
    // Backwards, so that the first container's state is the one shown.
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i]!;
      restarts += c.restartCount ?? 0;
      lastRestart = lastTermination(lastRestart, c);
      const { waiting, terminated, running } = c.state ?? {};
      if (waiting?.reason) reason = waiting.reason;
      else if (terminated?.reason) reason = terminated.reason;
      else if (terminated)
        reason = terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode}`;
      else if (c.ready && running) {
        hasRunning = true;
        ready++;
      }
    }
    // One container completed while another still runs: the pod's readiness says what it is.
    if (reason === 'Completed' && hasRunning)
      reason = hasTrueCondition(pod, 'Ready') ? 'Running' : 'NotReady';
  }

  if (pod.metadata?.deletionTimestamp) {
    if (status.reason === 'NodeLost') reason = 'Unknown';
    else if (status.phase !== 'Succeeded' && status.phase !== 'Failed') reason = 'Terminating';
  }

  const gates = spec.readinessGates ?? [];
  const trueGates = gates.filter((g) => hasTrueCondition(pod, g.conditionType)).length;
  return {
    ready: `${ready}/${total}`,
    status: reason,
    restarts:
      restarts !== 0 && lastRestart > 0
        ? `${restarts} (${humanDuration(now - lastRestart)} ago)`
        : String(restarts),
    ip: status.podIPs?.[0]?.ip || status.podIP || '<none>',
    node: spec.nodeName || '<none>',
    nominatedNode: status.nominatedNodeName || '<none>',
    readinessGates: gates.length > 0 ? `${trueGates}/${gates.length}` : '<none>',
  };
}

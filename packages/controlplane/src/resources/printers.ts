import { humanDuration, parseTime, since, type Pod } from '@nodelet/api';
import type { KubeObject } from '../object.js';

/**
 * The cells `kubectl get` prints, computed on the server as upstream's printers
 * (pkg/printers/internalversion/printers.go) do: durations as HumanDuration, pod STATUS/READY/RESTARTS as
 * printPod. Pure functions of an object and "now".
 */
export { humanDuration, since };

function isTerminalPhase(phase: string | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

function laterFinish(current: number, finishedAt: string | undefined): number {
  const finished = parseTime(finishedAt);
  return finished !== undefined && finished > current ? finished : current;
}

export interface PodCells {
  ready: string;
  status: string;
  restarts: string;
}

/** READY, STATUS and RESTARTS of a pod, as kubectl's printPod computes them. */
export function podCells(pod: Pod, now: number): PodCells {
  const spec = pod.spec ?? { containers: [] };
  const status = pod.status ?? {};
  let restarts = 0;
  let sidecarRestarts = 0;
  let total = (spec.containers ?? []).length;
  let ready = 0;
  let lastRestart = 0;
  let lastSidecarRestart = 0;
  let reason: string = status.reason || status.phase || '';
  for (const c of status.conditions ?? []) {
    if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';
  }
  for (const c of spec.initContainers ?? []) if (c.restartPolicy === 'Always') total++;
  const isSidecar = (name: string) =>
    spec.initContainers?.find((c) => c.name === name)?.restartPolicy === 'Always';

  let initializing = false;
  const inits = status.initContainerStatuses ?? [];
  for (let i = 0; i < inits.length; i++) {
    const c = inits[i]!;
    restarts += c.restartCount ?? 0;
    lastRestart = laterFinish(lastRestart, c.lastState?.terminated?.finishedAt);
    const sidecar = isSidecar(c.name);
    if (sidecar) {
      sidecarRestarts += c.restartCount ?? 0;
      lastSidecarRestart = laterFinish(lastSidecarRestart, c.lastState?.terminated?.finishedAt);
    }
    const terminated = c.state?.terminated;
    const waiting = c.state?.waiting;
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
      reason = `Init:${i}/${(spec.initContainers ?? []).length}`;
    }
    initializing = true;
    break;
  }
  const hasCondition = (type: string) =>
    (status.conditions ?? []).some((c) => c.type === type && c.status === 'True');
  if (!initializing || hasCondition('Initialized')) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let running = false;
    const statuses = status.containerStatuses ?? [];
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i]!;
      restarts += c.restartCount ?? 0;
      lastRestart = laterFinish(lastRestart, c.lastState?.terminated?.finishedAt);
      const waiting = c.state?.waiting;
      const terminated = c.state?.terminated;
      if (waiting?.reason) reason = waiting.reason;
      else if (terminated?.reason) reason = terminated.reason;
      else if (terminated)
        reason = terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode}`;
      else if (c.ready && c.state?.running) {
        running = true;
        ready++;
      }
    }
    if (reason === 'Completed' && running) reason = hasCondition('Ready') ? 'Running' : 'NotReady';
  }
  const deleting = !!pod.metadata?.deletionTimestamp;
  if (deleting && status.reason === 'NodeLost') reason = 'Unknown';
  else if (deleting && !isTerminalPhase(status.phase)) reason = 'Terminating';
  return {
    ready: `${ready}/${total}`,
    status: reason,
    restarts:
      restarts !== 0 && lastRestart > 0
        ? `${restarts} (${humanDuration(now - lastRestart)} ago)`
        : String(restarts),
  };
}

/** The AGE cell of any object. */
export function age(obj: KubeObject, now: number): string {
  return since(obj.metadata?.creationTimestamp, now);
}

/** `a=b,c=d` (sorted), or `<none>`. */
export function formatLabels(labels: Record<string, string> | undefined): string {
  const entries = Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(',') : '<none>';
}

import { humanDuration, parseTime, since } from '@nodelet/api';
import type { ContainerStatus, Pod } from '@nodelet/api';

/**
 * `kubectl get pods` output for the pods a kubelet reports. The STATUS, READY and RESTARTS cells follow
 * kubectl's printPod (pkg/printers/internalversion/printers.go) and AGE its HumanDuration
 * (k8s.io/apimachinery/pkg/util/duration), so what users read here means what it means in kubectl.
 * Pure functions of a pod and "now": the table tests feed pod JSON fixtures.
 */

export interface PodRow {
  namespace: string;
  name: string;
  /** `ready/total`, e.g. `1/1`. */
  ready: string;
  status: string;
  /** `N` or `N (5s ago)`. */
  restarts: string;
  age: string;
  ip: string;
  node: string;
  nominatedNode: string;
  readinessGates: string;
}

export { humanDuration, since };

/**
 * When the pod came to be: `metadata.creationTimestamp` (set by an API server), else the
 * `kubernetes.io/config.seen` annotation a kubelet puts on pods from files and URLs.
 */
export function podCreationTime(pod: Pod): string | undefined {
  return pod.metadata?.creationTimestamp ?? pod.metadata?.annotations?.['kubernetes.io/config.seen'];
}

const isRestartableInit = (pod: Pod, name: string): boolean =>
  pod.spec?.initContainers?.find((c) => c.name === name)?.restartPolicy === 'Always';

function hasCondition(pod: Pod, type: string): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

function isTerminalPhase(phase: string | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

/** Later of a running maximum and a container's last termination time. */
function laterFinish(current: number, status: ContainerStatus): number {
  const finished = parseTime(status.lastState?.terminated?.finishedAt);
  return finished !== undefined && finished > current ? finished : current;
}

/** The cells of one pod, as kubectl's printPod computes them. */
export function podRow(pod: Pod, now: number): PodRow {
  const spec = pod.spec ?? { containers: [] };
  const status = pod.status ?? {};
  let restarts = 0;
  let restartableInitRestarts = 0;
  let totalContainers = (spec.containers ?? []).length;
  let readyContainers = 0;
  let lastRestart = 0;
  let lastRestartableInitRestart = 0;

  let reason: string = status.phase ?? '';
  if (status.reason) reason = status.reason;
  for (const c of status.conditions ?? []) {
    if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';
  }

  for (const c of spec.initContainers ?? []) if (c.restartPolicy === 'Always') totalContainers++;

  let initializing = false;
  const initStatuses = status.initContainerStatuses ?? [];
  for (let i = 0; i < initStatuses.length; i++) {
    const c = initStatuses[i]!;
    restarts += c.restartCount ?? 0;
    lastRestart = laterFinish(lastRestart, c);
    const sidecar = isRestartableInit(pod, c.name);
    if (sidecar) {
      restartableInitRestarts += c.restartCount ?? 0;
      lastRestartableInitRestart = laterFinish(lastRestartableInitRestart, c);
    }
    const terminated = c.state?.terminated;
    const waiting = c.state?.waiting;
    if (terminated && terminated.exitCode === 0) continue;
    if (sidecar && c.started) {
      if (c.ready) readyContainers++;
      continue;
    }
    if (terminated) {
      if (!terminated.reason) {
        reason = terminated.signal
          ? `Init:Signal:${terminated.signal}`
          : `Init:ExitCode:${terminated.exitCode}`;
      } else {
        reason = `Init:${terminated.reason}`;
      }
    } else if (waiting?.reason && waiting.reason !== 'PodInitializing') {
      reason = `Init:${waiting.reason}`;
    } else {
      reason = `Init:${i}/${(spec.initContainers ?? []).length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || hasCondition(pod, 'Initialized')) {
    restarts = restartableInitRestarts;
    lastRestart = lastRestartableInitRestart;
    let hasRunning = false;
    const statuses = status.containerStatuses ?? [];
    // Backwards, so the first container's state wins, as in kubectl.
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i]!;
      restarts += c.restartCount ?? 0;
      lastRestart = laterFinish(lastRestart, c);
      const waiting = c.state?.waiting;
      const terminated = c.state?.terminated;
      if (waiting?.reason) {
        reason = waiting.reason;
      } else if (terminated?.reason) {
        reason = terminated.reason;
      } else if (terminated) {
        reason = terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode}`;
      } else if (c.ready && c.state?.running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    // A pod whose first container completed while another still runs is shown by readiness.
    if (reason === 'Completed' && hasRunning) reason = hasCondition(pod, 'Ready') ? 'Running' : 'NotReady';
  }

  const deleting = !!pod.metadata?.deletionTimestamp;
  if (deleting && status.reason === 'NodeLost') reason = 'Unknown';
  else if (deleting && !isTerminalPhase(status.phase)) reason = 'Terminating';

  const restartsCell =
    restarts !== 0 && lastRestart > 0
      ? `${restarts} (${humanDuration(now - lastRestart)} ago)`
      : String(restarts);

  let readinessGates = '<none>';
  const gates = spec.readinessGates ?? [];
  if (gates.length > 0) {
    const trueGates = gates.filter((g) => hasCondition(pod, g.conditionType)).length;
    readinessGates = `${trueGates}/${gates.length}`;
  }

  return {
    namespace: pod.metadata?.namespace ?? 'default',
    name: pod.metadata?.name ?? '',
    ready: `${readyContainers}/${totalContainers}`,
    status: reason,
    restarts: restartsCell,
    age: since(podCreationTime(pod), now),
    ip: status.podIPs?.[0]?.ip || status.podIP || '<none>',
    node: spec.nodeName || '<none>',
    nominatedNode: status.nominatedNodeName || '<none>',
    readinessGates,
  };
}

/**
 * Columns aligned as kubectl's tabwriter does them (minimum width 6, padding 3, blanks); the last
 * column is not padded.
 */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      if (i < row.length - 1) widths[i] = Math.max(widths[i] ?? 0, cell.length + 3, 6);
    });
  }
  return rows
    .map((row) => row.map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i]!) : cell)).join('') + '\n')
    .join('');
}

export interface PrintOptions {
  /** Also the IP, NODE, NOMINATED NODE and READINESS GATES columns (`-o wide`). */
  wide?: boolean;
  /** A NAMESPACE column first (`-A`). */
  withNamespace?: boolean;
  noHeaders?: boolean;
  /** Milliseconds since the epoch. */
  now: number;
}

/** The `kubectl get pods` table for `pods`, in the order given. */
export function printPodTable(pods: readonly Pod[], options: PrintOptions): string {
  const header = ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE'];
  if (options.wide) header.push('IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES');
  if (options.withNamespace) header.unshift('NAMESPACE');
  const rows: string[][] = options.noHeaders ? [] : [header];
  for (const pod of pods) {
    const r = podRow(pod, options.now);
    const cells = [r.name, r.ready, r.status, r.restarts, r.age];
    if (options.wide) cells.push(r.ip, r.node, r.nominatedNode, r.readinessGates);
    if (options.withNamespace) cells.unshift(r.namespace);
    rows.push(cells);
  }
  return formatTable(rows);
}

/** Pods ordered as an API server lists them: by namespace, then name. */
export function sortPods(pods: readonly Pod[]): Pod[] {
  const key = (p: Pod) => [p.metadata?.namespace ?? 'default', p.metadata?.name ?? ''] as const;
  return [...pods].sort((a, b) => {
    const [na, a1] = key(a);
    const [nb, b1] = key(b);
    return na < nb ? -1 : na > nb ? 1 : a1 < b1 ? -1 : a1 > b1 ? 1 : 0;
  });
}

/** Object keys sorted recursively, as kubectl's `-o json` / `-o yaml` print them. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) out[k] = sortKeys((value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

import { humanDuration, podCells, since } from '@nodelet/api';
import type { Pod, PodCells } from '@nodelet/api';

/**
 * `kubectl get pods` output for the pods a kubelet reports. The READY, STATUS, RESTARTS and wide cells are
 * kubectl's printPod (`podCells` of @nodelet/api) and AGE its HumanDuration, so what users read here
 * means what it means in kubectl. Pure functions of a pod and "now".
 */

export interface PodRow extends PodCells {
  namespace: string;
  name: string;
  age: string;
}

export { humanDuration, since };

/**
 * When the pod came to be: `metadata.creationTimestamp` (set by an API server), else the
 * `kubernetes.io/config.seen` annotation a kubelet puts on pods from files and URLs.
 */
export function podCreationTime(pod: Pod): string | undefined {
  return pod.metadata?.creationTimestamp ?? pod.metadata?.annotations?.['kubernetes.io/config.seen'];
}

/** The cells of one pod: kubectl's printPod (shared with the API server's Tables) and the AGE. */
export function podRow(pod: Pod, now: number): PodRow {
  return {
    namespace: pod.metadata?.namespace ?? 'default',
    name: pod.metadata?.name ?? '',
    ...podCells(pod, now),
    age: since(podCreationTime(pod), now),
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

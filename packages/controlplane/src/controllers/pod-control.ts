import type { KubeObject } from '../object.js';
import { labelSelectorFromObject, matchLabels } from '../apiserver/selectors.js';

/**
 * Pod helpers the workload controllers share (upstream's pkg/controller/controller_utils.go and
 * pkg/api/v1/pod): which pods count, which are ready and available, who controls an object, the order
 * surplus pods are deleted in, and a pod made from a template.
 */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** A pod that has not finished and is not being deleted (FilterActivePods). */
export function isPodActive(pod: KubeObject): boolean {
  const phase = pod.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed' && !pod.metadata.deletionTimestamp;
}

function readyCondition(pod: KubeObject): Record<string, any> | undefined {
  return (pod.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
}

export function isPodReady(pod: KubeObject): boolean {
  return readyCondition(pod)?.status === 'True';
}

/** Ready for at least `minReadySeconds` at `now` (IsPodAvailable). */
export function isPodAvailable(pod: KubeObject, minReadySeconds: number, now: number): boolean {
  if (!isPodReady(pod)) return false;
  if (minReadySeconds <= 0) return true;
  const since = Date.parse(readyCondition(pod)?.lastTransitionTime ?? '');
  return Number.isFinite(since) && since + minReadySeconds * 1000 <= now;
}

export function controllerRefOf(obj: KubeObject): OwnerReference | undefined {
  const refs = (obj.metadata.ownerReferences ?? []) as OwnerReference[];
  return refs.find((r) => r.controller === true);
}

/** The owner reference a controller puts on what it creates or adopts. */
export function controllerRef(owner: KubeObject, apiVersion: string, kind: string): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata.name!,
    uid: owner.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function selectorMatches(selector: unknown, labels: Record<string, string> | undefined): boolean {
  if (!selector || typeof selector !== 'object') return false;
  const sel = labelSelectorFromObject(selector as Parameters<typeof labelSelectorFromObject>[0]);
  // An empty selector selects nothing for a controller (upstream refuses it at validation anyway).
  return sel.length > 0 && matchLabels(sel, labels);
}

/** A pod for `template`, named `<prefix>-<5 random characters>` by the API server (GetPodFromTemplate). */
export function podFromTemplate(
  template: Record<string, any>,
  prefix: string,
  owner: OwnerReference,
): object {
  const meta = template.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${prefix}-`,
      ...(meta.labels ? { labels: { ...meta.labels } } : {}),
      ...(meta.annotations ? { annotations: { ...meta.annotations } } : {}),
      ...(meta.finalizers ? { finalizers: [...meta.finalizers] } : {}),
      ownerReferences: [owner],
    },
    spec: structuredClone(template.spec ?? {}),
  };
}

const phaseRank: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };

function readySince(pod: KubeObject): number {
  const c = readyCondition(pod);
  return c?.status === 'True' ? Date.parse(c.lastTransitionTime ?? '') || 0 : 0;
}

function restarts(pod: KubeObject): number {
  return (pod.status?.containerStatuses ?? []).reduce(
    (n: number, s: { restartCount?: number }) => Math.max(n, s.restartCount ?? 0),
    0,
  );
}

/**
 * Sorts `pods` into the order surplus pods are deleted in (ActivePodsWithRanks): unscheduled before
 * scheduled, Pending before Unknown before Running, not ready before ready, more pods of the same owner on
 * the node before fewer, ready for less time before more, more restarts before fewer, newer before older.
 * (Upstream's LogarithmicScaleDown buckets the times by powers of two; these compare them exactly.)
 */
export function deletionOrder(pods: KubeObject[]): KubeObject[] {
  const perNode = new Map<string, number>();
  for (const p of pods) {
    const node = p.spec?.nodeName;
    if (node) perNode.set(node, (perNode.get(node) ?? 0) + 1);
  }
  const rank = (p: KubeObject) => (p.spec?.nodeName ? (perNode.get(p.spec.nodeName) ?? 0) : 0);
  const created = (p: KubeObject) => Date.parse(p.metadata.creationTimestamp ?? '') || 0;
  return [...pods].sort((a, b) => {
    const assignedA = a.spec?.nodeName ? 1 : 0;
    const assignedB = b.spec?.nodeName ? 1 : 0;
    if (assignedA !== assignedB) return assignedA - assignedB;
    const pa = phaseRank[a.status?.phase ?? 'Pending'] ?? 0;
    const pb = phaseRank[b.status?.phase ?? 'Pending'] ?? 0;
    if (pa !== pb) return pa - pb;
    const ra = isPodReady(a) ? 1 : 0;
    const rb = isPodReady(b) ? 1 : 0;
    if (ra !== rb) return ra - rb;
    if (rank(a) !== rank(b)) return rank(b) - rank(a);
    if (ra && readySince(a) !== readySince(b)) return readySince(b) - readySince(a);
    if (restarts(a) !== restarts(b)) return restarts(b) - restarts(a);
    return created(b) - created(a);
  });
}

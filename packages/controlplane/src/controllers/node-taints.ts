import { rfc3339, type KubeObject } from '../object.js';

/**
 * The taints the node lifecycle controller keeps in step with a Node's conditions, as upstream's
 * TaintNodesByCondition (NoSchedule) and taint-based eviction (NoExecute) passes do:
 *
 *   condition               NoSchedule taint                                NoExecute taint
 *   Ready False             node.kubernetes.io/not-ready                    node.kubernetes.io/not-ready
 *   Ready Unknown           node.kubernetes.io/unreachable                  node.kubernetes.io/unreachable
 *   MemoryPressure True     node.kubernetes.io/memory-pressure              -
 *   DiskPressure True       node.kubernetes.io/disk-pressure                -
 *   PIDPressure True        node.kubernetes.io/pid-pressure                 -
 *   NetworkUnavailable True node.kubernetes.io/network-unavailable          -
 *   spec.unschedulable      node.kubernetes.io/unschedulable                -
 *
 * Taints of other keys (an admin's, `--register-with-taints`) are never touched. A NoExecute taint
 * carries `timeAdded`, from which tolerationSeconds count.
 */
export const TaintNodeNotReady = 'node.kubernetes.io/not-ready';
export const TaintNodeUnreachable = 'node.kubernetes.io/unreachable';
export const TaintNodeUnschedulable = 'node.kubernetes.io/unschedulable';

export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

const conditionTaintKeys: Record<string, Record<string, string>> = {
  Ready: { False: TaintNodeNotReady, Unknown: TaintNodeUnreachable },
  MemoryPressure: { True: 'node.kubernetes.io/memory-pressure' },
  DiskPressure: { True: 'node.kubernetes.io/disk-pressure' },
  PIDPressure: { True: 'node.kubernetes.io/pid-pressure' },
  NetworkUnavailable: { True: 'node.kubernetes.io/network-unavailable' },
};

/** Every key this controller owns with effect NoSchedule. */
const managedNoScheduleKeys = new Set([
  TaintNodeUnschedulable,
  ...Object.values(conditionTaintKeys).flatMap((m) => Object.values(m)),
]);
const managedNoExecuteKeys = new Set([TaintNodeNotReady, TaintNodeUnreachable]);

export function nodeCondition(node: KubeObject, type: string): Record<string, any> | undefined {
  return (node.status?.conditions ?? []).find((c: any) => c?.type === type);
}

/**
 * The NoSchedule and NoExecute taints `node`'s conditions call for (without timeAdded). `noExecute`
 * false: none of the NoExecute ones (every node is down, so evicting would only empty the cluster).
 */
export function conditionTaints(node: KubeObject, noExecute = true): Taint[] {
  const out: Taint[] = [];
  for (const [type, byStatus] of Object.entries(conditionTaintKeys)) {
    const key = byStatus[nodeCondition(node, type)?.status ?? ''];
    if (key) out.push({ key, effect: 'NoSchedule' });
  }
  if (node.spec?.unschedulable) out.push({ key: TaintNodeUnschedulable, effect: 'NoSchedule' });
  const ready = noExecute ? nodeCondition(node, 'Ready')?.status : undefined;
  if (ready === 'False') out.push({ key: TaintNodeNotReady, effect: 'NoExecute' });
  if (ready === 'Unknown') out.push({ key: TaintNodeUnreachable, effect: 'NoExecute' });
  return out;
}

function managed(t: Taint): boolean {
  return t.effect === 'NoSchedule'
    ? managedNoScheduleKeys.has(t.key)
    : t.effect === 'NoExecute' && managedNoExecuteKeys.has(t.key);
}

const same = (a: Taint, b: Taint) => a.key === b.key && a.effect === b.effect;

/**
 * The node's taints once the managed ones match its conditions, or undefined when they already do.
 * A taint that stays keeps its timeAdded; one added now gets `now` when it is NoExecute.
 */
export function reconcileTaints(node: KubeObject, now: number, noExecute = true): Taint[] | undefined {
  const current: Taint[] = Array.isArray(node.spec?.taints) ? node.spec.taints : [];
  const wanted = conditionTaints(node, noExecute);
  const kept = current.filter((t) => !managed(t) || wanted.some((w) => same(w, t)));
  const added = wanted
    .filter((w) => !current.some((t) => same(w, t)))
    .map((w) => (w.effect === 'NoExecute' ? { ...w, timeAdded: rfc3339(now) } : w));
  if (added.length === 0 && kept.length === current.length) return undefined;
  return [...kept, ...added];
}

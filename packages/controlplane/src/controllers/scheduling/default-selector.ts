import { matchLabels, type LabelSelector } from '../../apiserver/selectors.js';
import type { KubeObject } from '../../object.js';
import { parseSelector } from './affinity-terms.js';

/**
 * The selector upstream's default spread constraints count with (helper.DefaultSelector): the
 * requirements of every Service and ReplicaSet in the pod's namespace that selects the pod, together.
 * Undefined when none does (then the defaults do not apply). StatefulSets and ReplicationControllers
 * are not served here.
 */
export function defaultSpreadSelector(
  pod: KubeObject,
  list: (resource: string, namespace: string) => readonly KubeObject[],
): LabelSelector | undefined {
  const ns = pod.metadata.namespace ?? 'default';
  const labels = pod.metadata.labels ?? {};
  const out: LabelSelector = [];
  for (const svc of list('services', ns)) {
    const selector: Record<string, string> | undefined = svc.spec?.selector;
    if (!selector || Object.keys(selector).length === 0) continue;
    const reqs = Object.entries(selector).map(([key, v]) => ({ key, op: '=' as const, values: [v] }));
    if (matchLabels(reqs, labels)) out.push(...reqs);
  }
  for (const rs of list('replicasets', ns)) {
    const reqs = parseSelector(rs.spec?.selector);
    if (reqs && reqs.length > 0 && matchLabels(reqs, labels)) out.push(...reqs);
  }
  return out.length > 0 ? out : undefined;
}

/** kube-scheduler's system default constraints (ScheduleAnyway), for pods that declare none. */
export const systemDefaultConstraints = [
  { maxSkew: 3, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway' },
  { maxSkew: 5, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' },
] as const;

import { untoleratedTaint, type TaintLike, type TolerationLike } from '@nodelet/api';
import type { KubeObject } from '../object.js';
import { matchesNodeSelection } from './scheduling/node-affinity.js';
import { podFromTemplate, type OwnerReference } from './pod-control.js';
import { revisionHashLabel } from './controller-history.js';

/**
 * Which nodes a DaemonSet runs on and the pod it puts there (upstream's pkg/controller/daemon/util and
 * NodeShouldRunDaemonPod). A daemon pod is not bound by the controller: it carries a required node
 * affinity term `metadata.name In [<node>]` and the scheduler binds it, as upstream since 1.12. It
 * tolerates the taints nodes get from their conditions, so node problems do not evict it.
 */

/** The tolerations upstream's AddOrUpdateDaemonPodTolerations adds (no tolerationSeconds: forever). */
export function daemonTolerations(hostNetwork: boolean): TolerationLike[] {
  const exists = (key: string, effect: string) => ({ key, operator: 'Exists', effect });
  return [
    exists('node.kubernetes.io/not-ready', 'NoExecute'),
    exists('node.kubernetes.io/unreachable', 'NoExecute'),
    exists('node.kubernetes.io/disk-pressure', 'NoSchedule'),
    exists('node.kubernetes.io/memory-pressure', 'NoSchedule'),
    exists('node.kubernetes.io/pid-pressure', 'NoSchedule'),
    exists('node.kubernetes.io/unschedulable', 'NoSchedule'),
    ...(hostNetwork ? [exists('node.kubernetes.io/network-unavailable', 'NoSchedule')] : []),
  ];
}

const sameToleration = (a: TolerationLike, b: TolerationLike) =>
  a.key === b.key &&
  a.operator === b.operator &&
  (a.value ?? '') === (b.value ?? '') &&
  a.effect === b.effect;

/** The DaemonSet's pod spec for `node`: its template plus the node affinity term and daemon tolerations. */
export function daemonPodSpec(ds: KubeObject, node: string): Record<string, any> {
  const spec = structuredClone(ds.spec?.template?.spec ?? {});
  const tolerations: TolerationLike[] = [...(spec.tolerations ?? [])];
  for (const t of daemonTolerations(spec.hostNetwork === true)) {
    if (!tolerations.some((x) => sameToleration(x, t))) tolerations.push(t);
  }
  spec.tolerations = tolerations;
  // ReplaceDaemonSetPodNodeNameNodeAffinity: the template's required terms give way to the node's name.
  spec.affinity = { ...(spec.affinity ?? {}) };
  spec.affinity.nodeAffinity = {
    ...(spec.affinity.nodeAffinity ?? {}),
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }],
    },
  };
  return spec;
}

/** The new daemon pod for `node`, labelled with the template's revision hash. */
export function newDaemonPod(ds: KubeObject, node: string, hash: string, owner: OwnerReference): object {
  const template = structuredClone(ds.spec?.template ?? {});
  template.metadata = { ...(template.metadata ?? {}) };
  template.metadata.labels = { ...(template.metadata.labels ?? {}), [revisionHashLabel]: hash };
  template.spec = daemonPodSpec(ds, node);
  return podFromTemplate(template, ds.metadata.name!, owner);
}

export interface NodeFit {
  /** A new daemon pod should be made on the node. */
  shouldRun: boolean;
  /** A daemon pod already there may stay. */
  shouldContinueRunning: boolean;
}

/** NodeShouldRunDaemonPod: node name, node selector and affinity, then taints. */
export function nodeShouldRunDaemonPod(node: KubeObject, ds: KubeObject): NodeFit {
  const name = node.metadata.name!;
  const template = ds.spec?.template?.spec ?? {};
  const none = { shouldRun: false, shouldContinueRunning: false };
  if (template.nodeName && template.nodeName !== name) return none;
  // The selection is the template's own (the daemon affinity term names this node anyway).
  if (!matchesNodeSelection({ metadata: {}, spec: template }, node)) return none;
  const tolerations = daemonPodSpec(ds, name).tolerations as TolerationLike[];
  const taints: TaintLike[] = node.spec?.taints ?? [];
  const blocking = untoleratedTaint(
    taints,
    tolerations,
    (t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute',
  );
  if (!blocking) return { shouldRun: true, shouldContinueRunning: true };
  // Scheduled daemon pods keep running unless a NoExecute taint is not tolerated.
  const evicting = untoleratedTaint(taints, tolerations, (t) => t.effect === 'NoExecute');
  return { shouldRun: false, shouldContinueRunning: !evicting };
}

/** The node a daemon pod is for: its nodeName, or the node its affinity term names (GetTargetNodeName). */
export function targetNodeOf(pod: KubeObject): string | undefined {
  if (pod.spec?.nodeName) return pod.spec.nodeName;
  const terms: any[] =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  for (const term of terms) {
    for (const f of term.matchFields ?? []) {
      if (f.key === 'metadata.name' && f.operator === 'In' && f.values?.length === 1) return f.values[0];
    }
  }
  return undefined;
}

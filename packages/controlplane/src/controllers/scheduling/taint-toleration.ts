import { toleratesTaint, untoleratedTaint, type TaintLike } from '@nodelet/api';
import type { KubeObject } from '../../object.js';
import { normalizeByMax, type FilterPlugin, type ScorePlugin } from './framework.js';

const notReady = 'node.kubernetes.io/not-ready';

function isReady(node: KubeObject): boolean {
  return (node.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
}

/**
 * The node's taints; a node that is not Ready also has `node.kubernetes.io/not-ready:NoSchedule`, which
 * upstream's node lifecycle controller would have added (nodelet runs none).
 */
export function nodeTaints(node: KubeObject): TaintLike[] {
  const taints: TaintLike[] = Array.isArray(node.spec?.taints) ? node.spec.taints : [];
  if (isReady(node) || taints.some((t) => t.key === notReady && t.effect === 'NoSchedule')) return taints;
  return [...taints, { key: notReady, effect: 'NoSchedule' }];
}

const doNotSchedule = (t: TaintLike) => t.effect === 'NoSchedule' || t.effect === 'NoExecute';

/** The first NoSchedule/NoExecute taint of `node` that `pod` does not tolerate. */
export function untoleratedNodeTaint(pod: KubeObject, node: KubeObject): TaintLike | undefined {
  return untoleratedTaint(nodeTaints(node), pod.spec?.tolerations ?? [], doNotSchedule);
}

/** TaintToleration (filter): NoSchedule and NoExecute taints must be tolerated. */
export const taintTolerationFilter: FilterPlugin = {
  name: 'TaintToleration',
  filter(ctx, { node }) {
    const taint = untoleratedNodeTaint(ctx.pod, node);
    return taint ? [`node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`] : [];
  },
};

/**
 * TaintToleration (score): fewer untolerated PreferNoSchedule taints score higher. Only the pod's
 * tolerations with effect PreferNoSchedule or none count, as upstream.
 */
export const taintTolerationScore: ScorePlugin = {
  name: 'TaintToleration',
  weight: 3,
  score(ctx, { node }) {
    const tolerations = (ctx.pod.spec?.tolerations ?? []).filter(
      (t: any) => !t.effect || t.effect === 'PreferNoSchedule',
    );
    return nodeTaints(node).filter(
      (taint) =>
        taint.effect === 'PreferNoSchedule' && !tolerations.some((t: any) => toleratesTaint(t, taint)),
    ).length;
  },
  normalize: (_ctx, scores) => normalizeByMax(scores, true),
};

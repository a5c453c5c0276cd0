import type { KubeObject } from '../../object.js';
import { normalizeByMax, type FilterPlugin, type ScorePlugin } from './framework.js';

function matchExpression(value: string | undefined, e: any): boolean {
  const values: string[] = Array.isArray(e?.values) ? e.values : [];
  switch (e?.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0] ?? '')) return false;
      return e.operator === 'Gt' ? Number(value) > Number(values[0]) : Number(value) < Number(values[0]);
    }
    default:
      return false;
  }
}

/** A NodeSelectorTerm: all its expressions and fields match (an empty term matches no node). */
export function matchesNodeSelectorTerm(term: any, node: KubeObject): boolean {
  const labels: Record<string, string> = node.metadata.labels ?? {};
  const exprs: any[] = Array.isArray(term?.matchExpressions) ? term.matchExpressions : [];
  const fields: any[] = Array.isArray(term?.matchFields) ? term.matchFields : [];
  if (exprs.length === 0 && fields.length === 0) return false;
  return (
    exprs.every((e) => matchExpression(labels[e?.key], e)) &&
    fields.every((e) => matchExpression(e?.key === 'metadata.name' ? node.metadata.name : undefined, e))
  );
}

/** nodeSelector and requiredDuringSchedulingIgnoredDuringExecution node affinity (terms are ORed). */
export function matchesNodeSelection(pod: KubeObject, node: KubeObject): boolean {
  const labels: Record<string, string> = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const terms: unknown =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!Array.isArray(terms) || terms.length === 0) return true;
  return terms.some((term) => matchesNodeSelectorTerm(term, node));
}

/** NodeAffinity (filter): nodeSelector and required node affinity. */
export const nodeAffinityFilter: FilterPlugin = {
  name: 'NodeAffinity',
  filter: (ctx, { node }) =>
    matchesNodeSelection(ctx.pod, node) ? [] : ["node(s) didn't match Pod's node affinity/selector"],
};

/** NodeAffinity (score): the weights of the preferred terms the node matches, scaled by the best node. */
export const nodeAffinityScore: ScorePlugin = {
  name: 'NodeAffinity',
  weight: 2,
  score(ctx, { node }) {
    const preferred: unknown =
      ctx.pod.spec?.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution;
    if (!Array.isArray(preferred)) return 0;
    let sum = 0;
    for (const p of preferred) {
      const weight = Number(p?.weight);
      if (weight > 0 && matchesNodeSelectorTerm(p.preference, node)) sum += weight;
    }
    return sum;
  },
  normalize: (_ctx, scores) => normalizeByMax(scores),
};

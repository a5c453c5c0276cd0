import { matchLabels, type LabelSelector } from '../../apiserver/selectors.js';
import type { KubeObject } from '../../object.js';
import { parseSelector } from './affinity-terms.js';
import { systemDefaultConstraints } from './default-selector.js';
import type { CycleContext, FilterPlugin, NodeInfo, ScorePlugin } from './framework.js';
import { matchesNodeSelection } from './node-affinity.js';
import { untoleratedNodeTaint } from './taint-toleration.js';

/**
 * PodTopologySpread: `topologySpreadConstraints` over topology domains (a topologyKey and a node label
 * value). DoNotSchedule constraints filter: placing the pod in a domain may not make its matching pods
 * exceed the emptiest eligible domain by more than maxSkew (the emptiest counts 0 while fewer than
 * minDomains domains exist). ScheduleAnyway constraints score: fewer matching pods, higher score.
 * Eligible nodes have every constraint's key; nodeAffinityPolicy Honor (default) counts only nodes the
 * pod's nodeSelector/affinity allow, nodeTaintsPolicy Honor (default Ignore) only nodes it tolerates.
 */
interface Constraint {
  maxSkew: number;
  topologyKey: string;
  selector: LabelSelector | undefined;
  minDomains: number;
  honorAffinity: boolean;
  honorTaints: boolean;
}

const pair = (key: string, value: string) => `${key}\u0000${value}`;

/** The pod's constraints with `whenUnsatisfiable` = `action`; matchLabelKeys merged into the selector. */
export function spreadConstraints(pod: KubeObject, action: 'DoNotSchedule' | 'ScheduleAnyway'): Constraint[] {
  const list: unknown = pod.spec?.topologySpreadConstraints;
  const labels: Record<string, string> = pod.metadata.labels ?? {};
  const out: Constraint[] = [];
  for (const c of Array.isArray(list) ? list : []) {
    if ((c?.whenUnsatisfiable ?? 'DoNotSchedule') !== action || typeof c.topologyKey !== 'string') continue;
    let selector = parseSelector(c.labelSelector);
    const keys: unknown[] = Array.isArray(c.matchLabelKeys) ? c.matchLabelKeys : [];
    const extra = keys.flatMap((key) =>
      typeof key === 'string' && labels[key] !== undefined
        ? [{ key, op: 'in' as const, values: [labels[key]] }]
        : [],
    );
    if (extra.length > 0) selector = [...(selector ?? []), ...extra];
    out.push({
      maxSkew: Number(c.maxSkew) >= 1 ? Number(c.maxSkew) : 1,
      topologyKey: c.topologyKey,
      selector,
      minDomains: Number(c.minDomains) >= 1 ? Number(c.minDomains) : 1,
      honorAffinity: (c.nodeAffinityPolicy ?? 'Honor') === 'Honor',
      honorTaints: c.nodeTaintsPolicy === 'Honor',
    });
  }
  return out;
}

/** Pods of the pod's namespace on the node that the selector matches; none for an empty selector. */
function countMatching(info: NodeInfo, c: Constraint, namespace: string): number {
  if (!c.selector || c.selector.length === 0) return 0;
  let n = 0;
  for (const p of info.podsInNamespace(namespace)) {
    if (p.metadata.deletionTimestamp) continue;
    if (matchLabels(c.selector, p.metadata.labels)) n++;
  }
  return n;
}

const hasAllKeys = (node: KubeObject, cs: readonly Constraint[]) =>
  cs.every((c) => node.metadata.labels?.[c.topologyKey] !== undefined);

function eligible(pod: KubeObject, node: KubeObject, c: Constraint): boolean {
  if (c.honorAffinity && !matchesNodeSelection(pod, node)) return false;
  return !(c.honorTaints && untoleratedNodeTaint(pod, node));
}

/**
 * Matching pods per domain, over the eligible nodes of `nodes` (a domain of an eligible node is listed
 * even at 0). `requireAll`: a node lacking any constraint's key counts for none (else only for those).
 */
function domainCounts(
  ctx: CycleContext,
  nodes: readonly NodeInfo[],
  cs: readonly Constraint[],
  requireAll = true,
): Map<string, number> {
  const counts = new Map<string, number>();
  const ns = ctx.pod.metadata.namespace ?? 'default';
  for (const info of nodes) {
    if (requireAll && !hasAllKeys(info.node, cs)) continue;
    for (const c of cs) {
      const value = info.node.metadata.labels?.[c.topologyKey];
      if (value === undefined || !eligible(ctx.pod, info.node, c)) continue;
      const key = pair(c.topologyKey, value);
      counts.set(key, (counts.get(key) ?? 0) + countMatching(info, c, ns));
    }
  }
  return counts;
}

interface FilterState {
  constraints: Constraint[];
  counts: Map<string, number>;
  /** Per topologyKey: the smallest count and the number of domains. */
  minimum: Map<string, { min: number; domains: number }>;
}

export const podTopologySpreadFilter: FilterPlugin = {
  name: 'PodTopologySpread',
  preFilter(ctx) {
    const constraints = spreadConstraints(ctx.pod, 'DoNotSchedule');
    const counts =
      constraints.length > 0 ? domainCounts(ctx, ctx.nodes, constraints) : new Map<string, number>();
    const minimum = new Map<string, { min: number; domains: number }>();
    for (const [k, n] of counts) {
      const key = k.slice(0, k.indexOf('\u0000'));
      const m = minimum.get(key) ?? { min: Infinity, domains: 0 };
      minimum.set(key, { min: Math.min(m.min, n), domains: m.domains + 1 });
    }
    ctx.state.set('PodTopologySpread', { constraints, counts, minimum } satisfies FilterState);
  },
  filter(ctx, { node }) {
    const s = ctx.state.get('PodTopologySpread') as FilterState;
    for (const c of s.constraints) {
      const value: string | undefined = node.metadata.labels?.[c.topologyKey];
      if (value === undefined)
        return ["node(s) didn't match pod topology spread constraints (missing required label)"];
      const m = s.minimum.get(c.topologyKey);
      if (!m) continue;
      const min = m.domains < c.minDomains ? 0 : m.min;
      const self =
        c.selector && c.selector.length > 0 && matchLabels(c.selector, ctx.pod.metadata.labels) ? 1 : 0;
      if ((s.counts.get(pair(c.topologyKey, value)) ?? 0) + self - min > c.maxSkew)
        return ["node(s) didn't match pod topology spread constraints"];
    }
    return [];
  },
};

interface ScoreState {
  constraints: Constraint[];
  /** false for the system defaults: a node lacking a key is scored on the constraints it has. */
  requireAll: boolean;
  counts: Map<string, number>;
  /** Per constraint: log(domains + 2), so a key with many domains (hostname) weighs more, as upstream. */
  weights: number[];
}

/** The pod's ScheduleAnyway constraints, or the system defaults over its Services' and ReplicaSets' selector. */
function scoringConstraints(ctx: CycleContext): { constraints: Constraint[]; requireAll: boolean } {
  const own: unknown = ctx.pod.spec?.topologySpreadConstraints;
  if (Array.isArray(own) && own.length > 0)
    return { constraints: spreadConstraints(ctx.pod, 'ScheduleAnyway'), requireAll: true };
  const selector = ctx.defaultSpreadSelector?.();
  if (!selector) return { constraints: [], requireAll: true };
  const constraints = systemDefaultConstraints.map((c) => ({
    maxSkew: c.maxSkew,
    topologyKey: c.topologyKey,
    selector,
    minDomains: 1,
    honorAffinity: true,
    honorTaints: false,
  }));
  return { constraints, requireAll: false };
}

/**
 * PodTopologySpread (score): per ScheduleAnyway constraint (a pod without constraints of its own gets
 * upstream's system defaults — hostname maxSkew 3, zone maxSkew 5 — over the selectors of the Services
 * and ReplicaSets that select it), the matching pods in the node's domain (counted over all eligible
 * nodes, for the domains of the feasible ones) × log(domains + 2) + maxSkew − 1; the fewest score 100
 * (upstream's formula). Nodes without a required key score 0.
 */
export const podTopologySpreadScore: ScorePlugin = {
  name: 'PodTopologySpread',
  weight: 2,
  preScore(ctx, feasible) {
    const { constraints, requireAll } = scoringConstraints(ctx);
    const counts = new Map<string, number>();
    const domains = constraints.map(() => new Set<string>());
    for (const info of feasible) {
      if (requireAll && !hasAllKeys(info.node, constraints)) continue;
      constraints.forEach((c, i) => {
        const value = info.node.metadata.labels?.[c.topologyKey];
        if (value === undefined) return;
        counts.set(pair(c.topologyKey, value), 0);
        domains[i]!.add(value);
      });
    }
    for (const [k, n] of domainCounts(ctx, ctx.nodes, constraints, requireAll))
      if (counts.has(k)) counts.set(k, n);
    const weights = domains.map((d) => Math.log(d.size + 2));
    ctx.state.set('PodTopologySpread/score', {
      constraints,
      requireAll,
      counts,
      weights,
    } satisfies ScoreState);
  },
  score(ctx, { node }) {
    const s = ctx.state.get('PodTopologySpread/score') as ScoreState;
    if (s.constraints.length === 0 || (s.requireAll && !hasAllKeys(node, s.constraints))) return -1;
    let score = 0;
    s.constraints.forEach((c, i) => {
      const value = node.metadata.labels?.[c.topologyKey];
      if (value === undefined) return;
      score += (s.counts.get(pair(c.topologyKey, value)) ?? 0) * s.weights[i]! + (c.maxSkew - 1);
    });
    return Math.round(score);
  },
  normalize(ctx, scores) {
    const s = ctx.state.get('PodTopologySpread/score') as ScoreState;
    if (s.constraints.length === 0) {
      scores.fill(0);
      return;
    }
    const counted = scores.filter((v) => v >= 0);
    const max = Math.max(0, ...counted);
    const min = Math.min(...counted);
    for (let i = 0; i < scores.length; i++) {
      const v = scores[i]!;
      scores[i] = v < 0 ? 0 : max === 0 ? 100 : (100 * (max + min - v)) / max;
    }
  },
};

import type { KubeObject } from '../../object.js';
import { candidatePods, podTerms, termMatches, type AffinityTerm } from './affinity-terms.js';
import type { CycleContext, FilterPlugin, NodeInfo, ScorePlugin } from './framework.js';

/**
 * InterPodAffinity: required pod affinity and anti-affinity of the pod, and the required anti-affinity
 * of the pods already placed, over topology domains (a topologyKey and a node label value). PreFilter
 * counts, per domain, the placed pods each kind of term matches, so each node's filter is a few lookups.
 */
const pair = (key: string, value: string) => `${key}\u0000${value}`;

interface AffinityState {
  affinity: AffinityTerm[];
  antiAffinity: AffinityTerm[];
  /** Domains → placed pods that match all of the pod's affinity terms. */
  affinityCounts: Map<string, number>;
  /** Domains → placed pods that match one of the pod's anti-affinity terms (once per term). */
  antiAffinityCounts: Map<string, number>;
  /** Domains → placed pods whose required anti-affinity terms match the pod. */
  existingAntiCounts: Map<string, number>;
}

function bump(counts: Map<string, number>, node: KubeObject, key: string, by = 1): void {
  const value = node.metadata.labels?.[key];
  if (value !== undefined) counts.set(pair(key, value), (counts.get(pair(key, value)) ?? 0) + by);
}

const stateKey = 'InterPodAffinity';

function preFilter(ctx: CycleContext): void {
  const { pod } = ctx;
  const s: AffinityState = {
    affinity: podTerms(pod, 'podAffinity', 'required'),
    antiAffinity: podTerms(pod, 'podAntiAffinity', 'required'),
    affinityCounts: new Map(),
    antiAffinityCounts: new Map(),
    existingAntiCounts: new Map(),
  };
  for (const info of ctx.nodes) {
    for (const other of info.podsWithAffinity) {
      for (const term of podTerms(other, 'podAntiAffinity', 'required'))
        if (termMatches(ctx, term, pod)) bump(s.existingAntiCounts, info.node, term.topologyKey);
    }
    if (s.affinity.length === 0 && s.antiAffinity.length === 0) continue;
    for (const other of candidatePods(info, [...s.affinity, ...s.antiAffinity])) {
      if (s.affinity.length > 0 && s.affinity.every((t) => termMatches(ctx, t, other)))
        for (const t of s.affinity) bump(s.affinityCounts, info.node, t.topologyKey);
      for (const t of s.antiAffinity)
        if (termMatches(ctx, t, other)) bump(s.antiAffinityCounts, info.node, t.topologyKey);
    }
  }
  ctx.state.set(stateKey, s);
}

function satisfiesAffinity(ctx: CycleContext, s: AffinityState, node: KubeObject): boolean {
  const labels: Record<string, string> = node.metadata.labels ?? {};
  let podsExist = true;
  for (const t of s.affinity) {
    const value = labels[t.topologyKey];
    if (value === undefined) return false;
    if (!((s.affinityCounts.get(pair(t.topologyKey, value)) ?? 0) > 0)) podsExist = false;
  }
  // The first of a group of pods with affinity to each other: no pod anywhere matches yet, and the pod
  // matches its own terms, so it may start the group (upstream does the same).
  return podsExist || (s.affinityCounts.size === 0 && s.affinity.every((t) => termMatches(ctx, t, ctx.pod)));
}

function filter(ctx: CycleContext, { node }: NodeInfo): string[] {
  const s = ctx.state.get(stateKey) as AffinityState;
  const labels: Record<string, string> = node.metadata.labels ?? {};
  if (s.affinity.length > 0 && !satisfiesAffinity(ctx, s, node))
    return ["node(s) didn't match pod affinity rules"];
  for (const t of s.antiAffinity) {
    const value = labels[t.topologyKey];
    if (value !== undefined && (s.antiAffinityCounts.get(pair(t.topologyKey, value)) ?? 0) > 0)
      return ["node(s) didn't match pod anti-affinity rules"];
  }
  if (s.existingAntiCounts.size > 0) {
    for (const [k, v] of Object.entries(labels))
      if ((s.existingAntiCounts.get(pair(k, v)) ?? 0) > 0)
        return ["node(s) didn't satisfy existing pods anti-affinity rules"];
  }
  return [];
}

export const interPodAffinityFilter: FilterPlugin = { name: 'InterPodAffinity', preFilter, filter };

/** Upstream's hardPodAffinityWeight: a placed pod's required affinity to the pod counts this much. */
const hardPodAffinityWeight = 1;

/**
 * InterPodAffinity (score): per domain, + the weight of each preferred affinity term of the pod a placed
 * pod matches, − for anti-affinity; and symmetrically the placed pods' preferred (and required, weight 1)
 * terms that match the pod. A node sums its domains; scores are scaled min–max to 0–100.
 */
export const interPodAffinityScore: ScorePlugin = {
  name: 'InterPodAffinity',
  weight: 2,
  preScore(ctx) {
    const { pod } = ctx;
    const preferred = podTerms(pod, 'podAffinity', 'preferred');
    const preferredAnti = podTerms(pod, 'podAntiAffinity', 'preferred');
    const domains = new Map<string, number>();
    const incoming = [...preferred, ...preferredAnti];
    for (const info of ctx.nodes) {
      if (incoming.length > 0) {
        for (const other of candidatePods(info, incoming)) {
          for (const t of preferred)
            if (termMatches(ctx, t, other)) bump(domains, info.node, t.topologyKey, t.weight);
          for (const t of preferredAnti)
            if (termMatches(ctx, t, other)) bump(domains, info.node, t.topologyKey, -t.weight);
        }
      }
      for (const other of info.podsWithAffinity) {
        for (const t of podTerms(other, 'podAffinity', 'required'))
          if (termMatches(ctx, t, pod)) bump(domains, info.node, t.topologyKey, hardPodAffinityWeight);
        for (const t of podTerms(other, 'podAffinity', 'preferred'))
          if (termMatches(ctx, t, pod)) bump(domains, info.node, t.topologyKey, t.weight);
        for (const t of podTerms(other, 'podAntiAffinity', 'preferred'))
          if (termMatches(ctx, t, pod)) bump(domains, info.node, t.topologyKey, -t.weight);
      }
    }
    ctx.state.set('InterPodAffinity/score', domains);
  },
  score(ctx, { node }) {
    const domains = ctx.state.get('InterPodAffinity/score') as Map<string, number>;
    if (domains.size === 0) return 0;
    let sum = 0;
    for (const [k, v] of Object.entries(node.metadata.labels ?? {}))
      sum += domains.get(pair(k, v as string)) ?? 0;
    return sum;
  },
  normalize(_ctx, scores) {
    const max = Math.max(...scores);
    const min = Math.min(...scores);
    for (let i = 0; i < scores.length; i++)
      scores[i] = max > min ? ((scores[i]! - min) * 100) / (max - min) : 0;
  },
};

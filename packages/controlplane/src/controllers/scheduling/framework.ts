import type { LabelSelector } from '../../apiserver/selectors.js';
import type { KubeObject } from '../../object.js';
import type { Resources } from './resources.js';

/**
 * The scheduling framework, reduced from kube-scheduler's: a profile is a list of filter plugins and a
 * list of score plugins. For one pod, each filter plugin may compute state once (`preFilter`), then runs
 * per node; a node is feasible when every filter passes (the first that fails gives the node's reasons,
 * as upstream stops at the first failing plugin). Each score plugin scores the feasible nodes, its scores
 * are normalized to 0–100 and weighted; the highest sum wins, ties go to the first node by name.
 */

/** One node as the scheduler holds it in memory: the Node and the pods bound to it that still run. */
export interface NodeInfo {
  readonly name: string;
  readonly node: KubeObject;
  readonly pods: readonly KubeObject[];
  /** Those of `pods` with pod affinity or anti-affinity (upstream's PodsWithAffinity). */
  readonly podsWithAffinity: readonly KubeObject[];
  /** Those of `pods` in one namespace (what most terms and spread constraints look at). */
  podsInNamespace(namespace: string): readonly KubeObject[];
  /** Sum of the pods' requests. */
  readonly requested: Resources;
  /** The same with the non-zero scoring defaults (100m, 200 MiB) for containers that request nothing. */
  readonly nonZeroRequested: Resources;
}

/** What one scheduling attempt of one pod sees (upstream's CycleState plus the snapshot). */
export interface CycleContext {
  readonly pod: KubeObject;
  /** Every node, sorted by name. */
  readonly nodes: readonly NodeInfo[];
  /** A namespace's labels (for namespaceSelector); undefined when it does not exist. */
  namespaceLabels(namespace: string): Record<string, string> | undefined;
  /** The selector of the Services and ReplicaSets that select the pod (for default spreading), if any. */
  defaultSpreadSelector?(): LabelSelector | undefined;
  /** Per-plugin state computed by preFilter / preScore for this attempt. */
  readonly state: Map<string, unknown>;
}

export interface FilterPlugin {
  readonly name: string;
  preFilter?(ctx: CycleContext): void;
  /** Why `node` cannot take the pod (upstream's reason strings); empty when it can. */
  filter(ctx: CycleContext, node: NodeInfo): string[];
}

export interface ScorePlugin {
  readonly name: string;
  /** The default profile's weight. */
  readonly weight: number;
  preScore?(ctx: CycleContext, feasible: readonly NodeInfo[]): void;
  score(ctx: CycleContext, node: NodeInfo): number;
  /** Scales the raw scores (in `feasible`'s order) to 0–100 in place; absent: already 0–100. */
  normalize?(ctx: CycleContext, scores: number[]): void;
}

export interface Profile {
  filters: readonly FilterPlugin[];
  scores: readonly ScorePlugin[];
}

export type Decision = { node: string } | { reasons: Map<string, number> };

/** One scheduling decision for `ctx.pod`. */
export function schedulePod(profile: Profile, ctx: CycleContext): Decision {
  for (const f of profile.filters) f.preFilter?.(ctx);
  const reasons = new Map<string, number>();
  const feasible: NodeInfo[] = [];
  for (const node of ctx.nodes) {
    let why: string[] = [];
    for (const f of profile.filters) {
      why = f.filter(ctx, node);
      if (why.length > 0) break;
    }
    if (why.length === 0) feasible.push(node);
    else for (const r of why) reasons.set(r, (reasons.get(r) ?? 0) + 1);
  }
  if (feasible.length === 0) return { reasons };
  if (feasible.length === 1) return { node: feasible[0]!.name };
  const totals = new Array<number>(feasible.length).fill(0);
  for (const s of profile.scores) {
    s.preScore?.(ctx, feasible);
    const scores = feasible.map((n) => s.score(ctx, n));
    s.normalize?.(ctx, scores);
    scores.forEach((v, i) => (totals[i]! += s.weight * v));
  }
  let best = 0;
  for (let i = 1; i < feasible.length; i++) if (totals[i]! > totals[best]!) best = i;
  return { node: feasible[best]!.name };
}

/** `0/3 nodes are available: 1 Insufficient cpu, 2 node(s) were unschedulable.` */
export function unschedulableMessage(total: number, reasons: Map<string, number>): string {
  if (total === 0) return 'no nodes available to schedule pods';
  // Sorted as strings with their counts, as upstream's FitError sorts them.
  const parts = [...reasons.entries()]
    .map(([r, n]) => `${n} ${r}`)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `0/${total} nodes are available: ${parts.join(', ')}.`;
}

/** Scales scores to 0–100 by the largest (upstream's DefaultNormalizeScore); `reverse`: the smallest raw wins. */
export function normalizeByMax(scores: number[], reverse = false): void {
  const max = Math.max(0, ...scores);
  for (let i = 0; i < scores.length; i++) {
    if (max === 0) scores[i] = reverse ? 100 : 0;
    else scores[i] = reverse ? 100 - (scores[i]! * 100) / max : (scores[i]! * 100) / max;
  }
}

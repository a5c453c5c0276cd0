import type { KubeObject } from '../../object.js';
import type { CycleContext, FilterPlugin, NodeInfo, ScorePlugin } from './framework.js';
import { SchedulerCache } from './scheduler-cache.js';

// Builders for the plugins' table tests, shaped like upstream's st.MakeNode() / st.MakePod().

export function makeNode(
  name: string,
  labels: Record<string, string> = {},
  spec: object = {},
  status?: object,
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels },
    spec,
    status: status ?? {
      conditions: [{ type: 'Ready', status: 'True' }],
      allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
    },
  } as KubeObject;
}

export function makePod(
  name: string,
  o: { ns?: string; node?: string; labels?: Record<string, string>; spec?: Record<string, unknown> } = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: o.ns ?? 'default', labels: o.labels ?? {} },
    spec: {
      containers: [{ name: 'c', image: 'busybox' }],
      ...(o.node ? { nodeName: o.node } : {}),
      ...(o.spec ?? {}),
    },
    status: { phase: o.node ? 'Running' : 'Pending' },
  } as KubeObject;
}

type Op = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

/** A PodAffinityTerm selecting `key <op> values` over `topologyKey`. */
export function term(
  key: string,
  op: Op,
  topologyKey: string,
  values?: string[],
  extra: object = {},
): object {
  return {
    labelSelector: { matchExpressions: [{ key, operator: op, ...(values ? { values } : {}) }] },
    topologyKey,
    ...extra,
  };
}

/** `spec.affinity` with required pod affinity and anti-affinity terms. */
export function requiredAffinity(affinity: object[] = [], anti: object[] = []): { affinity: object } {
  return {
    affinity: {
      ...(affinity.length
        ? { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: affinity } }
        : {}),
      ...(anti.length ? { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: anti } } : {}),
    },
  };
}

export function cycle(
  pod: KubeObject,
  nodes: KubeObject[],
  pods: KubeObject[] = [],
  namespaces: Record<string, Record<string, string>> = {},
): CycleContext {
  const cache = new SchedulerCache();
  for (const n of nodes) cache.setNode(n);
  for (const p of pods) cache.account(undefined, p);
  return { pod, nodes: cache.snapshot(), namespaceLabels: (ns) => namespaces[ns], state: new Map() };
}

/** Each node's reasons (empty: it fits) after one preFilter. */
export function filterAll(plugin: FilterPlugin, ctx: CycleContext): Record<string, string[]> {
  plugin.preFilter?.(ctx);
  return Object.fromEntries(ctx.nodes.map((n) => [n.name, plugin.filter(ctx, n)]));
}

/** Each node's fit as upstream's tables write it. */
export function fits(plugin: FilterPlugin, ctx: CycleContext): Record<string, boolean> {
  return Object.fromEntries(Object.entries(filterAll(plugin, ctx)).map(([n, r]) => [n, r.length === 0]));
}

/** Normalized scores (0–100) over `feasible` (default: every node). */
export function scoreAll(
  plugin: ScorePlugin,
  ctx: CycleContext,
  feasible: readonly NodeInfo[] = ctx.nodes,
): Record<string, number> {
  plugin.preScore?.(ctx, feasible);
  const scores = feasible.map((n) => plugin.score(ctx, n));
  plugin.normalize?.(ctx, scores);
  return Object.fromEntries(feasible.map((n, i) => [n.name, scores[i]!]));
}

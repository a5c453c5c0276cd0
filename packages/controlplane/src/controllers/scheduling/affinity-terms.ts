import { labelSelectorFromObject, matchLabels, type LabelSelector } from '../../apiserver/selectors.js';
import type { KubeObject } from '../../object.js';
import type { CycleContext, NodeInfo } from './framework.js';

/** A PodAffinityTerm, parsed against the pod that carries it (upstream's framework.AffinityTerm). */
export interface AffinityTerm {
  topologyKey: string;
  /** undefined: selects no pod (a term without labelSelector). */
  selector: LabelSelector | undefined;
  /** Namespaces listed, or the owner's own when neither these nor a namespaceSelector are given. */
  namespaces: Set<string>;
  /** undefined: none; [] (from `{}`): every namespace. */
  namespaceSelector: LabelSelector | undefined;
  weight: number;
}

/** A label selector object, or undefined when there is none (which selects nothing). */
export function parseSelector(selector: unknown): LabelSelector | undefined {
  if (!selector || typeof selector !== 'object') return undefined;
  return labelSelectorFromObject(selector as Parameters<typeof labelSelectorFromObject>[0]);
}

/**
 * `term` of `owner`: matchLabelKeys add `key in (owner's value)` and mismatchLabelKeys
 * `key notin (owner's value)` to the selector, as the API server merges them.
 */
export function affinityTerm(owner: KubeObject, term: any, weight = 0): AffinityTerm | undefined {
  if (!term || typeof term !== 'object' || typeof term.topologyKey !== 'string' || !term.topologyKey) return;
  let selector = parseSelector(term.labelSelector);
  const labels: Record<string, string> = owner.metadata.labels ?? {};
  if (selector) {
    const extra: LabelSelector = [];
    for (const key of Array.isArray(term.matchLabelKeys) ? term.matchLabelKeys : [])
      if (typeof key === 'string' && labels[key] !== undefined)
        extra.push({ key, op: 'in', values: [labels[key]] });
    for (const key of Array.isArray(term.mismatchLabelKeys) ? term.mismatchLabelKeys : [])
      if (typeof key === 'string' && labels[key] !== undefined)
        extra.push({ key, op: 'notin', values: [labels[key]] });
    selector = [...selector, ...extra];
  }
  const listed: string[] = Array.isArray(term.namespaces) ? term.namespaces : [];
  const namespaceSelector = parseSelector(term.namespaceSelector);
  const namespaces = new Set(listed);
  if (listed.length === 0 && !namespaceSelector) namespaces.add(owner.metadata.namespace ?? 'default');
  return { topologyKey: term.topologyKey, selector, namespaces, namespaceSelector, weight };
}

/** The required (weight 0) or preferred (weighted) terms of `kind` of `pod`. */
export function podTerms(
  pod: KubeObject,
  kind: 'podAffinity' | 'podAntiAffinity',
  which: 'required' | 'preferred',
): AffinityTerm[] {
  const a = pod.spec?.affinity?.[kind];
  const out: AffinityTerm[] = [];
  if (which === 'required') {
    const terms = a?.requiredDuringSchedulingIgnoredDuringExecution;
    for (const t of Array.isArray(terms) ? terms : []) {
      const term = affinityTerm(pod, t);
      if (term) out.push(term);
    }
  } else {
    const terms = a?.preferredDuringSchedulingIgnoredDuringExecution;
    for (const t of Array.isArray(terms) ? terms : []) {
      const weight = Number(t?.weight);
      const term = weight > 0 ? affinityTerm(pod, t?.podAffinityTerm, weight) : undefined;
      if (term) out.push(term);
    }
  }
  return out;
}

/** Whether `pod` is in one of the term's namespaces and has the labels it selects. */
export function termMatches(ctx: CycleContext, term: AffinityTerm, pod: KubeObject): boolean {
  if (!term.selector) return false;
  const ns = pod.metadata.namespace ?? 'default';
  if (!term.namespaces.has(ns)) {
    const nsLabels = term.namespaceSelector && ctx.namespaceLabels(ns);
    if (!nsLabels || !matchLabels(term.namespaceSelector!, nsLabels)) return false;
  }
  return matchLabels(term.selector, pod.metadata.labels);
}

export function hasPodAffinity(pod: KubeObject): boolean {
  const a = pod.spec?.affinity;
  return !!(a?.podAffinity || a?.podAntiAffinity);
}

/**
 * The pods of `info` that one of `terms` may match: those of the terms' namespaces, or every pod when
 * a term has a namespaceSelector. So a decision looks at the pods that can matter, not all of them.
 */
export function candidatePods(info: NodeInfo, terms: readonly AffinityTerm[]): readonly KubeObject[] {
  if (terms.some((t) => t.namespaceSelector)) return info.pods;
  const namespaces = [...new Set(terms.flatMap((t) => [...t.namespaces]))];
  if (namespaces.length === 1) return info.podsInNamespace(namespaces[0]!);
  return namespaces.flatMap((ns) => info.podsInNamespace(ns));
}

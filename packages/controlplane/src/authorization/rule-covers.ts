/**
 * Whether one set of rules grants everything another does, as upstream's Covers
 * (k8s.io/component-helpers/auth/rbac/validation): the other set is broken down into rules of one
 * group, resource, verb and name each, and every piece must be covered by a single rule of the first.
 * Escalation prevention and the start-up reconcile both ask this.
 */
import { apiGroupAll, compactString, resourceAll, verbAll, type PolicyRule } from './policy-rule.js';

/** The rule as rules of at most one verb, group, resource and resource name (or one URL and verb). */
export function breakdownRule(rule: PolicyRule): PolicyRule[] {
  const pieces: PolicyRule[] = [];
  for (const group of rule.apiGroups ?? []) {
    for (const resource of rule.resources ?? []) {
      for (const verb of rule.verbs) {
        const names = rule.resourceNames ?? [];
        if (names.length === 0) pieces.push({ apiGroups: [group], resources: [resource], verbs: [verb] });
        for (const name of names)
          pieces.push({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [name] });
      }
    }
  }
  for (const url of rule.nonResourceURLs ?? [])
    for (const verb of rule.verbs) pieces.push({ nonResourceURLs: [url], verbs: [verb] });
  return pieces;
}

const hasAll = (set: readonly string[], wanted: readonly string[]) => wanted.every((w) => set.includes(w));

function resourcesCover(owner: readonly string[], wanted: readonly string[]): boolean {
  if (owner.includes(resourceAll) || hasAll(owner, wanted)) return true;
  return wanted.every((path) => {
    if (owner.includes(path)) return true;
    const slash = path.indexOf('/');
    // `*/sub` covers that subresource of every resource.
    return slash >= 0 && owner.includes(`*/${path.slice(slash + 1)}`);
  });
}

export function nonResourceURLCovers(owner: string, path: string): boolean {
  if (owner === path) return true;
  return owner.endsWith('*') && path.startsWith(owner.replace(/\*+$/, ''));
}

function ruleCovers(owner: PolicyRule, piece: PolicyRule): boolean {
  const ownerNames = owner.resourceNames ?? [];
  const pieceNames = piece.resourceNames ?? [];
  return (
    (owner.verbs.includes(verbAll) || hasAll(owner.verbs, piece.verbs)) &&
    ((owner.apiGroups ?? []).includes(apiGroupAll) || hasAll(owner.apiGroups ?? [], piece.apiGroups ?? [])) &&
    resourcesCover(owner.resources ?? [], piece.resources ?? []) &&
    (piece.nonResourceURLs ?? []).every((p) =>
      (owner.nonResourceURLs ?? []).some((o) => nonResourceURLCovers(o, p)),
    ) &&
    // An owner limited to names covers only those names, never the whole resource.
    (pieceNames.length === 0
      ? ownerNames.length === 0
      : ownerNames.length === 0 || hasAll(ownerNames, pieceNames))
  );
}

/** [whether `owner` covers `servant`, the broken-down pieces of `servant` it does not cover]. */
export function covers(
  owner: readonly PolicyRule[],
  servant: readonly PolicyRule[],
): [boolean, PolicyRule[]] {
  const uncovered: PolicyRule[] = [];
  for (const rule of servant)
    for (const piece of breakdownRule(rule))
      if (!owner.some((o) => ruleCovers(o, piece))) uncovered.push(piece);
  return [uncovered.length === 0, uncovered];
}

/**
 * Upstream's CompactRules: rules of one group and one resource (and at most one name) that differ only
 * in verbs become one rule, so a refusal lists `Verbs:["get" "list"]` once rather than a rule per verb.
 */
export function compactRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const compacted: PolicyRule[] = [];
  const simple = new Map<string, PolicyRule>();
  for (const r of rules) {
    const names = r.resourceNames ?? [];
    const isSimple =
      names.length <= 1 &&
      (r.nonResourceURLs ?? []).length === 0 &&
      (r.apiGroups ?? []).length === 1 &&
      (r.resources ?? []).length === 1;
    if (!isSimple) {
      compacted.push(r);
      continue;
    }
    const key = JSON.stringify([r.apiGroups![0], r.resources![0], names.length > 0, names[0] ?? '']);
    const existing = simple.get(key);
    if (existing) existing.verbs = [...existing.verbs, ...r.verbs];
    else simple.set(key, { ...r, verbs: [...r.verbs] });
  }
  return [...compacted, ...simple.values()];
}

/** The missing rules as upstream's refusal lists them: compacted, one per line, sorted. */
export function describeMissingRules(missing: readonly PolicyRule[]): string {
  return [...new Set(compactRules(missing).map(compactString))].sort().join('\n');
}

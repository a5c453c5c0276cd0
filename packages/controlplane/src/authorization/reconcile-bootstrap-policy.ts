/**
 * The start-up reconcile of the bootstrap policy, as upstream's pkg/registry/rbac/reconciliation (run by
 * kube-apiserver's rbac/bootstrap-roles post-start hook): what is missing is created; an existing object
 * gains the rules, aggregation selectors, subjects, labels and annotations it lacks, and keeps whatever
 * an administrator added; an object annotated `rbac.authorization.kubernetes.io/autoupdate: "false"`
 * is left alone. A binding whose roleRef differs (roleRef cannot be updated) is recreated.
 */
import { canonicalJson } from '@nodelet/api';
import type { Registry } from '../apiserver/registry.js';
import type { KubeObject } from '../object.js';
import { autoUpdateAnnotation } from './bootstrap-policy-builders.js';
import { bootstrapPolicy, type BootstrapPolicy } from './bootstrap-policy.js';
import { rulesOf, type Subject } from './policy-rule.js';
import { rbacStorage } from './rbac-index.js';
import { covers } from './rule-covers.js';

export interface ReconcileSummary {
  created: string[];
  updated: string[];
  recreated: string[];
  /** Objects that differ from the policy but are annotated autoupdate "false". */
  protected: string[];
}

type Outcome = 'none' | 'update' | 'recreate';

/** Makes the registry hold the bootstrap policy; returns what it changed (`kind/namespace/name`). */
export function reconcileBootstrapPolicy(
  registry: Registry,
  policy: BootstrapPolicy = bootstrapPolicy(),
): ReconcileSummary {
  const summary: ReconcileSummary = { created: [], updated: [], recreated: [], protected: [] };
  const kinds: [string, KubeObject[], (existing: KubeObject, expected: KubeObject) => Outcome][] = [
    [rbacStorage.clusterRoles, policy.clusterRoles, reconcileRole],
    [rbacStorage.clusterRoleBindings, policy.clusterRoleBindings, reconcileBinding],
    [rbacStorage.roles, policy.roles, reconcileRole],
    [rbacStorage.roleBindings, policy.roleBindings, reconcileBinding],
  ];
  for (const [storage, objects, reconcile] of kinds) {
    const t = registry.byStorage(storage);
    for (const expected of objects) {
      const ns = expected.metadata.namespace ?? '';
      const name = expected.metadata.name!;
      const key = `${expected.kind}/${ns ? `${ns}/` : ''}${name}`;
      const current = registry.store.get(storage, ns, name)?.object;
      if (!current) {
        if (ns && !registry.store.get('namespaces', '', ns)) continue; // its namespace is not there (yet)
        registry.create(t, ns, structuredClone(expected));
        summary.created.push(key);
        continue;
      }
      const next = structuredClone(current);
      const outcome = reconcile(next, expected);
      if (outcome === 'none') continue;
      if (current.metadata.annotations?.[autoUpdateAnnotation] === 'false') {
        summary.protected.push(key);
        continue;
      }
      if (outcome === 'recreate') {
        registry.forceRemove(storage, ns, name);
        const fresh = structuredClone(next);
        delete fresh.metadata.resourceVersion;
        delete fresh.metadata.uid;
        delete fresh.metadata.creationTimestamp;
        registry.create(t, ns, fresh);
        summary.recreated.push(key);
      } else {
        registry.update(t, ns, name, next);
        summary.updated.push(key);
      }
    }
  }
  return summary;
}

/** Adds the policy's labels and annotations the object lacks (the object's own values win). */
function mergeMeta(obj: KubeObject, expected: KubeObject): boolean {
  let changed = false;
  for (const field of ['labels', 'annotations'] as const) {
    const want = expected.metadata[field] ?? {};
    const have = (obj.metadata[field] ?? {}) as Record<string, string>;
    for (const [k, v] of Object.entries(want as Record<string, string>)) {
      if (!Object.hasOwn(have, k)) {
        have[k] = v;
        changed = true;
      }
    }
    if (Object.keys(have).length > 0) obj.metadata[field] = have;
  }
  return changed;
}

/** Role or ClusterRole: missing rules (broken down, as upstream appends them) and selectors are added. */
function reconcileRole(obj: KubeObject, expected: KubeObject): Outcome {
  let changed = mergeMeta(obj, expected);
  const existingRules = rulesOf(obj);
  const [, missing] = covers(existingRules, rulesOf(expected));
  if (missing.length > 0) {
    obj.rules = [...existingRules, ...missing];
    changed = true;
  }
  const want = expected.aggregationRule?.clusterRoleSelectors as unknown[] | undefined;
  if (want && want.length > 0) {
    const have: unknown[] = obj.aggregationRule?.clusterRoleSelectors ?? [];
    const known = new Set(have.map((s) => canonicalJson(s)));
    const add = want.filter((s) => !known.has(canonicalJson(s)));
    if (add.length > 0) {
      obj.aggregationRule = { ...(obj.aggregationRule ?? {}), clusterRoleSelectors: [...have, ...add] };
      changed = true;
    }
  }
  return changed ? 'update' : 'none';
}

const subjectKey = (s: Subject) => `${s.apiGroup ?? ''}|${s.kind}|${s.namespace ?? ''}|${s.name}`;

/** Binding: missing subjects are added; a different roleRef means delete and create again. */
function reconcileBinding(obj: KubeObject, expected: KubeObject): Outcome {
  let changed = mergeMeta(obj, expected);
  const have: Subject[] = Array.isArray(obj.subjects) ? obj.subjects : [];
  const known = new Set(have.map(subjectKey));
  const add = ((expected.subjects ?? []) as Subject[]).filter((s) => !known.has(subjectKey(s)));
  if (add.length > 0) {
    obj.subjects = [...have, ...add];
    changed = true;
  }
  if (canonicalJson(obj.roleRef) !== canonicalJson(expected.roleRef)) {
    obj.roleRef = expected.roleRef;
    return 'recreate';
  }
  return changed ? 'update' : 'none';
}

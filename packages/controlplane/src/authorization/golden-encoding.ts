/**
 * The compact text form of rules and subjects in the bootstrap-policy golden data, shared by the script
 * that derives it from upstream's YAML (scripts/derive-rbac-golden.mjs) and the test that reads it.
 *
 * A rule is one string of space-separated fields, lists comma-separated, in the rule's own order:
 * `g=<apiGroups> r=<resources> n=<resourceNames> u=<nonResourceURLs> v=<verbs>` (the core group is the
 * empty string, so `g=` is [""] and `g=,events.k8s.io` is ["", "events.k8s.io"]). A subject is
 * `<Kind> <name>`, or `ServiceAccount <namespace>/<name>`.
 */
import type { PolicyRule, Subject } from './policy-rule.js';

export function encodeRule(rule: PolicyRule): string {
  const fields: string[] = [];
  const add = (key: string, list: readonly string[] | undefined) => {
    if (list && list.length > 0) fields.push(`${key}=${list.join(',')}`);
  };
  add('g', rule.apiGroups);
  add('r', rule.resources);
  add('n', rule.resourceNames);
  add('u', rule.nonResourceURLs);
  add('v', rule.verbs);
  return fields.join(' ');
}

export function encodeSubject(s: Subject): string {
  return s.kind === 'ServiceAccount' ? `${s.kind} ${s.namespace ?? ''}/${s.name}` : `${s.kind} ${s.name}`;
}

/** A metadata label map as sorted `key=value` strings, without the bootstrapping label all share. */
export function encodeLabels(labels: Record<string, string> | undefined): string[] {
  return Object.entries(labels ?? {})
    .filter(([k]) => k !== 'kubernetes.io/bootstrapping')
    .map(([k, v]) => `${k}=${v}`)
    .sort();
}

/** An aggregationRule's selectors, each as its `matchLabels` in `key=value,…` form. */
export function encodeSelectors(selectors: { matchLabels?: Record<string, string> }[]): string[] {
  return selectors.map((s) =>
    Object.entries(s.matchLabels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
  );
}

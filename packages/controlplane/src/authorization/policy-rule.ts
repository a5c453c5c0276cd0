/**
 * rbac.authorization.k8s.io/v1 policy data and how one rule matches one request, as upstream's
 * pkg/apis/rbac/v1/evaluation_helpers.go and plugin/pkg/auth/authorizer/rbac/rbac.go (RuleAllows).
 */
import type { RequestUser } from '../apiserver/resource-type.js';
import type { RequestAttributes } from './attributes.js';

export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface Subject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}

export interface RoleRef {
  apiGroup: string;
  kind: string;
  name: string;
}

export const verbAll = '*';
export const apiGroupAll = '*';
export const resourceAll = '*';
export const nonResourceAll = '*';
export const serviceAccountPrefix = 'system:serviceaccount:';

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return rule.verbs.some((v) => v === verbAll || v === verb);
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return (rule.apiGroups ?? []).some((g) => g === apiGroupAll || g === group);
}

/**
 * `combined` is `resource` or `resource/subresource`; a rule's `*` matches any resource and subresource,
 * and a star, a slash and a subresource ("*" + "/scale") match that subresource of any resource.
 */
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources ?? []) {
    if (r === resourceAll || r === combined) return true;
    if (subresource && r.length === subresource.length + 2 && r.startsWith('*/') && r.endsWith(subresource))
      return true;
  }
  return false;
}

/** No names means any name; with names, a request without one (create, list) does not match. */
export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(name);
}

/** Exact, or a prefix when the rule's URL ends with `*`. */
export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const url of rule.nonResourceURLs ?? []) {
    if (url === nonResourceAll || url === path) return true;
    if (url.endsWith('*') && path.startsWith(url.slice(0, -1))) return true;
  }
  return false;
}

type RuleRequest = Pick<
  RequestAttributes,
  'verb' | 'resourceRequest' | 'path' | 'apiGroup' | 'resource' | 'subresource' | 'name'
>;

export function ruleAllows(attrs: RuleRequest, rule: PolicyRule): boolean {
  if (!verbMatches(rule, attrs.verb)) return false;
  if (!attrs.resourceRequest) return nonResourceURLMatches(rule, attrs.path);
  const combined = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  return (
    apiGroupMatches(rule, attrs.apiGroup) &&
    resourceMatches(rule, combined, attrs.subresource) &&
    resourceNameMatches(rule, attrs.name)
  );
}

export function rulesAllow(attrs: RuleRequest, rules: readonly PolicyRule[]): boolean {
  return rules.some((rule) => ruleAllows(attrs, rule));
}

/** The user name of a service account (upstream's serviceaccount.MakeUsername). */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `${serviceAccountPrefix}${namespace}:${name}`;
}

/**
 * Whether a binding's subject is this user; a ServiceAccount subject without a namespace means the
 * binding's namespace (`bindingNamespace`, '' for a ClusterRoleBinding, where it then matches no one).
 */
export function subjectAppliesTo(user: RequestUser, subject: Subject, bindingNamespace: string): boolean {
  switch (subject.kind) {
    case 'User':
      return user.name === subject.name;
    case 'Group':
      return user.groups.includes(subject.name);
    case 'ServiceAccount': {
      const ns = subject.namespace || bindingNamespace;
      return ns !== '' && user.name === serviceAccountUsername(ns, subject.name);
    }
    default:
      return false;
  }
}

/** Upstream's describeSubject: `User "u"`, `ServiceAccount "name/namespace"`. */
export function describeSubject(subject: Subject, bindingNamespace: string): string {
  if (subject.kind === 'ServiceAccount')
    return `${subject.kind} ${goQuote(`${subject.name}/${subject.namespace || bindingNamespace}`)}`;
  return `${subject.kind} ${goQuote(subject.name)}`;
}

/** Go's %q of a string (the messages quote names as Go does). */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}

/** Go's %q of a []string: `["a" "b"]`. */
export function goQuoteList(list: readonly string[]): string {
  return `[${list.map(goQuote).join(' ')}]`;
}

/** Upstream's PolicyRule.CompactString: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`. */
export function compactString(rule: PolicyRule): string {
  const parts: string[] = [];
  const add = (label: string, list: readonly string[] | undefined) => {
    if (list && list.length > 0) parts.push(`${label}:${goQuoteList(list)}`);
  };
  add('APIGroups', rule.apiGroups);
  add('Resources', rule.resources);
  add('NonResourceURLs', rule.nonResourceURLs);
  add('ResourceNames', rule.resourceNames);
  add('Verbs', rule.verbs);
  return `{${parts.join(', ')}}`;
}

/** The rules of a stored Role or ClusterRole (absent or `null` rules are none). */
export function rulesOf(role: Record<string, any> | undefined): PolicyRule[] {
  return Array.isArray(role?.rules) ? (role.rules as PolicyRule[]) : [];
}

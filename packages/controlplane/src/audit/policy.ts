import type { RequestAttributes } from '../authorization/attributes.js';
import { list, mapping, parseConfigDocument, readConfigFile, type Fail } from '../config-document.js';

/**
 * An `audit.k8s.io/v1` Policy (kube-apiserver's --audit-policy-file) and its evaluation, as upstream's
 * staging/src/k8s.io/apiserver/pkg/audit/policy: the first rule that matches a request decides its
 * level; a request no rule matches is not logged (level None).
 */
export type AuditLevel = 'None' | 'Metadata' | 'Request' | 'RequestResponse';
export type AuditStage = 'RequestReceived' | 'ResponseStarted' | 'ResponseComplete' | 'Panic';

export const auditLevels: readonly AuditLevel[] = ['None', 'Metadata', 'Request', 'RequestResponse'];
export const auditStages: readonly AuditStage[] = [
  'RequestReceived',
  'ResponseStarted',
  'ResponseComplete',
  'Panic',
];

export interface GroupResources {
  /** '' is the core group. */
  group?: string;
  /** `pods`, `pods/log`, `pods/*`, `*`, or a star before a subresource (any resource's status); empty: all. */
  resources?: string[];
  resourceNames?: string[];
}

export interface PolicyRule {
  level: AuditLevel;
  users?: string[];
  userGroups?: string[];
  verbs?: string[];
  resources?: GroupResources[];
  /** '' matches cluster-scoped resources. */
  namespaces?: string[];
  /** `/healthz`, or a prefix with a trailing `*` (`/healthz*`, `*`). */
  nonResourceURLs?: string[];
  omitStages?: AuditStage[];
  omitManagedFields?: boolean;
}

export interface AuditPolicy {
  rules: PolicyRule[];
  omitStages?: AuditStage[];
  omitManagedFields?: boolean;
}

/** What the policy decides for one request. */
export interface RequestAuditConfig {
  level: AuditLevel;
  omitStages: AuditStage[];
  omitManagedFields: boolean;
}

export function evaluatePolicy(policy: AuditPolicy, attrs: RequestAttributes): RequestAuditConfig {
  for (const rule of policy.rules) {
    if (!ruleMatches(rule, attrs)) continue;
    return {
      level: rule.level,
      omitStages: [...new Set([...(policy.omitStages ?? []), ...(rule.omitStages ?? [])])],
      omitManagedFields: rule.omitManagedFields ?? policy.omitManagedFields ?? false,
    };
  }
  return { level: 'None', omitStages: [], omitManagedFields: false };
}

function ruleMatches(rule: PolicyRule, attrs: RequestAttributes): boolean {
  if (rule.users?.length && !rule.users.includes(attrs.user.name)) return false;
  if (rule.userGroups?.length && !attrs.user.groups.some((g) => rule.userGroups!.includes(g))) return false;
  if (rule.verbs?.length && !rule.verbs.includes(attrs.verb)) return false;
  if (rule.namespaces?.length || rule.resources?.length) return resourceMatches(rule, attrs);
  if (rule.nonResourceURLs?.length) {
    return !attrs.resourceRequest && rule.nonResourceURLs.some((spec) => pathMatches(attrs.path, spec));
  }
  return true;
}

function pathMatches(path: string, spec: string): boolean {
  if (spec === '*' || spec === path) return true;
  return spec.endsWith('*') && path.startsWith(spec.slice(0, -1));
}

function resourceMatches(rule: PolicyRule, attrs: RequestAttributes): boolean {
  if (!attrs.resourceRequest) return false;
  if (rule.namespaces?.length && !rule.namespaces.includes(attrs.namespace)) return false;
  if (!rule.resources?.length) return true;
  const { resource, subresource, name } = attrs;
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return rule.resources.some((gr) => {
    if ((gr.group ?? '') !== attrs.apiGroup) return false;
    if (!gr.resources?.length) return true;
    if (gr.resourceNames?.length && !gr.resourceNames.includes(name)) return false;
    return gr.resources.some(
      (res) =>
        res === '*' ||
        res === combined ||
        (subresource !== '' && res === `*/${subresource}`) ||
        (res.endsWith('/*') && res.slice(0, -2) === resource),
    );
  });
}

export async function loadPolicy(path: string): Promise<AuditPolicy> {
  return parsePolicy(await readConfigFile(path, 'audit policy'), path);
}

/** Checks a Policy document whole; errors name the file and the field. */
export function parsePolicy(text: string, path = 'audit policy'): AuditPolicy {
  const { root, fail } = parseConfigDocument(text, path, { apiVersion: 'audit.k8s.io/v1', kind: 'Policy' });
  const rules = list(root.rules, 'rules', fail);
  if (rules.length === 0) fail('rules', 'at least one rule is required');
  return {
    rules: rules.map((raw, i) => parseRule(raw, `rules[${i}]`, fail)),
    ...optional('omitStages', stages(root.omitStages, 'omitStages', fail)),
    ...optional('omitManagedFields', bool(root.omitManagedFields, 'omitManagedFields', fail)),
  };
}

function parseRule(raw: unknown, at: string, fail: Fail): PolicyRule {
  const r = mapping(raw, at, fail);
  const level = r.level as AuditLevel;
  if (!auditLevels.includes(level))
    fail(`${at}.level`, `must be one of ${auditLevels.join(', ')}, got ${JSON.stringify(r.level)}`);
  const nonResourceURLs = strings(r.nonResourceURLs, `${at}.nonResourceURLs`, fail);
  const resources = r.resources === undefined ? undefined : list(r.resources, `${at}.resources`, fail);
  const namespaces = strings(r.namespaces, `${at}.namespaces`, fail);
  if (nonResourceURLs?.length && (resources?.length || namespaces?.length))
    fail(at, 'a rule may not name both nonResourceURLs and resources or namespaces');
  for (const [j, url] of (nonResourceURLs ?? []).entries()) {
    if (!url.startsWith('/') && url !== '*')
      fail(`${at}.nonResourceURLs[${j}]`, `must start with / or be *, got ${JSON.stringify(url)}`);
    if (url.slice(0, -1).includes('*')) fail(`${at}.nonResourceURLs[${j}]`, 'may have * only at its end');
  }
  return {
    level,
    ...optional('users', strings(r.users, `${at}.users`, fail)),
    ...optional('userGroups', strings(r.userGroups, `${at}.userGroups`, fail)),
    ...optional('verbs', strings(r.verbs, `${at}.verbs`, fail)),
    ...optional(
      'resources',
      resources?.map((g, j) => {
        const field = `${at}.resources[${j}]`;
        const gr = mapping(g, field, fail);
        if (gr.group !== undefined && typeof gr.group !== 'string')
          fail(`${field}.group`, 'must be a string');
        return {
          ...optional('group', gr.group as string | undefined),
          ...optional('resources', strings(gr.resources, `${field}.resources`, fail)),
          ...optional('resourceNames', strings(gr.resourceNames, `${field}.resourceNames`, fail)),
        };
      }),
    ),
    ...optional('namespaces', namespaces),
    ...optional('nonResourceURLs', nonResourceURLs),
    ...optional('omitStages', stages(r.omitStages, `${at}.omitStages`, fail)),
    ...optional('omitManagedFields', bool(r.omitManagedFields, `${at}.omitManagedFields`, fail)),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function strings(value: unknown, field: string, fail: Fail): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  return list(value, field, fail).map((v, i) =>
    typeof v === 'string' ? v : fail(`${field}[${i}]`, `must be a string, got ${JSON.stringify(v)}`),
  );
}

function stages(value: unknown, field: string, fail: Fail): AuditStage[] | undefined {
  return strings(value, field, fail)?.map((s, i) =>
    auditStages.includes(s as AuditStage)
      ? (s as AuditStage)
      : fail(`${field}[${i}]`, `must be one of ${auditStages.join(', ')}, got ${JSON.stringify(s)}`),
  );
}

function bool(value: unknown, field: string, fail: Fail): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  return typeof value === 'boolean'
    ? value
    : fail(field, `must be true or false, got ${JSON.stringify(value)}`);
}

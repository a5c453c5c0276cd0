/**
 * Small builders for the bootstrap policy, like upstream's rbacv1helpers: rules read as
 * `rule('get', 'list').groups('').resources('pods')`, and every object carries the label and
 * annotation the start-up reconcile looks at.
 */
import type { KubeObject } from '../object.js';
import { rbacGroup } from '../resources/rbac.js';
import type { PolicyRule, Subject } from './policy-rule.js';

export const bootstrappingLabel = 'kubernetes.io/bootstrapping';
export const bootstrappingValue = 'rbac-defaults';
export const autoUpdateAnnotation = 'rbac.authorization.kubernetes.io/autoupdate';

export const legacyGroup = '';

/** The API groups the policy names, by short name (`core` is the legacy group, ''). */
export const apiGroup = {
  core: legacyGroup,
  apps: 'apps',
  extensions: 'extensions',
  autoscaling: 'autoscaling',
  batch: 'batch',
  policy: 'policy',
  networking: 'networking.k8s.io',
  coordination: 'coordination.k8s.io',
  storage: 'storage.k8s.io',
  certificates: 'certificates.k8s.io',
  authentication: 'authentication.k8s.io',
  authorization: 'authorization.k8s.io',
  rbac: 'rbac.authorization.k8s.io',
  resource: 'resource.k8s.io',
} as const;
export const read = ['get', 'list', 'watch'] as const;
export const write = ['create', 'update', 'patch', 'delete', 'deletecollection'] as const;
export const readWrite = [...read, ...write] as const;
export const eventsGroups = [legacyGroup, 'events.k8s.io'] as const;

const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

/** A rule under construction; lists are kept sorted and without repeats, as upstream's sets. */
export class RuleBuilder {
  private readonly rule: PolicyRule;

  constructor(verbs: readonly string[]) {
    this.rule = { verbs: sorted(verbs) };
  }

  groups(...groups: string[]): this {
    this.rule.apiGroups = sorted([...(this.rule.apiGroups ?? []), ...groups]);
    return this;
  }

  resources(...resources: string[]): this {
    this.rule.resources = sorted([...(this.rule.resources ?? []), ...resources]);
    return this;
  }

  names(...names: string[]): this {
    this.rule.resourceNames = sorted([...(this.rule.resourceNames ?? []), ...names]);
    return this;
  }

  urls(...urls: string[]): this {
    this.rule.nonResourceURLs = sorted([...(this.rule.nonResourceURLs ?? []), ...urls]);
    return this;
  }

  build(): PolicyRule {
    const { verbs, apiGroups, resources, resourceNames, nonResourceURLs } = this.rule;
    return {
      ...(apiGroups ? { apiGroups } : {}),
      ...(resources ? { resources } : {}),
      ...(resourceNames ? { resourceNames } : {}),
      ...(nonResourceURLs ? { nonResourceURLs } : {}),
      verbs,
    };
  }
}

export function rule(...verbs: readonly string[]): RuleBuilder {
  return new RuleBuilder(verbs);
}

/** The rule every controller has: record events. */
export function eventsRule(): RuleBuilder {
  return rule('create', 'update', 'patch')
    .groups(...eventsGroups)
    .resources('events');
}

function bootstrapMeta(name: string, namespace?: string, labels: Record<string, string> = {}) {
  return {
    name,
    ...(namespace ? { namespace } : {}),
    labels: { [bootstrappingLabel]: bootstrappingValue, ...labels },
    annotations: { [autoUpdateAnnotation]: 'true' },
  };
}

export interface RoleOptions {
  labels?: Record<string, string>;
  /** Label selectors whose ClusterRoles' rules this role aggregates. */
  aggregateFrom?: Record<string, string>[];
}

export function clusterRole(name: string, rules: RuleBuilder[], options: RoleOptions = {}): KubeObject {
  return {
    apiVersion: `${rbacGroup}/v1`,
    kind: 'ClusterRole',
    metadata: bootstrapMeta(name, undefined, options.labels),
    ...(options.aggregateFrom
      ? { aggregationRule: { clusterRoleSelectors: options.aggregateFrom.map((m) => ({ matchLabels: m })) } }
      : {}),
    rules: rules.map((r) => r.build()),
  };
}

export function namespacedRole(namespace: string, name: string, rules: RuleBuilder[]): KubeObject {
  return {
    apiVersion: `${rbacGroup}/v1`,
    kind: 'Role',
    metadata: bootstrapMeta(name, namespace),
    rules: rules.map((r) => r.build()),
  };
}

/** A binding under construction: subjects are added in order. */
export class BindingBuilder {
  private readonly subjects: Subject[] = [];

  constructor(
    private readonly kind: 'ClusterRoleBinding' | 'RoleBinding',
    private readonly name: string,
    private readonly roleRef: { kind: 'ClusterRole' | 'Role'; name: string },
    private readonly namespace?: string,
  ) {}

  users(...names: string[]): this {
    for (const name of names) this.subjects.push({ apiGroup: rbacGroup, kind: 'User', name });
    return this;
  }

  groups(...names: string[]): this {
    for (const name of names) this.subjects.push({ apiGroup: rbacGroup, kind: 'Group', name });
    return this;
  }

  serviceAccounts(namespace: string, ...names: string[]): this {
    for (const name of names) this.subjects.push({ kind: 'ServiceAccount', name, namespace });
    return this;
  }

  build(): KubeObject {
    return {
      apiVersion: `${rbacGroup}/v1`,
      kind: this.kind,
      metadata: bootstrapMeta(this.name, this.namespace),
      roleRef: { apiGroup: rbacGroup, ...this.roleRef },
      // Upstream leaves `subjects` out of a binding without any (system:node's).
      ...(this.subjects.length > 0 ? { subjects: this.subjects } : {}),
    };
  }
}

/** A ClusterRoleBinding named as its ClusterRole. */
export function clusterBinding(roleName: string, bindingName = roleName): BindingBuilder {
  return new BindingBuilder('ClusterRoleBinding', bindingName, { kind: 'ClusterRole', name: roleName });
}

/** A RoleBinding in `namespace` of the Role `roleName` there. */
export function namespacedBinding(
  namespace: string,
  roleName: string,
  bindingName = roleName,
): BindingBuilder {
  return new BindingBuilder('RoleBinding', bindingName, { kind: 'Role', name: roleName }, namespace);
}

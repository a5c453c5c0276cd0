/**
 * The RBAC objects in memory, kept current from the store's write notifications, and upstream's
 * DefaultRuleResolver over them (pkg/registry/rbac/validation/rule.go): which rules apply to a user in
 * a namespace, through which binding. Authorization runs on every request, so bindings are indexed by
 * subject: a request looks at the bindings naming its user, its groups or its service account, not at
 * every binding.
 */
import type { RequestUser } from '../apiserver/resource-type.js';
import type { KubeObject } from '../object.js';
import type { RevisionStore, StoreEvent } from '../storage/revision-store.js';
import {
  describeSubject,
  goQuote,
  rulesOf,
  serviceAccountPrefix,
  subjectAppliesTo,
  type PolicyRule,
  type RoleRef,
  type Subject,
} from './policy-rule.js';

export const rbacStorage = {
  roles: 'roles',
  clusterRoles: 'clusterroles',
  roleBindings: 'rolebindings',
  clusterRoleBindings: 'clusterrolebindings',
} as const;

interface Binding {
  name: string;
  /** '' for a ClusterRoleBinding. */
  namespace: string;
  roleRef: RoleRef;
  subjects: Subject[];
}

/** Where a rule came from, for the allow reason (upstream's binding describers). */
export type RuleSource = () => string;

/** Called with each rule that applies (and its source) or each error met; returning false stops the visit. */
export type RuleVisitor = (
  source: RuleSource | undefined,
  rule: PolicyRule | undefined,
  err?: Error,
) => boolean;

/** Resolves RoleBindings and ClusterRoleBindings to rules (the interface escalation checks need too). */
export interface RuleResolver {
  visitRulesFor(user: RequestUser, namespace: string, visitor: RuleVisitor): void;
  /** The rules a binding's roleRef grants in `bindingNamespace` ('' for a ClusterRoleBinding). */
  roleReferenceRules(roleRef: RoleRef, bindingNamespace: string): PolicyRule[];
}

/** The rules and resolution errors for a user in a namespace (upstream's RulesFor). */
export function rulesFor(
  resolver: RuleResolver,
  user: RequestUser,
  namespace: string,
): { rules: PolicyRule[]; errors: Error[] } {
  const rules: PolicyRule[] = [];
  const errors: Error[] = [];
  resolver.visitRulesFor(user, namespace, (_source, rule, err) => {
    if (rule) rules.push(rule);
    if (err) errors.push(err);
    return true;
  });
  return { rules, errors };
}

/** Go's utilerrors.NewAggregate(...).Error(): one message as is, several as `[a, b]`. */
export function aggregateMessage(errors: readonly Error[]): string {
  if (errors.length === 1) return errors[0]!.message;
  return `[${errors.map((e) => e.message).join(', ')}]`;
}

function notFound(kind: 'role' | 'clusterrole', name: string): Error {
  return new Error(`${kind}.rbac.authorization.k8s.io ${goQuote(name)} not found`);
}

/** The index keys a subject is found under; the user's own keys are the same strings. */
function subjectKey(subject: Subject, bindingNamespace: string): string | undefined {
  switch (subject.kind) {
    case 'User':
      return `u:${subject.name}`;
    case 'Group':
      return `g:${subject.name}`;
    case 'ServiceAccount': {
      const ns = subject.namespace || bindingNamespace;
      return ns ? `u:${serviceAccountPrefix}${ns}:${subject.name}` : undefined;
    }
    default:
      return undefined;
  }
}

function userKeys(user: RequestUser): string[] {
  return [`u:${user.name}`, ...user.groups.map((g) => `g:${g}`)];
}

/** Bindings of one scope (cluster-wide, or one namespace) indexed by subject key. */
class BindingSet {
  readonly byName = new Map<string, Binding>();
  private readonly bySubject = new Map<string, Set<Binding>>();

  put(b: Binding): void {
    this.remove(b.name);
    this.byName.set(b.name, b);
    for (const s of b.subjects) {
      const key = subjectKey(s, b.namespace);
      if (!key) continue;
      let set = this.bySubject.get(key);
      if (!set) this.bySubject.set(key, (set = new Set()));
      set.add(b);
    }
  }

  remove(name: string): void {
    const old = this.byName.get(name);
    if (!old) return;
    this.byName.delete(name);
    for (const s of old.subjects) {
      const key = subjectKey(s, old.namespace);
      const set = key ? this.bySubject.get(key) : undefined;
      set?.delete(old);
      if (key && set?.size === 0) this.bySubject.delete(key);
    }
  }

  /** The bindings naming the user, in name order (so the reason of an allow does not depend on history). */
  forUser(user: RequestUser): Binding[] {
    const found = new Set<Binding>();
    for (const key of userKeys(user)) for (const b of this.bySubject.get(key) ?? []) found.add(b);
    return [...found].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get size(): number {
    return this.byName.size;
  }
}

function toBinding(obj: KubeObject): Binding {
  return {
    name: obj.metadata.name!,
    namespace: obj.metadata.namespace ?? '',
    roleRef: (obj.roleRef ?? { apiGroup: '', kind: '', name: '' }) as RoleRef,
    subjects: Array.isArray(obj.subjects) ? (obj.subjects as Subject[]) : [],
  };
}

/** Role and binding objects by namespace and name, from plain objects (tests) or kept from a store. */
export class RbacIndex implements RuleResolver {
  private readonly clusterRoles = new Map<string, PolicyRule[]>();
  private readonly roles = new Map<string, Map<string, PolicyRule[]>>();
  private readonly clusterBindings = new BindingSet();
  private readonly roleBindings = new Map<string, BindingSet>();
  private readonly unsubscribers: (() => void)[] = [];

  /** An index of what `store` holds now, following its later writes until `close`. */
  static fromStore(store: RevisionStore): RbacIndex {
    const index = new RbacIndex();
    for (const resource of Object.values(rbacStorage)) {
      // Subscribe before listing: the store is synchronous, so nothing is written in between.
      index.unsubscribers.push(store.subscribe(resource, (e) => index.onEvent(e)));
      for (const { object } of store.listAll(resource)) index.put(resource, object);
    }
    return index;
  }

  /** An index of fixed objects (Role, ClusterRole, RoleBinding, ClusterRoleBinding, by `kind`). */
  static of(objects: readonly KubeObject[]): RbacIndex {
    const index = new RbacIndex();
    const storageOf: Record<string, string> = {
      Role: rbacStorage.roles,
      ClusterRole: rbacStorage.clusterRoles,
      RoleBinding: rbacStorage.roleBindings,
      ClusterRoleBinding: rbacStorage.clusterRoleBindings,
    };
    for (const o of objects) {
      const resource = storageOf[o.kind ?? ''];
      if (resource) index.put(resource, o);
    }
    return index;
  }

  close(): void {
    for (const u of this.unsubscribers.splice(0)) u();
  }

  private onEvent(e: StoreEvent): void {
    if (e.op === 'delete') this.remove(e.resource, e.namespace, e.name);
    else this.put(e.resource, e.object);
  }

  put(resource: string, obj: KubeObject): void {
    const ns = obj.metadata.namespace ?? '';
    const name = obj.metadata.name!;
    switch (resource) {
      case rbacStorage.clusterRoles:
        this.clusterRoles.set(name, rulesOf(obj));
        break;
      case rbacStorage.roles: {
        let m = this.roles.get(ns);
        if (!m) this.roles.set(ns, (m = new Map()));
        m.set(name, rulesOf(obj));
        break;
      }
      case rbacStorage.clusterRoleBindings:
        this.clusterBindings.put(toBinding(obj));
        break;
      case rbacStorage.roleBindings: {
        let set = this.roleBindings.get(ns);
        if (!set) this.roleBindings.set(ns, (set = new BindingSet()));
        set.put(toBinding(obj));
        break;
      }
    }
  }

  remove(resource: string, namespace: string, name: string): void {
    switch (resource) {
      case rbacStorage.clusterRoles:
        this.clusterRoles.delete(name);
        break;
      case rbacStorage.roles:
        this.roles.get(namespace)?.delete(name);
        if (this.roles.get(namespace)?.size === 0) this.roles.delete(namespace);
        break;
      case rbacStorage.clusterRoleBindings:
        this.clusterBindings.remove(name);
        break;
      case rbacStorage.roleBindings: {
        const set = this.roleBindings.get(namespace);
        set?.remove(name);
        if (set?.size === 0) this.roleBindings.delete(namespace);
        break;
      }
    }
  }

  roleReferenceRules(roleRef: RoleRef, bindingNamespace: string): PolicyRule[] {
    switch (roleRef.kind) {
      case 'Role': {
        const rules = this.roles.get(bindingNamespace)?.get(roleRef.name);
        if (!rules) throw notFound('role', roleRef.name);
        return rules;
      }
      case 'ClusterRole': {
        const rules = this.clusterRoles.get(roleRef.name);
        if (!rules) throw notFound('clusterrole', roleRef.name);
        return rules;
      }
      default:
        throw new Error(`unsupported role reference kind: ${goQuote(roleRef.kind)}`);
    }
  }

  /** Cluster-wide bindings first, then those of `namespace` (upstream's VisitRulesFor). */
  visitRulesFor(user: RequestUser, namespace: string, visitor: RuleVisitor): void {
    const scopes: BindingSet[] = [this.clusterBindings];
    const local = namespace ? this.roleBindings.get(namespace) : undefined;
    if (local) scopes.push(local);
    for (const scope of scopes) {
      for (const binding of scope.forUser(user)) {
        const subject = binding.subjects.find((s) => subjectAppliesTo(user, s, binding.namespace));
        if (!subject) continue;
        let rules: PolicyRule[];
        try {
          rules = this.roleReferenceRules(binding.roleRef, binding.namespace);
        } catch (err) {
          if (!visitor(undefined, undefined, err as Error)) return;
          continue;
        }
        const source = () => describeBinding(binding, subject);
        for (const rule of rules) if (!visitor(source, rule)) return;
      }
    }
  }
}

function describeBinding(b: Binding, subject: Subject): string {
  const role = `${b.roleRef.kind} ${goQuote(b.roleRef.name)}`;
  return b.namespace
    ? `RoleBinding ${goQuote(`${b.name}/${b.namespace}`)} of ${role} to ${describeSubject(subject, b.namespace)}`
    : `ClusterRoleBinding ${goQuote(b.name)} of ${role} to ${describeSubject(subject, '')}`;
}

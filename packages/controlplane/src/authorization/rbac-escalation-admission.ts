/**
 * RBAC's escalation prevention (upstream's pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/
 * policybased storage and validation.ConfirmNoEscalation), as an admission plugin on creates and updates:
 *
 * - a Role or ClusterRole may only hold rules its author holds (in the role's namespace), unless the
 *   author may `escalate` it; an aggregationRule needs full authority, as it can gather anything;
 * - a RoleBinding or ClusterRoleBinding may only grant a role whose every rule its author holds, unless
 *   the author may `bind` that role.
 *
 * `system:masters` passes, and so do writes without a user (the control plane's own).
 */
import { canonicalJson } from '@nodelet/api';
import type { AdmissionPlugin, AdmissionRequest } from '../admission/admission.js';
import { groupResource, type RequestUser, type ResourceType } from '../apiserver/resource-type.js';
import { forbidden } from '../apiserver/status.js';
import type { KubeObject } from '../object.js';
import { rbacGroup } from '../resources/rbac.js';
import type { Authorizer } from './attributes.js';
import { goQuoteList, rulesOf, type PolicyRule, type RoleRef } from './policy-rule.js';
import { systemMasters } from './privileged-groups.js';
import { rbacStorage, rulesFor, type RuleResolver } from './rbac-index.js';
import { covers, describeMissingRules } from './rule-covers.js';

const fullAuthority: PolicyRule[] = [
  { verbs: ['*'], apiGroups: ['*'], resources: ['*'] },
  { verbs: ['*'], nonResourceURLs: ['*'] },
];

export class RbacEscalationAdmission implements AdmissionPlugin {
  readonly name = 'RBACEscalation';

  /**
   * `resolver` gives the author's rules; `authorizer` answers the `escalate` and `bind` checks (the
   * server's whole chain upstream; the RBAC authorizer alone does).
   */
  constructor(
    private readonly resolver: RuleResolver,
    private readonly authorizer: Authorizer,
  ) {}

  admitCreate(t: ResourceType, obj: KubeObject, _ctx: unknown, request: AdmissionRequest): void {
    this.check(t, obj, undefined, request);
  }

  admitUpdate(
    t: ResourceType,
    obj: KubeObject,
    old: KubeObject,
    _ctx: unknown,
    request: AdmissionRequest,
  ): void {
    // Finalizers and owner references alone: the garbage collector's writes.
    if (onlyGcFieldsDiffer(obj, old)) return;
    this.check(t, obj, old, request);
  }

  private check(
    t: ResourceType,
    obj: KubeObject,
    old: KubeObject | undefined,
    request: AdmissionRequest,
  ): void {
    const user = request.user;
    if (t.group !== rbacGroup || !user || user.groups.includes(systemMasters)) return;
    const namespace = t.namespaced ? (obj.metadata.namespace ?? '') : '';
    const name = obj.metadata.name || request.name;
    const refuse = (why: string) => forbidden(groupResource(t), name, why);
    switch (t.storage) {
      case rbacStorage.roles:
      case rbacStorage.clusterRoles: {
        if (this.allowed(user, 'escalate', t.storage, namespace, name)) return;
        const problem = this.escalation(user, namespace, rulesOf(obj));
        if (problem) throw refuse(problem);
        const aggregates = (o: KubeObject | undefined) =>
          (o?.aggregationRule?.clusterRoleSelectors ?? []).length > 0;
        if (t.storage === rbacStorage.clusterRoles && (aggregates(obj) || aggregates(old))) {
          if (this.escalation(user, namespace, fullAuthority))
            throw refuse('must have cluster-admin privileges to use the aggregationRule');
        }
        return;
      }
      case rbacStorage.roleBindings:
      case rbacStorage.clusterRoleBindings: {
        const roleRef = (obj.roleRef ?? {}) as RoleRef;
        const resource =
          roleRef.kind === 'Role'
            ? rbacStorage.roles
            : roleRef.kind === 'ClusterRole'
              ? rbacStorage.clusterRoles
              : '';
        if (resource && this.allowed(user, 'bind', resource, namespace, roleRef.name, roleRef.apiGroup))
          return;
        let rules: PolicyRule[];
        try {
          rules = this.resolver.roleReferenceRules(roleRef, namespace);
        } catch (err) {
          throw refuse((err as Error).message);
        }
        const problem = this.escalation(user, namespace, rules);
        if (problem) throw refuse(problem);
        return;
      }
    }
  }

  /** Upstream's RoleEscalationAuthorized / BindingAuthorized: one authorizer question. */
  private allowed(
    user: RequestUser,
    verb: 'escalate' | 'bind',
    resource: string,
    namespace: string,
    name: string,
    apiGroup = rbacGroup,
  ): boolean {
    const decision = this.authorizer.authorize({
      user,
      verb,
      resourceRequest: true,
      path: '',
      apiGroup,
      apiVersion: '*',
      resource,
      subresource: '',
      namespace,
      name,
    }).decision;
    return decision === 'allow';
  }

  /** Upstream's ConfirmNoEscalation: why the user may not grant `rules` in `namespace`, or undefined. */
  private escalation(user: RequestUser, namespace: string, rules: readonly PolicyRule[]): string | undefined {
    const owned = rulesFor(this.resolver, user, namespace);
    const [ok, missing] = covers(owned.rules, rules);
    if (ok) return undefined;
    let msg =
      `user ${JSON.stringify(user.name)} (groups=${goQuoteList(user.groups)}) is attempting to grant RBAC ` +
      `permissions not currently held:\n${describeMissingRules(missing)}`;
    if (owned.errors.length > 0)
      msg += `; resolution errors: [${owned.errors.map((e) => e.message).join(' ')}]`;
    return msg;
  }
}

/** Upstream's IsOnlyMutatingGCFields: the update changes nothing but finalizers and owner references. */
function onlyGcFieldsDiffer(obj: KubeObject, old: KubeObject): boolean {
  const copy = structuredClone(old);
  const meta = copy.metadata as Record<string, unknown>;
  for (const field of ['finalizers', 'ownerReferences'] as const) {
    if (obj.metadata[field] === undefined) delete meta[field];
    else meta[field] = obj.metadata[field];
  }
  return canonicalJson(copy) === canonicalJson(obj);
}

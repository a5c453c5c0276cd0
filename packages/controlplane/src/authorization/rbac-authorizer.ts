/**
 * The RBAC authorizer (upstream's plugin/pkg/auth/authorizer/rbac): a request is allowed when a rule of
 * a role bound to its user, one of its groups or its service account — cluster-wide, or in the
 * request's namespace — matches it. RBAC only grants: otherwise it has no opinion and the next link of
 * the chain decides.
 */
import type { RequestUser } from '../apiserver/resource-type.js';
import type { RevisionStore } from '../storage/revision-store.js';
import type { AuthorizationResult, Authorizer, RequestAttributes } from './attributes.js';
import { ruleAllows, type PolicyRule } from './policy-rule.js';
import { aggregateMessage, RbacIndex, rulesFor, type RuleResolver } from './rbac-index.js';

/** A resource rule of SelfSubjectRulesReview (`status.resourceRules`). */
export interface ResourceRuleInfo {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
}

/** A non-resource rule of SelfSubjectRulesReview (`status.nonResourceRules`). */
export interface NonResourceRuleInfo {
  verbs: string[];
  nonResourceURLs: string[];
}

/** What a user may do in a namespace, for SelfSubjectRulesReview and `kubectl auth can-i --list`. */
export interface UserRules {
  resourceRules: ResourceRuleInfo[];
  nonResourceRules: NonResourceRuleInfo[];
  /** Some bindings could not be resolved (a role they name is missing): the lists may lack rules. */
  incomplete: boolean;
  /** Why the lists may be incomplete ('' when they are not). */
  evaluationError: string;
}

export class RbacAuthorizer implements Authorizer {
  readonly name = 'RBAC';

  constructor(readonly resolver: RuleResolver) {}

  /** An authorizer over the store's RBAC objects, following its writes (call `close` to stop). */
  static fromStore(store: RevisionStore): RbacAuthorizer {
    return new RbacAuthorizer(RbacIndex.fromStore(store));
  }

  close(): void {
    if (this.resolver instanceof RbacIndex) this.resolver.close();
  }

  authorize(attrs: RequestAttributes): AuthorizationResult {
    let reason = '';
    const errors: Error[] = [];
    this.resolver.visitRulesFor(attrs.user, attrs.namespace, (source, rule, err) => {
      if (rule && source && ruleAllows(attrs, rule)) {
        reason = `RBAC: allowed by ${source()}`;
        return false;
      }
      if (err) errors.push(err);
      return true;
    });
    if (reason) return { decision: 'allow', reason };
    return { decision: 'no-opinion', reason: errors.length > 0 ? `RBAC: ${aggregateMessage(errors)}` : '' };
  }

  /** Upstream's RBACAuthorizer.RulesFor: every rule granted to `user` in `namespace` ('' = cluster-wide). */
  rulesFor(user: RequestUser, namespace: string): UserRules {
    const { rules, errors } = rulesFor(this.resolver, user, namespace);
    return {
      ...splitRules(rules),
      incomplete: errors.length > 0,
      evaluationError: errors.length > 0 ? aggregateMessage(errors) : '',
    };
  }
}

/** A rule naming both resources and non-resource URLs appears in both lists, as upstream. */
export function splitRules(
  rules: readonly PolicyRule[],
): Pick<UserRules, 'resourceRules' | 'nonResourceRules'> {
  const resourceRules: ResourceRuleInfo[] = [];
  const nonResourceRules: NonResourceRuleInfo[] = [];
  for (const r of rules) {
    if ((r.resources ?? []).length > 0) {
      resourceRules.push({
        verbs: [...r.verbs],
        apiGroups: [...(r.apiGroups ?? [])],
        resources: [...(r.resources ?? [])],
        resourceNames: [...(r.resourceNames ?? [])],
      });
    }
    if ((r.nonResourceURLs ?? []).length > 0)
      nonResourceRules.push({ verbs: [...r.verbs], nonResourceURLs: [...(r.nonResourceURLs ?? [])] });
  }
  return { resourceRules, nonResourceRules };
}

import { ApiError, forbidden } from '../apiserver/status.js';
import type { RequestUser } from '../apiserver/resource-type.js';
import type {
  AuthorizationResult,
  Authorizer,
  RequestAttributes,
  RuleResolver,
  RulesForUser,
} from './attributes.js';

/**
 * The authorization chain (kube-apiserver's `--authorization-mode=Node,RBAC` behind the privileged
 * `system:masters` group), as upstream's union authorizer: the first link that allows or denies decides;
 * when none has an opinion the request is refused, with every link's reason joined by a newline.
 */
export class AuthorizationChain implements Authorizer {
  readonly name = 'Chain';

  /** `resolvers`: the links that can list a user's rules, in chain order (upstream's union rule resolver). */
  constructor(
    readonly links: readonly Authorizer[],
    private readonly resolvers: readonly RuleResolver[] = [],
  ) {}

  /** Every resolver's rules for `user` in `namespace`, concatenated; incomplete if any one is. */
  rulesFor(user: RequestUser, namespace: string): RulesForUser {
    const all: RulesForUser = { resourceRules: [], nonResourceRules: [], incomplete: false };
    const errors: string[] = [];
    for (const resolver of this.resolvers) {
      const r = resolver.rulesFor(user, namespace);
      all.resourceRules.push(...r.resourceRules);
      all.nonResourceRules.push(...r.nonResourceRules);
      all.incomplete ||= r.incomplete;
      if (r.evaluationError) errors.push(r.evaluationError);
    }
    if (errors.length > 0) all.evaluationError = errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`;
    return all;
  }

  authorize(attrs: RequestAttributes): AuthorizationResult {
    const reasons: string[] = [];
    for (const link of this.links) {
      const result = link.authorize(attrs);
      if (result.decision !== 'no-opinion') return result;
      if (result.reason) reasons.push(result.reason);
    }
    return { decision: 'no-opinion', reason: reasons.join('\n') };
  }

  /** Throws the upstream 403 unless the chain allows the request. */
  check(attrs: RequestAttributes): AuthorizationResult {
    const result = this.authorize(attrs);
    if (result.decision !== 'allow') throw forbiddenError(attrs, result.reason);
    return result;
  }
}

/** Every request allowed (`--authorization-mode=AlwaysAllow`). */
export const alwaysAllow: Authorizer = {
  name: 'AlwaysAllow',
  authorize: () => ({ decision: 'allow', reason: '' }),
};

/**
 * Upstream's 403 (endpoints/handlers/responsewriters.Forbidden): `pods "x" is forbidden: User "u" cannot
 * get resource "pods" in API group "" in the namespace "ns": <reason>`, or for a path `forbidden: User "u"
 * cannot get path "/x"`.
 */
export function forbiddenError(attrs: RequestAttributes, reason: string): ApiError {
  const user = attrs.user.name;
  let message: string;
  if (!attrs.resourceRequest) {
    message = `User "${user}" cannot ${attrs.verb} path "${attrs.path}"`;
  } else {
    const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
    const where = attrs.namespace ? `in the namespace "${attrs.namespace}"` : 'at the cluster scope';
    message = `User "${user}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.apiGroup}" ${where}`;
  }
  const why = reason ? `${message}: ${reason}` : message;
  if (!attrs.resourceRequest) return new ApiError(403, 'Forbidden', `forbidden: ${why}`);
  return forbidden({ group: attrs.apiGroup, resource: attrs.resource }, attrs.name, why);
}

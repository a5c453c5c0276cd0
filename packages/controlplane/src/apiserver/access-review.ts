import type { RequestAttributes } from '../authorization/attributes.js';
import type { AuthorizationChain } from '../authorization/chain.js';
import type { RequestUser } from './resource-type.js';

/** authorization/v1 ResourceAttributes and NonResourceAttributes, as a review's spec carries them. */
export interface ReviewAttributes {
  resourceAttributes?: {
    namespace?: string;
    verb?: string;
    group?: string;
    version?: string;
    resource?: string;
    subresource?: string;
    name?: string;
    fieldSelector?: { rawSelector?: string };
  };
  nonResourceAttributes?: { path?: string; verb?: string };
}

export interface AccessDecision {
  allowed: boolean;
  /** The chain said no outright (not just "nobody allowed it"). */
  denied: boolean;
  reason: string;
}

/**
 * The request attributes a review's spec describes (upstream's authorizationutil.ResourceAttributesFrom /
 * NonResourceAttributesFrom), so that a review is decided exactly as the request itself would be.
 */
export function reviewAttributes(user: RequestUser, spec: ReviewAttributes): RequestAttributes {
  const res = spec.resourceAttributes;
  if (res) {
    const str = (v: unknown) => (typeof v === 'string' ? v : '');
    const fieldSelector = str(res.fieldSelector?.rawSelector);
    return {
      user,
      verb: str(res.verb),
      resourceRequest: true,
      path: '',
      apiGroup: str(res.group),
      apiVersion: str(res.version),
      resource: str(res.resource),
      subresource: str(res.subresource),
      namespace: str(res.namespace),
      name: str(res.name),
      ...(fieldSelector ? { fieldSelector } : {}),
    };
  }
  const non = spec.nonResourceAttributes ?? {};
  return {
    user,
    verb: typeof non.verb === 'string' ? non.verb : '',
    resourceRequest: false,
    path: typeof non.path === 'string' ? non.path : '',
    apiGroup: '',
    apiVersion: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
  };
}

/** Whether `user` may do what `spec` describes, by the API server's own authorization chain. */
export function decideAccess(
  chain: AuthorizationChain,
  user: RequestUser,
  spec: ReviewAttributes,
): AccessDecision {
  const { decision, reason } = chain.authorize(reviewAttributes(user, spec));
  return { allowed: decision === 'allow', denied: decision === 'deny', reason };
}

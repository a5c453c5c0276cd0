import type { KubeObject } from '../object.js';
import type { AuthorizationChain } from '../authorization/chain.js';
import { decideAccess, type ReviewAttributes } from './access-review.js';
import type { Authenticator } from './authentication.js';
import { decodeObject, type FieldValidation, type KindIndex } from './decode.js';
import type { RequestUser, ResourceType } from './resource-type.js';
import { badRequest, methodNotAllowed } from './status.js';

/**
 * The reviews of authentication.k8s.io/v1, answered from the request alone (nothing is stored):
 *
 * - TokenReview (pkg/registry/authentication/tokenreview): does `spec.token` authenticate, for
 *   `spec.audiences` (default: the API server's)? `status.authenticated`, `status.user`,
 *   `status.audiences` and `status.error`, as the API server's own authenticator sees the token;
 * - SelfSubjectReview (`kubectl auth whoami`): `status.userInfo` is the user who asks;
 *
 * and of authorization.k8s.io/v1, decided by the API server's own authorizer (access-review.ts):
 *
 * - SubjectAccessReview (the kubelet's webhook authorization): may `spec.user`/`spec.groups` do what
 *   `spec.resourceAttributes` or `spec.nonResourceAttributes` say? `status.allowed`, `status.reason`;
 * - SelfSubjectAccessReview (`kubectl auth can-i`): the same for the user who asks;
 * - SelfSubjectRulesReview (`kubectl auth can-i --list`): the rules the asker holds in a namespace.
 */
export async function review(
  t: ResourceType,
  body: unknown,
  user: RequestUser,
  authenticator: Authenticator,
  authorizer: AuthorizationChain,
  kinds: KindIndex,
  fieldValidation: FieldValidation,
): Promise<{ object: KubeObject; warnings: string[] }> {
  const { object, warnings } = decodeObject(body, t, fieldValidation, kinds);
  // Nothing is stored: Go writes the zero creation time as null.
  object.metadata = { ...object.metadata, creationTimestamp: null } as unknown as KubeObject['metadata'];
  switch (t.kind) {
    case 'SelfSubjectReview':
      object.status = { userInfo: userInfo(user) };
      return { object, warnings };
    case 'TokenReview': {
      const spec: Record<string, any> = object.spec ?? {};
      if (typeof spec.token !== 'string' || spec.token === '')
        throw badRequest('token is required for TokenReview in authentication');
      const result = await authenticator.authenticateToken(spec.token, spec.audiences);
      object.status = {
        ...(result.user ? { authenticated: true } : {}),
        user: result.user ? userInfo(result.user) : {},
        ...(result.audiences.length > 0 ? { audiences: result.audiences } : {}),
        ...(result.error ? { error: result.error } : {}),
      };
      return { object, warnings };
    }
    case 'SubjectAccessReview': {
      const spec: Record<string, any> = object.spec ?? {};
      const groups: string[] = Array.isArray(spec.groups) ? spec.groups.map(String) : [];
      if (!spec.user && groups.length === 0) {
        throw badRequest(
          'SubjectAccessReview: spec.user or spec.groups is required (at least one of user or group must be specified)',
        );
      }
      checkAttributes(spec);
      const subject: RequestUser = {
        name: String(spec.user ?? ''),
        groups,
        ...(spec.uid ? { uid: String(spec.uid) } : {}),
      };
      object.status = accessStatus(authorizer, subject, spec);
      return { object, warnings };
    }
    case 'SelfSubjectAccessReview': {
      const spec: Record<string, any> = object.spec ?? {};
      checkAttributes(spec);
      object.status = accessStatus(authorizer, user, spec);
      return { object, warnings };
    }
    case 'SelfSubjectRulesReview': {
      const spec: Record<string, any> = object.spec ?? {};
      const rules = authorizer.rulesFor(user, typeof spec.namespace === 'string' ? spec.namespace : '');
      object.status = {
        resourceRules: rules.resourceRules,
        nonResourceRules: rules.nonResourceRules,
        incomplete: rules.incomplete,
        ...(rules.evaluationError ? { evaluationError: rules.evaluationError } : {}),
      };
      return { object, warnings };
    }
    default:
      throw methodNotAllowed();
  }
}

function checkAttributes(spec: Record<string, any>): void {
  const has = (k: string) => spec[k] !== undefined && spec[k] !== null;
  if (has('resourceAttributes') === has('nonResourceAttributes')) {
    throw badRequest(
      'exactly one of spec.resourceAttributes and spec.nonResourceAttributes must be specified',
    );
  }
}

/** authorization/v1 SubjectAccessReviewStatus (`denied` left out, as Go's omitempty does when false). */
function accessStatus(
  authorizer: AuthorizationChain,
  user: RequestUser,
  spec: ReviewAttributes,
): Record<string, unknown> {
  const { allowed, denied, reason } = decideAccess(authorizer, user, spec);
  return { allowed, ...(denied ? { denied } : {}), ...(reason ? { reason } : {}) };
}

/** authentication/v1 UserInfo (empty fields left out, as Go's omitempty does). */
function userInfo(user: RequestUser): Record<string, unknown> {
  return {
    username: user.name,
    ...(user.uid ? { uid: user.uid } : {}),
    ...(user.groups.length > 0 ? { groups: user.groups } : {}),
    ...(user.extra && Object.keys(user.extra).length > 0 ? { extra: user.extra } : {}),
  };
}

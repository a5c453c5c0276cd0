/**
 * authentication.k8s.io/v1: TokenReview and SelfSubjectReview (served, create only, never stored: the
 * answer is computed from the request) and TokenRequest (the body of `serviceaccounts/<name>/token`).
 */
import type { ResourceType } from '../apiserver/resource-type.js';
import { base } from './resource-base.js';

export const authenticationGroup = 'authentication.k8s.io';

const review = (kind: string, plural: string, model: string): ResourceType =>
  base({
    group: authenticationGroup,
    version: 'v1',
    kind,
    plural,
    singular: kind.toLowerCase(),
    namespaced: false,
    model,
    verbs: ['create'],
    stateless: true,
  });

export const tokenReviews = review('TokenReview', 'tokenreviews', 'V1TokenReview');
export const selfSubjectReviews = review('SelfSubjectReview', 'selfsubjectreviews', 'V1SelfSubjectReview');

/** The kind `serviceaccounts/token` takes and answers; not a resource of its own. */
export const tokenRequests: ResourceType = base({
  group: authenticationGroup,
  version: 'v1',
  kind: 'TokenRequest',
  plural: 'tokenrequests',
  singular: 'tokenrequest',
  namespaced: true,
  model: 'AuthenticationV1TokenRequest',
  verbs: ['create'],
  stateless: true,
});

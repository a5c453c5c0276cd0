/**
 * authorization.k8s.io/v1: SubjectAccessReview (may this user do this? — the kubelet's webhook
 * authorization asks it) and SelfSubjectAccessReview (may I? — `kubectl auth can-i`). Served, create
 * only, never stored: the answer is computed from the request.
 */
import type { ResourceType } from '../apiserver/resource-type.js';
import { base } from './resource-base.js';

export const authorizationGroup = 'authorization.k8s.io';

const review = (kind: string, plural: string, model: string): ResourceType =>
  base({
    group: authorizationGroup,
    version: 'v1',
    kind,
    plural,
    singular: kind.toLowerCase(),
    namespaced: false,
    model,
    verbs: ['create'],
    stateless: true,
  });

export const subjectAccessReviews = review(
  'SubjectAccessReview',
  'subjectaccessreviews',
  'V1SubjectAccessReview',
);
export const selfSubjectAccessReviews = review(
  'SelfSubjectAccessReview',
  'selfsubjectaccessreviews',
  'V1SelfSubjectAccessReview',
);
/** What may I do in a namespace? — `kubectl auth can-i --list`. */
export const selfSubjectRulesReviews = review(
  'SelfSubjectRulesReview',
  'selfsubjectrulesreviews',
  'V1SelfSubjectRulesReview',
);

import type { RequestUser } from '../apiserver/resource-type.js';

/**
 * What an authorizer decides on: upstream's authorizer.Attributes (staging/src/k8s.io/apiserver/pkg/
 * authorization/authorizer). A resource request names an API group, resource, optional subresource,
 * namespace and name, and a verb from the method (get, list, watch, create, update, patch, delete,
 * deletecollection); a non-resource request (`/healthz`, `/api`, `/openapi/v2`) names its path and the
 * lowercase HTTP method as verb.
 */
export interface RequestAttributes {
  user: RequestUser;
  verb: string;
  resourceRequest: boolean;
  /** The request path (non-resource requests are authorized on it). */
  path: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /** The raw `fieldSelector` of a list or watch (the Node authorizer lets a node list its own pods). */
  fieldSelector?: string;
}

/** Upstream's three answers: allow, deny (stop the chain), or no opinion (ask the next authorizer). */
export type Decision = 'allow' | 'deny' | 'no-opinion';

export interface AuthorizationResult {
  decision: Decision;
  /** Why, for SubjectAccessReview's `status.reason` and the audit log ('' when there is nothing to say). */
  reason: string;
}

/**
 * One link of the authorization chain (`--authorization-mode=Node,RBAC`): the first answer that is not
 * `no-opinion` decides; when every link has no opinion the request is refused.
 */
export interface Authorizer {
  readonly name: string;
  authorize(attrs: RequestAttributes): AuthorizationResult;
}

/** authorization/v1 ResourceRule and NonResourceRule, as SelfSubjectRulesReview lists them. */
export interface ResourceRuleInfo {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}
export interface NonResourceRuleInfo {
  verbs: string[];
  nonResourceURLs?: string[];
}

/** What a user may do in a namespace (upstream's authorizer.RuleResolver), for `kubectl auth can-i --list`. */
export interface RulesForUser {
  resourceRules: ResourceRuleInfo[];
  nonResourceRules: NonResourceRuleInfo[];
  /** The list may leave out what the authorizer allows (the Node authorizer cannot enumerate). */
  incomplete: boolean;
  evaluationError?: string;
}

export interface RuleResolver {
  rulesFor(user: RequestUser, namespace: string): RulesForUser;
}

import { authorize } from './authentication.js';
import type { RequestUser } from './resource-type.js';
import { ApiError, badRequest } from './status.js';

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
  };
  nonResourceAttributes?: { path?: string; verb?: string };
}

export interface AccessDecision {
  allowed: boolean;
  reason: string;
}

const methods: Record<string, string> = {
  get: 'GET',
  list: 'GET',
  watch: 'GET',
  create: 'POST',
  update: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  deletecollection: 'DELETE',
};

/**
 * The request a review's attributes stand for (method and path), so that the API server's one
 * decision, `authorize()`, answers reviews exactly as it answers requests. When RBAC arrives it
 * replaces `authorize()`, and this follows.
 */
export function attributesRequest(attrs: ReviewAttributes): { method: string; path: string } {
  const non = attrs.nonResourceAttributes;
  const res = attrs.resourceAttributes;
  if (!res && non) {
    const verb = (non.verb ?? '').toLowerCase();
    return { method: verb === 'get' ? 'GET' : (methods[verb] ?? verb.toUpperCase()), path: non.path ?? '' };
  }
  if (!res) throw badRequest('resourceAttributes or nonResourceAttributes is required');
  const verb = res.verb ?? '';
  const method = methods[verb] ?? verb.toUpperCase();
  const version = res.version || 'v1';
  const root = res.group ? `/apis/${res.group}/${version}` : `/api/${version}`;
  const watch = verb === 'watch' ? '/watch' : '';
  const ns = res.namespace ? `/namespaces/${res.namespace}` : '';
  const collectionVerb = verb === 'list' || verb === 'deletecollection' || verb === 'create';
  const named = res.name && (res.subresource || !collectionVerb) ? `/${res.name}` : '';
  const sub = res.subresource ? `/${res.subresource}` : '';
  return { method, path: `${root}${watch}${ns}/${res.resource ?? ''}${named}${sub}` };
}

/** Whether `user` may do what `attrs` describe, by the API server's own decision. */
export function decideAccess(user: RequestUser, attrs: ReviewAttributes): AccessDecision {
  const { method, path } = attributesRequest(attrs);
  try {
    authorize(user, method, path);
    return { allowed: true, reason: 'nodelet authorizes every authenticated user but bootstrap tokens' };
  } catch (err) {
    if (err instanceof ApiError && err.code === 403) return { allowed: false, reason: err.message };
    throw err;
  }
}

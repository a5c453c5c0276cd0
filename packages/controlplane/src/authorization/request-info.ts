import type { RequestUser } from '../apiserver/resource-type.js';
import type { RequestAttributes } from './attributes.js';

/**
 * The attributes of an HTTP request, read from its URL as upstream's RequestInfoFactory does: resource
 * requests under /api/v1 and /apis/{group}/{version}, everything else non-resource.
 */
export function requestAttributes(user: RequestUser, method: string, url: URL): RequestAttributes {
  const path = url.pathname;
  const base = {
    user,
    path,
    apiGroup: '',
    apiVersion: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
  };
  let parts = path.split('/').filter(Boolean).map(safeDecode);
  let apiGroup = '';
  if (parts[0] === 'api' && parts.length >= 3) parts = parts.slice(1);
  else if (parts[0] === 'apis' && parts.length >= 4) {
    apiGroup = parts[1]!;
    parts = parts.slice(2);
  } else return { ...base, verb: method.toLowerCase(), resourceRequest: false };
  const apiVersion = parts.shift()!;
  const methods: Record<string, string> = {
    GET: 'get',
    HEAD: 'get',
    POST: 'create',
    PUT: 'update',
    PATCH: 'patch',
    DELETE: 'delete',
  };
  let verb = methods[method.toUpperCase()] ?? '';
  if (parts[0] === 'watch') {
    verb = 'watch';
    parts.shift();
  }
  let namespace = '';
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1]!;
    if (parts.length > 2 && parts[2] !== 'status' && parts[2] !== 'finalize') parts = parts.slice(2);
  }
  const [resource = '', name = '', subresource = ''] = parts;
  const watchParam = url.searchParams.get('watch');
  if (verb === 'get' && !name) verb = watchParam === 'true' || watchParam === '1' ? 'watch' : 'list';
  if (verb === 'delete' && !name) verb = 'deletecollection';
  return {
    ...base,
    verb,
    resourceRequest: true,
    apiGroup,
    apiVersion,
    resource,
    subresource,
    namespace,
    name,
  };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

import type { RequestUser } from '../apiserver/resource-type.js';
import { badRequest } from '../apiserver/status.js';
import type { RequestAttributes } from './attributes.js';

/**
 * The authorization attributes of an HTTP request, as upstream's RequestInfoFactory reads a URL
 * (staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go):
 *
 *   /api/v1[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}…]]      core group
 *   /apis/{group}/{version}[/watch][/namespaces/{ns}]/{resource}[/{name}[/…]]    named groups
 *   anything else (/healthz, /api, /apis/apps, /openapi/v2, /version)            non-resource
 *
 * The verb comes from the method (GET → get, or list without a name, or watch with `watch=true` or a
 * `/watch/` path; POST → create; PUT → update; PATCH → patch; DELETE → delete, or deletecollection
 * without a name). `/namespaces/{ns}` alone is the namespace object itself (its name is its namespace, as
 * upstream records it), and `namespaces/{ns}/status|finalize` its subresources. A list or watch with the
 * field selector `metadata.name=<x>` names `<x>`, so a node may watch the one Secret its pod uses.
 */
const verbsByMethod: Record<string, string> = {
  GET: 'get',
  HEAD: 'get',
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

const namespaceSubresources = new Set(['status', 'finalize']);

export function requestAttributes(user: RequestUser, method: string, url: URL): RequestAttributes {
  const path = url.pathname;
  const nonResource = (): RequestAttributes => ({
    user,
    verb: method.toLowerCase(),
    resourceRequest: false,
    path,
    apiGroup: '',
    apiVersion: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
  });
  let parts = path
    .split('/')
    .filter((p) => p !== '')
    .map(decodePathSegment);
  let apiGroup = '';
  if (parts[0] === 'api') {
    if (parts.length < 3) return nonResource();
    parts = parts.slice(1);
  } else if (parts[0] === 'apis') {
    if (parts.length < 4) return nonResource();
    apiGroup = parts[1]!;
    parts = parts.slice(2);
  } else {
    return nonResource();
  }
  const apiVersion = parts[0]!;
  parts = parts.slice(1);
  let verb = verbsByMethod[method.toUpperCase()] ?? '';
  if (parts[0] === 'watch') {
    verb = 'watch';
    parts = parts.slice(1);
  }
  let namespace = '';
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1]!;
    if (parts.length > 2 && !namespaceSubresources.has(parts[2]!)) parts = parts.slice(2);
  }
  const [resource = '', pathName = '', subresource = ''] = parts;
  let name = pathName;
  const q = url.searchParams;
  if (verb === 'get' && name === '')
    verb = q.get('watch') === 'true' || q.get('watch') === '1' ? 'watch' : 'list';
  if (verb === 'delete' && name === '') verb = 'deletecollection';
  const fieldSelector = q.get('fieldSelector') ?? '';
  if ((verb === 'list' || verb === 'watch') && name === '') name = selectedName(fieldSelector);
  return {
    user,
    verb,
    resourceRequest: true,
    path,
    apiGroup,
    apiVersion,
    resource,
    subresource,
    namespace,
    name,
    ...(fieldSelector ? { fieldSelector } : {}),
  };
}

/** The `metadata.name` a field selector pins (`metadata.name=x` or `metadata.name==x`), else ''. */
function selectedName(fieldSelector: string): string {
  for (const term of fieldSelector.split(',')) {
    const m = /^\s*metadata\.name\s*==?\s*(.*?)\s*$/.exec(term);
    if (m) return m[1]!;
  }
  return '';
}

/** The value a field selector requires `field` to equal (`f=v` or `f==v`), or undefined. */
export function fieldSelectorValue(fieldSelector: string | undefined, field: string): string | undefined {
  for (const term of (fieldSelector ?? '').split(',')) {
    const m = /^\s*([^!=\s]+)\s*==?\s*(.*?)\s*$/.exec(term);
    if (m && m[1] === field) return m[2]!;
  }
  return undefined;
}

/** One path segment, percent-decoded; a malformed escape (`%ZZ`) is the client's error. */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`the request path has a malformed percent-encoding in "${segment}"`);
  }
}

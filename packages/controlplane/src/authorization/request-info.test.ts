import test from 'ava';
import { ApiError } from '../apiserver/status.js';
import { fieldSelectorValue, requestAttributes } from './request-info.js';

// Request attributes from URLs, with cases taken as data from upstream's requestinfo_test.go
// (TestGetAPIRequestInfo, TestGetNonAPIRequestInfo, the field-selector name cases).

const user = { name: 'u', groups: [] };
const attrs = (method: string, target: string) =>
  requestAttributes(user, method, new URL(`https://localhost${target}`));

type Row = [
  method: string,
  url: string,
  verb: string,
  ns: string,
  resource: string,
  sub: string,
  name: string,
  group: string,
  version: string,
];

const rows: Row[] = [
  ['GET', '/api/v1/namespaces', 'list', '', 'namespaces', '', '', '', 'v1'],
  ['GET', '/api/v1/namespaces/other', 'get', 'other', 'namespaces', '', 'other', '', 'v1'],
  ['GET', '/api/v1/namespaces/other/pods', 'list', 'other', 'pods', '', '', '', 'v1'],
  ['GET', '/api/v1/namespaces/other/pods/foo', 'get', 'other', 'pods', '', 'foo', '', 'v1'],
  ['HEAD', '/api/v1/namespaces/other/pods/foo', 'get', 'other', 'pods', '', 'foo', '', 'v1'],
  ['GET', '/api/v1/pods', 'list', '', 'pods', '', '', '', 'v1'],
  ['GET', '/api/v1/watch/pods', 'watch', '', 'pods', '', '', '', 'v1'],
  ['GET', '/api/v1/pods?watch=true', 'watch', '', 'pods', '', '', '', 'v1'],
  ['GET', '/api/v1/pods?watch=false', 'list', '', 'pods', '', '', '', 'v1'],
  ['GET', '/api/v1/watch/namespaces/other/pods', 'watch', 'other', 'pods', '', '', '', 'v1'],
  ['GET', '/api/v1/namespaces/other/pods/foo/log', 'get', 'other', 'pods', 'log', 'foo', '', 'v1'],
  ['POST', '/api/v1/namespaces/other/pods', 'create', 'other', 'pods', '', '', '', 'v1'],
  ['PUT', '/api/v1/namespaces/other/pods/foo', 'update', 'other', 'pods', '', 'foo', '', 'v1'],
  ['PATCH', '/api/v1/namespaces/other/pods/foo/status', 'patch', 'other', 'pods', 'status', 'foo', '', 'v1'],
  ['DELETE', '/api/v1/namespaces/other/pods/foo', 'delete', 'other', 'pods', '', 'foo', '', 'v1'],
  ['DELETE', '/api/v1/namespaces/other/pods', 'deletecollection', 'other', 'pods', '', '', '', 'v1'],
  [
    'PUT',
    '/api/v1/namespaces/other/finalize',
    'update',
    'other',
    'namespaces',
    'finalize',
    'other',
    '',
    'v1',
  ],
  ['PUT', '/api/v1/namespaces/other/status', 'update', 'other', 'namespaces', 'status', 'other', '', 'v1'],
  ['GET', '/api/v1/nodes/n1/proxy/stats', 'get', '', 'nodes', 'proxy', 'n1', '', 'v1'],
  ['GET', '/apis/apps/v1/namespaces/ns/deployments', 'list', 'ns', 'deployments', '', '', 'apps', 'v1'],
  [
    'POST',
    '/apis/certificates.k8s.io/v1/certificatesigningrequests',
    'create',
    '',
    'certificatesigningrequests',
    '',
    '',
    'certificates.k8s.io',
    'v1',
  ],
  [
    'GET',
    '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1',
    'get',
    'kube-node-lease',
    'leases',
    '',
    'n1',
    'coordination.k8s.io',
    'v1',
  ],
  [
    'POST',
    '/api/v1/namespaces/ns/serviceaccounts/default/token',
    'create',
    'ns',
    'serviceaccounts',
    'token',
    'default',
    '',
    'v1',
  ],
  // A list or watch pinned to one name by a field selector names it.
  [
    'GET',
    '/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Ds1',
    'list',
    'ns',
    'secrets',
    '',
    's1',
    '',
    'v1',
  ],
  [
    'GET',
    '/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3D%3Ds1&watch=true',
    'watch',
    'ns',
    'secrets',
    '',
    's1',
    '',
    'v1',
  ],
  [
    'GET',
    '/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%21%3Ds1',
    'list',
    'ns',
    'secrets',
    '',
    '',
    '',
    'v1',
  ],
];

for (const [method, url, verb, namespace, resource, subresource, name, apiGroup, apiVersion] of rows) {
  test(`${method} ${url}`, (t) => {
    const a = attrs(method, url);
    t.true(a.resourceRequest);
    t.like(a, { verb, namespace, resource, subresource, name, apiGroup, apiVersion });
  });
}

test('paths outside a resource are non-resource requests, verb from the method', (t) => {
  for (const path of [
    '/',
    '/api',
    '/api/v1',
    '/apis',
    '/apis/apps',
    '/apis/apps/v1',
    '/healthz',
    '/version',
    '/openapi/v2',
    '/metrics',
  ]) {
    const a = attrs('GET', path);
    t.false(a.resourceRequest, path);
    t.is(a.verb, 'get');
    t.is(a.path, path);
  }
  t.is(attrs('POST', '/healthz').verb, 'post');
});

test('a malformed escape in the path is 400, naming the segment', (t) => {
  const err = t.throws(() => attrs('GET', '/api/v1/namespaces/%ff/pods'));
  t.true(err instanceof ApiError);
  t.is((err as ApiError).code, 400);
  t.regex(err!.message, /malformed percent-encoding in "%ff"/);
  t.is(attrs('GET', '/api/v1/namespaces/a%20b/pods').namespace, 'a b');
});

test('field selector terms are read for one field', (t) => {
  t.is(fieldSelectorValue('spec.nodeName=n1', 'spec.nodeName'), 'n1');
  t.is(fieldSelectorValue('metadata.namespace=x, spec.nodeName==n2', 'spec.nodeName'), 'n2');
  t.is(fieldSelectorValue('spec.nodeName!=n1', 'spec.nodeName'), undefined);
  t.is(fieldSelectorValue(undefined, 'spec.nodeName'), undefined);
});

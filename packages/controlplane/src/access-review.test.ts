import test from 'ava';
import { VirtualClock } from '@nodelet/kernel';
import { attributesRequest } from './apiserver/access-review.js';
import { startCluster, type TestCluster } from './test-helpers.js';

// SubjectAccessReview and SelfSubjectAccessReview, answered by the API server's own authorizer.

const clock = new VirtualClock();
let c: TestCluster;

test.before(async () => {
  c = await startCluster({ clock });
});

test.after.always(async () => {
  await c?.destroy();
});

const sar = (spec: Record<string, unknown>) =>
  c.api('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec,
  });

test("a kubelet's SubjectAccessReview for nodes/proxy: allowed for a user, denied for a bootstrap identity", async (t) => {
  const resourceAttributes = {
    verb: 'get',
    version: 'v1',
    resource: 'nodes',
    subresource: 'proxy',
    name: 'node-1',
  };
  const allowed = await sar({ resourceAttributes, user: 'alice', groups: ['system:authenticated'] });
  t.is(allowed.status, 201, allowed.text);
  t.is(allowed.json.kind, 'SubjectAccessReview');
  t.is(allowed.json.status.allowed, true);
  const denied = await sar({
    resourceAttributes,
    user: 'system:bootstrap:abcdef',
    groups: ['system:bootstrappers'],
  });
  t.is(denied.json.status.allowed, false);
  t.regex(denied.json.status.reason, /cannot get path "\/api\/v1\/nodes\/node-1\/proxy"/);
  // What a bootstrap token may do, it may do in a review too.
  const csr = await sar({
    resourceAttributes: {
      verb: 'create',
      group: 'certificates.k8s.io',
      resource: 'certificatesigningrequests',
    },
    groups: ['system:bootstrappers'],
  });
  t.is(csr.json.status.allowed, true);
});

test('SubjectAccessReview errors: no user nor group, both or neither attribute kinds; only POST', async (t) => {
  const none = await sar({ resourceAttributes: { verb: 'get', resource: 'pods' } });
  t.is(none.status, 400);
  t.regex(none.json.message, /spec.user or spec.groups is required/);
  const both = await sar({
    user: 'a',
    resourceAttributes: { verb: 'get' },
    nonResourceAttributes: { path: '/healthz', verb: 'get' },
  });
  t.is(both.status, 400);
  t.regex(both.json.message, /exactly one of spec.resourceAttributes and spec.nonResourceAttributes/);
  t.is((await c.api('GET', '/apis/authorization.k8s.io/v1/subjectaccessreviews')).status, 405);
});

test('SelfSubjectAccessReview (kubectl auth can-i) answers for the caller; discovery lists the group', async (t) => {
  const r = await c.api('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: { verb: 'delete', resource: 'pods', namespace: 'default' } },
  });
  t.is(r.status, 201, r.text);
  t.is(r.json.status.allowed, true);
  const resources = (await c.api('GET', '/apis/authorization.k8s.io/v1')).json.resources;
  t.deepEqual(
    resources.map((x: { name: string }) => x.name),
    ['subjectaccessreviews', 'selfsubjectaccessreviews'],
  );
});

test('review attributes stand for the request they describe', (t) => {
  const req = (a: Record<string, string>) => attributesRequest({ resourceAttributes: a });
  t.deepEqual(req({ verb: 'get', resource: 'nodes', subresource: 'proxy', name: 'n1' }), {
    method: 'GET',
    path: '/api/v1/nodes/n1/proxy',
  });
  t.deepEqual(req({ verb: 'list', resource: 'pods', namespace: 'ns', name: 'ignored' }), {
    method: 'GET',
    path: '/api/v1/namespaces/ns/pods',
  });
  t.deepEqual(req({ verb: 'watch', group: 'apps', version: 'v1', resource: 'deployments' }), {
    method: 'GET',
    path: '/apis/apps/v1/watch/deployments',
  });
  t.deepEqual(
    req({ verb: 'create', resource: 'pods', namespace: 'ns', name: 'p', subresource: 'eviction' }),
    {
      method: 'POST',
      path: '/api/v1/namespaces/ns/pods/p/eviction',
    },
  );
  t.deepEqual(attributesRequest({ nonResourceAttributes: { path: '/healthz', verb: 'get' } }), {
    method: 'GET',
    path: '/healthz',
  });
});

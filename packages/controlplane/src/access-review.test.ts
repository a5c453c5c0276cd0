import test from 'ava';
import { VirtualClock } from '@nodelet/kernel';
import { reviewAttributes } from './apiserver/access-review.js';
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

test("a kubelet's SubjectAccessReview for nodes/proxy: RBAC decides — denied for a plain user and a bootstrap identity, allowed for system:masters", async (t) => {
  const resourceAttributes = {
    verb: 'get',
    version: 'v1',
    resource: 'nodes',
    subresource: 'proxy',
    name: 'node-1',
  };
  const plain = await sar({ resourceAttributes, user: 'alice', groups: ['system:authenticated'] });
  t.is(plain.status, 201, plain.text);
  t.is(plain.json.kind, 'SubjectAccessReview');
  t.is(plain.json.status.allowed, false);
  t.is(plain.json.status.denied, undefined, 'RBAC never denies: nobody allowed it');
  const bootstrap = await sar({
    resourceAttributes,
    user: 'system:bootstrap:abcdef',
    groups: [
      'system:bootstrappers',
      'system:bootstrappers:nodelet:default-node-token',
      'system:authenticated',
    ],
  });
  t.is(bootstrap.json.status.allowed, false);
  const master = await sar({ resourceAttributes, user: 'root', groups: ['system:masters'] });
  t.is(master.json.status.allowed, true);
  // What a bootstrap token may do (kubeadm's binding of system:node-bootstrapper), it may do in a review too.
  const csr = await sar({
    resourceAttributes: {
      verb: 'create',
      group: 'certificates.k8s.io',
      resource: 'certificatesigningrequests',
    },
    user: 'system:bootstrap:abcdef',
    groups: [
      'system:bootstrappers',
      'system:bootstrappers:nodelet:default-node-token',
      'system:authenticated',
    ],
  });
  t.is(csr.json.status.allowed, true, csr.text);
  t.regex(
    csr.json.status.reason,
    /^RBAC: allowed by ClusterRoleBinding "nodelet:kubelet-bootstrap" of ClusterRole "system:node-bootstrapper" to Group "system:bootstrappers:nodelet:default-node-token"$/,
  );
  const health = await sar({
    nonResourceAttributes: { path: '/healthz', verb: 'get' },
    groups: ['system:unauthenticated'],
  });
  t.is(health.json.status.allowed, true, 'system:public-info-viewer');
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
    ['subjectaccessreviews', 'selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
  );
});

test('review attributes are the request attributes they describe', (t) => {
  const user = { name: 'u', groups: [] };
  t.like(
    reviewAttributes(user, {
      resourceAttributes: {
        verb: 'list',
        resource: 'pods',
        namespace: 'ns',
        fieldSelector: { rawSelector: 'spec.nodeName=n1' },
      },
    }),
    {
      verb: 'list',
      resource: 'pods',
      namespace: 'ns',
      name: '',
      resourceRequest: true,
      fieldSelector: 'spec.nodeName=n1',
    },
  );
  t.like(
    reviewAttributes(user, {
      resourceAttributes: { verb: 'get', group: 'apps', resource: 'deployments', name: 'd' },
    }),
    {
      apiGroup: 'apps',
      name: 'd',
    },
  );
  t.like(reviewAttributes(user, { nonResourceAttributes: { path: '/healthz', verb: 'get' } }), {
    resourceRequest: false,
    path: '/healthz',
    verb: 'get',
  });
});

test('SelfSubjectRulesReview (kubectl auth can-i --list): the admin holds everything', async (t) => {
  const r = await c.api('POST', '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectRulesReview',
    spec: { namespace: 'default' },
  });
  t.is(r.status, 201, r.text);
  t.false(r.json.status.incomplete);
  t.true(
    r.json.status.resourceRules.some(
      (rule: { verbs: string[]; resources?: string[] }) =>
        rule.verbs.includes('*') && rule.resources?.includes('*'),
    ),
    r.text,
  );
});

import test from 'ava';
import { readFile } from 'node:fs/promises';
import { VirtualClock } from '@nodelet/kernel';
import { apiRequest, readyNode, startCluster, type TestCluster } from './test-helpers.js';
import { tokenPath } from './test-tokens.js';

// Requests that authenticate with service-account tokens, TokenReview and SelfSubjectReview, through the
// HTTPS server on a virtual clock.

const clock = new VirtualClock();
let c: TestCluster;
const issuer = 'https://kubernetes.default.svc.cluster.local';
const whoamiPath = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
const whoamiBody = { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' };

test.before(async () => {
  c = await startCluster({ clock });
  await c.api('POST', '/api/v1/nodes', readyNode('node-1'));
});

test.after.always(async () => {
  await c?.destroy();
});

let seq = 0;
async function namespace(): Promise<string> {
  const name = `auth-${++seq}`;
  await c.api('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  return name;
}

async function pod(ns: string, name = 'web'): Promise<string> {
  const r = await c.api('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'busybox:1.36' }] },
  });
  if (r.status !== 201) throw new Error(r.text);
  return r.json.metadata.uid;
}

async function token(ns: string, spec: Record<string, unknown> = {}, sa = 'default'): Promise<string> {
  const r = await c.api('POST', tokenPath(ns, sa), {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec,
  });
  if (r.status !== 201) throw new Error(r.text);
  return r.json.status.token;
}

const asBearer = (bearer: string, method: string, path: string, body?: unknown) =>
  apiRequest(c.cp, { headers: { authorization: `Bearer ${bearer}` } }, method, path, body);
const whoami = (bearer: string) => asBearer(bearer, 'POST', whoamiPath, whoamiBody);
const review = (body: Record<string, unknown>) =>
  c.api('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    spec: body,
  });

test("a pod-bound token is the ServiceAccount's user, with its groups and the pod's and node's extra", async (t) => {
  const ns = await namespace();
  const podUid = await pod(ns);
  const bearer = await token(ns, { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' } });
  const r = await whoami(bearer);
  t.is(r.status, 201, r.text);
  const sa = await c.api('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`);
  const node = await c.api('GET', '/api/v1/nodes/node-1');
  const jti = JSON.parse(Buffer.from(bearer.split('.')[1]!, 'base64url').toString()).jti;
  t.deepEqual(r.json.status.userInfo, {
    username: `system:serviceaccount:${ns}:default`,
    uid: sa.json.metadata.uid,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
    extra: {
      'authentication.kubernetes.io/pod-name': ['web'],
      'authentication.kubernetes.io/pod-uid': [podUid],
      'authentication.kubernetes.io/credential-id': [`JTI=${jti}`],
      'authentication.kubernetes.io/node-name': ['node-1'],
      'authentication.kubernetes.io/node-uid': [node.json.metadata.uid],
    },
  });
  // What it may do is RBAC's: nothing on pods, until a RoleBinding names the service account.
  const refused = await asBearer(bearer, 'GET', `/api/v1/namespaces/${ns}/pods`);
  t.is(refused.status, 403);
  c.cp.registry.create(c.cp.registry.byStorage('rolebindings'), ns, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'default-view' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
    subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: ns }],
  });
  const list = await asBearer(bearer, 'GET', `/api/v1/namespaces/${ns}/pods`);
  t.is(list.status, 200, list.text);
});

// The tests that move the shared virtual clock run alone, before the others.
test.serial(
  'an expired token is 401 "service account token has expired" (after the minute of leeway)',
  async (t) => {
    const ns = await namespace();
    const bearer = await token(ns, { expirationSeconds: 600 });
    await clock.advance(600_000 + 59_000);
    t.is((await whoami(bearer)).status, 201, 'within the leeway');
    await clock.advance(2_000);
    const r = await whoami(bearer);
    t.is(r.status, 401);
    t.is(r.json.reason, 'Unauthorized');
    t.is(r.json.message, 'Unauthorized: service account token has expired');
  },
);

test.serial(
  'a token of a deleted pod is 401 a minute after its deletion time; a new pod of the name does not revive it',
  async (t) => {
    const ns = await namespace();
    const oldUid = await pod(ns);
    const bearer = await token(ns, { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' } });
    await c.api('DELETE', `/api/v1/namespaces/${ns}/pods/web`);
    // Graceful deletion: deletionTimestamp is the end of the 30 s grace period; a minute of leeway follows.
    await clock.advance(89_000);
    t.is((await whoami(bearer)).status, 201, 'a pod still terminating: within the leeway');
    await clock.advance(2_000);
    const terminating = await whoami(bearer);
    t.is(terminating.status, 401);
    t.is(terminating.json.message, 'Unauthorized: service account token has been invalidated');
    await c.api('DELETE', `/api/v1/namespaces/${ns}/pods/web?gracePeriodSeconds=0`);
    t.is((await c.api('GET', `/api/v1/namespaces/${ns}/pods/web`)).status, 404);
    t.is((await whoami(bearer)).json.message, 'Unauthorized: service account token has been invalidated');
    const newUid = await pod(ns);
    const again = await whoami(bearer);
    t.is(again.status, 401);
    t.is(
      again.json.message,
      `Unauthorized: pod UID (${newUid}) does not match service account pod ref claim (${oldUid})`,
    );
  },
);

test('a ServiceAccount deleted and made again does not accept the old tokens', async (t) => {
  const ns = await namespace();
  await c.api('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'robot' },
  });
  const bearer = await token(ns, {}, 'robot');
  const first = await whoami(bearer);
  t.is(first.status, 201, first.text);
  const oldUid = (await c.api('GET', `/api/v1/namespaces/${ns}/serviceaccounts/robot`)).json.metadata.uid;
  await c.api('DELETE', `/api/v1/namespaces/${ns}/serviceaccounts/robot`);
  const gone = await whoami(bearer);
  t.is(gone.status, 401);
  t.is(gone.json.message, 'Unauthorized: serviceaccounts "robot" not found');
  const created = await c.api('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'robot' },
  });
  const r = await whoami(bearer);
  t.is(r.status, 401);
  t.is(
    r.json.message,
    `Unauthorized: service account UID (${created.json.metadata.uid}) does not match claim (${oldUid})`,
  );
});

test('a token for another audience is 401 for the API, and TokenReview accepts it for that audience', async (t) => {
  const ns = await namespace();
  const bearer = await token(ns, { audiences: ['vault'] });
  const r = await whoami(bearer);
  t.is(r.status, 401);
  t.is(
    r.json.message,
    `Unauthorized: token audiences ["vault"] is invalid for the target audiences ["${issuer}"]`,
  );
  const reviewed = await review({ token: bearer, audiences: ['vault', 'other'] });
  t.is(reviewed.status, 201, reviewed.text);
  t.true(reviewed.json.status.authenticated);
  t.deepEqual(reviewed.json.status.audiences, ['vault']);
  t.is(reviewed.json.status.user.username, `system:serviceaccount:${ns}:default`);
});

test('garbage, a forged signature and an unknown bootstrap token are 401 with a message saying why', async (t) => {
  const garbage = await whoami('not-a-token');
  t.is(garbage.status, 401);
  t.is(
    garbage.json.message,
    'Unauthorized: the bearer token is neither a service-account token of this cluster nor a bootstrap token',
  );
  const ns = await namespace();
  const real = await token(ns);
  const [h, p] = real.split('.');
  const forged = await whoami(`${h}.${p}.${Buffer.alloc(64, 1).toString('base64url')}`);
  t.is(forged.status, 401);
  t.is(forged.json.message, 'Unauthorized: invalid signature: the token is not signed by this cluster');
  const bootstrap = await whoami('abcdef.0123456789abcdef');
  t.is(bootstrap.status, 401);
  t.regex(bootstrap.json.message, /bootstrap token is not valid/);
});

test('the bootstrap token keeps working', async (t) => {
  const bootstrap = /token:\s*(\S+)/.exec(await readFile(c.cp.bootstrapKubeconfigPath, 'utf8'))![1]!;
  const r = await asBearer(bootstrap, 'GET', '/apis/certificates.k8s.io/v1/certificatesigningrequests');
  t.is(r.status, 200, r.text);
  const reviewed = await review({ token: bootstrap });
  t.true(reviewed.json.status.authenticated);
  t.is(reviewed.json.status.user.username, `system:bootstrap:${bootstrap.split('.')[0]}`);
  t.deepEqual(reviewed.json.status.audiences, [issuer]);
  const elsewhere = await review({ token: bootstrap, audiences: ['vault'] });
  t.is(elsewhere.json.status.authenticated, undefined, 'a bootstrap token is for the API server only');
});

test.serial('TokenReview: the answer for a valid, an expired and a missing token', async (t) => {
  const ns = await namespace();
  const bearer = await token(ns, { expirationSeconds: 600 });
  const ok = await review({ token: bearer });
  t.is(ok.status, 201);
  t.is(ok.json.kind, 'TokenReview');
  t.deepEqual(ok.json.metadata, { creationTimestamp: null });
  t.like(ok.json.status, { authenticated: true, audiences: [issuer] });
  t.deepEqual(ok.json.status.user.groups, [
    'system:serviceaccounts',
    `system:serviceaccounts:${ns}`,
    'system:authenticated',
  ]);
  await clock.advance(700_000);
  const expired = await review({ token: bearer });
  t.deepEqual(expired.json.status, { user: {}, error: 'service account token has expired' });
  const none = await review({});
  t.is(none.status, 400);
  t.is(none.json.message, 'token is required for TokenReview in authentication');
  t.is((await c.api('GET', '/apis/authentication.k8s.io/v1/tokenreviews')).status, 405);
});

test('SelfSubjectReview of the admin certificate; discovery lists the authentication group', async (t) => {
  const r = await c.api('POST', whoamiPath, whoamiBody);
  t.is(r.status, 201);
  t.deepEqual(r.json.status.userInfo, {
    username: 'nodelet-admin',
    groups: ['system:masters', 'system:authenticated'],
  });
  const group = await c.api('GET', '/apis/authentication.k8s.io');
  t.is(group.json.preferredVersion.groupVersion, 'authentication.k8s.io/v1');
  const resources = (await c.api('GET', '/apis/authentication.k8s.io/v1')).json.resources;
  t.deepEqual(
    resources.map((x: { name: string; verbs: string[]; namespaced: boolean }) => [
      x.name,
      x.verbs,
      x.namespaced,
    ]),
    [
      ['tokenreviews', ['create'], false],
      ['selfsubjectreviews', ['create'], false],
    ],
  );
});

import test from 'ava';
import { createPublicKey, verify } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { VirtualClock } from '@nodelet/kernel';
import { ensureServiceAccountKey } from './serviceaccount/signing-key.js';
import { readyNode, startCluster, type TestCluster } from './test-helpers.js';
import { decodeToken, tokenPath } from './test-tokens.js';

// TokenRequest (POST …/serviceaccounts/<name>/token) through the HTTPS server, on a virtual clock.

const clock = new VirtualClock();
let c: TestCluster;
const issuer = 'https://kubernetes.default.svc.cluster.local';

test.before(async () => {
  c = await startCluster({ clock });
  await c.api('POST', '/api/v1/nodes', readyNode('node-1'));
  await c.api('POST', '/api/v1/namespaces/default/pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web' },
    spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'busybox:1.36' }] },
  });
});

test.after.always(async () => {
  await c?.destroy();
});

const request = (spec: Record<string, unknown> = {}, sa = 'default') =>
  c.api('POST', tokenPath('default', sa), {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec,
  });
const uidOf = async (path: string) => (await c.api('GET', path)).json.metadata.uid as string;
const nowSeconds = () => Math.floor(clock.now() / 1000);
const rfc3339 = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

test('defaults: the API audiences, 3600 s, no bound object; the answer names the ServiceAccount', async (t) => {
  const r = await request();
  t.is(r.status, 201, r.text);
  t.is(r.json.kind, 'TokenRequest');
  t.is(r.json.apiVersion, 'authentication.k8s.io/v1');
  t.like(r.json.metadata, {
    name: 'default',
    namespace: 'default',
    uid: await uidOf('/api/v1/namespaces/default/serviceaccounts/default'),
  });
  t.deepEqual(r.json.spec, { audiences: [issuer], expirationSeconds: 3600, boundObjectRef: null });
  t.is(r.json.status.expirationTimestamp, rfc3339(nowSeconds() + 3600));
  const { header, claims } = decodeToken(r.json.status.token);
  t.is(header.alg, 'ES256');
  t.is(claims.exp - claims.iat, 3600);
});

test('the JWT carries upstream claims and verifies with <dataDir>/pki/sa.pub', async (t) => {
  const pod = await c.api('GET', '/api/v1/namespaces/default/pods/web');
  const r = await request({
    audiences: ['vault', issuer],
    expirationSeconds: 7200,
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: pod.json.metadata.uid },
  });
  t.is(r.status, 201, r.text);
  const token: string = r.json.status.token;
  const { header, claims } = decodeToken(token);
  const publicKey = createPublicKey(await readFile(join(c.dataDir, 'pki', 'sa.pub'), 'utf8'));
  const [h, p, s] = token.split('.') as [string, string, string];
  t.true(
    verify(
      'sha256',
      Buffer.from(`${h}.${p}`),
      { key: publicKey, dsaEncoding: 'ieee-p1363' },
      Buffer.from(s, 'base64url'),
    ),
  );
  t.is(header.kid, (await ensureServiceAccountKey(join(c.dataDir, 'pki'))).keyId);
  const now = nowSeconds();
  t.like(claims, {
    iss: issuer,
    sub: 'system:serviceaccount:default:default',
    iat: now,
    nbf: now,
    exp: now + 7200,
  });
  t.deepEqual(claims.aud, ['vault', issuer]);
  t.regex(claims.jti, /^[0-9a-f-]{36}$/);
  t.deepEqual(claims['kubernetes.io'], {
    namespace: 'default',
    serviceaccount: {
      name: 'default',
      uid: await uidOf('/api/v1/namespaces/default/serviceaccounts/default'),
    },
    pod: { name: 'web', uid: pod.json.metadata.uid },
    node: { name: 'node-1', uid: await uidOf('/api/v1/nodes/node-1') },
  });
});

test('expirationSeconds below 600 is 422 with upstream message', async (t) => {
  const r = await request({ expirationSeconds: 599 });
  t.is(r.status, 422);
  t.is(r.json.reason, 'Invalid');
  t.is(
    r.json.message,
    'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes',
  );
  t.is((await request({ expirationSeconds: 600 })).status, 201, '600 s is the minimum');
});

test('a bound pod that does not exist is 404, a uid that does not match is 409, another ServiceAccount is 400', async (t) => {
  const missing = await request({ boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'nope' } });
  t.is(missing.status, 404);
  t.is(missing.json.message, 'pods "nope" not found');
  const stale = await request({
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'old-uid' },
  });
  t.is(stale.status, 409);
  t.regex(
    stale.json.message,
    /^Operation cannot be fulfilled on Pod "web": the UID in the bound object reference \(old-uid\) does not match the UID in record\. The object might have been deleted and then recreated$/,
  );
  await c.api('POST', '/api/v1/namespaces/default/serviceaccounts', {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'robot' },
  });
  const other = await request({ boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' } }, 'robot');
  t.is(other.status, 400);
  t.is(
    other.json.message,
    'cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.',
  );
  const kind = await request({ boundObjectRef: { kind: 'ConfigMap', apiVersion: 'v1', name: 'x' } });
  t.is(kind.status, 400);
  t.is(kind.json.message, 'cannot bind token to object of type /v1, Kind=ConfigMap');
  const account = await request({}, 'nobody');
  t.is(account.status, 404);
  t.is(account.json.message, 'serviceaccounts "nobody" not found');
});

test('a token can be bound to a Secret or a Node', async (t) => {
  await c.api('POST', '/api/v1/namespaces/default/secrets', {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'anchor' },
  });
  const secret = await request({ boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 'anchor' } });
  t.is(secret.status, 201, secret.text);
  t.deepEqual(decodeToken(secret.json.status.token).claims['kubernetes.io'].secret, {
    name: 'anchor',
    uid: await uidOf('/api/v1/namespaces/default/secrets/anchor'),
  });
  const node = await request({ boundObjectRef: { kind: 'Node', apiVersion: 'v1', name: 'node-1' } });
  t.is(node.status, 201, node.text);
  t.deepEqual(decodeToken(node.json.status.token).claims['kubernetes.io'].node, {
    name: 'node-1',
    uid: await uidOf('/api/v1/nodes/node-1'),
  });
});

test('a pod-bound request for 3607 s gets a year with warnafter, while the answer still says 3607 s', async (t) => {
  const r = await request({
    expirationSeconds: 3607,
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' },
  });
  t.is(r.status, 201, r.text);
  const { claims } = decodeToken(r.json.status.token);
  t.is(claims.exp - claims.iat, 365 * 24 * 3600);
  t.is(claims['kubernetes.io'].warnafter, claims.iat + 3607);
  t.is(r.json.spec.expirationSeconds, 3607);
  t.is(r.json.status.expirationTimestamp, rfc3339(nowSeconds() + 3607));
  const unbound = decodeToken((await request({ expirationSeconds: 3607 })).json.status.token).claims;
  t.is(unbound.exp - unbound.iat, 3607, 'only pod-bound tokens are extended');
  const otherAudience = await request({
    expirationSeconds: 3607,
    audiences: ['vault'],
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' },
  });
  const custom = decodeToken(otherAudience.json.status.token).claims;
  t.is(custom.exp - custom.iat, 3607, 'nor tokens for other audiences');
  t.is(custom['kubernetes.io'].warnafter, undefined);
});

test('the signing key is owner-only and the same after a restart of its loading', async (t) => {
  const dir = join(c.dataDir, 'pki');
  t.is((await stat(join(dir, 'sa.key'))).mode & 0o777, 0o600);
  const a = await ensureServiceAccountKey(dir);
  const b = await ensureServiceAccountKey(dir);
  t.is(a.keyId, b.keyId);
});

test('discovery lists serviceaccounts/token as upstream does', async (t) => {
  const list = await c.api('GET', '/api/v1');
  const token = list.json.resources.find((r: { name: string }) => r.name === 'serviceaccounts/token');
  t.deepEqual(token, {
    name: 'serviceaccounts/token',
    singularName: '',
    namespaced: true,
    group: 'authentication.k8s.io',
    version: 'v1',
    kind: 'TokenRequest',
    verbs: ['create'],
  });
  const get = await c.api('GET', tokenPath('default', 'default'));
  t.is(get.status, 405);
});

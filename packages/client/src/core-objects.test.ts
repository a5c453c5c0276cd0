import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealClock, VirtualClock } from '@nodelet/kernel';
import { ClientNodeApi } from './client-node-api.js';
import { corePath, namedObjectListWatcher, namespaceServicesListWatcher } from './core-objects.js';
import { Informer, type KubeObject } from './informer.js';
import { ApiError } from './kube-api.js';
import { loadKubeConfig } from './kubeconfig.js';
import { FakeKubeApi } from './testing/fake-api.js';

const reflect = { initialBackoffMs: 100, maxBackoffMs: 400 };

test('one object by name: its namespace collection with metadata.name, nothing else reaches the store', async (t) => {
  const clock = new VirtualClock();
  const api = new FakeKubeApi();
  api.put(corePath('configmaps', 'a'), { metadata: { name: 'cfg' }, data: { k: '1' } });
  api.put(corePath('configmaps', 'a'), { metadata: { name: 'other' } });
  api.put(corePath('configmaps', 'b'), { metadata: { name: 'cfg' } });
  const seen: string[] = [];
  const informer = new Informer<KubeObject & { data?: object }>(
    clock,
    namedObjectListWatcher(api, 'configmaps', 'a', 'cfg'),
    {
      added: (o) => seen.push(`+${o.metadata?.namespace}/${o.metadata?.name}`),
      updated: (o) => seen.push(`~${o.metadata?.namespace}/${o.metadata?.name}`),
      deleted: (o) => seen.push(`-${o.metadata?.namespace}/${o.metadata?.name}`),
    },
    reflect,
  );
  informer.start();
  await clock.advance(0);
  t.deepEqual(api.callsOf('list', 'configmaps')[0]!.body, 'metadata.name=cfg');
  t.deepEqual(api.watchedSelectors('/api/v1/namespaces/a/configmaps'), ['metadata.name=cfg']);
  t.is(api.openWatches('/api/v1/namespaces/b/configmaps'), 0);
  api.put(corePath('configmaps', 'a'), { metadata: { name: 'other' }, data: {} });
  api.put(corePath('configmaps', 'b'), { metadata: { name: 'cfg' }, data: {} });
  api.put(corePath('configmaps', 'a'), { metadata: { name: 'cfg' }, data: { k: '2' } });
  api.remove(corePath('configmaps', 'a'), 'a/cfg');
  await clock.advance(0);
  t.deepEqual(seen, ['+a/cfg', '~a/cfg', '-a/cfg']);
  informer.stop();
});

test('services of a namespace: that namespace only, as the cluster-wide path sees them too', async (t) => {
  const api = new FakeKubeApi();
  api.put('/api/v1/services', { metadata: { name: 'kubernetes', namespace: 'default' } });
  api.put('/api/v1/services', { metadata: { name: 'db', namespace: 'team' } });
  const list = await namespaceServicesListWatcher<KubeObject>(api, 'team').list();
  t.deepEqual(
    list.items.map((s) => s.metadata?.name),
    ['db'],
  );
  t.is((await api.list('/api/v1/services')).items.length, 2);
});

test('the fake TokenRequest: the service account must exist, the lifetime at least 10 min, expiry by its clock', async (t) => {
  const api = new FakeKubeApi();
  api.now = () => Date.UTC(2026, 0, 1, 12);
  const request = { spec: { audiences: ['api'], expirationSeconds: 3600 } };
  await t.throwsAsync(api.createServiceAccountToken('default', 'default', request), {
    instanceOf: ApiError,
    message: 'serviceaccounts "default" not found',
  });
  api.put(corePath('serviceaccounts', 'default'), { metadata: { name: 'default' } });
  const answer = await api.createServiceAccountToken('default', 'default', request);
  t.is(answer.status!.expirationTimestamp, '2026-01-01T13:00:00Z');
  t.deepEqual(answer.spec!.audiences, ['api']);
  const claims = JSON.parse(Buffer.from(answer.status!.token.split('.')[1]!, 'base64url').toString());
  t.is(claims.sub, 'system:serviceaccount:default:default');
  t.is(
    (await api.createServiceAccountToken('default', 'default', request)).status!.token,
    answer.status!.token,
  );
  await t.throwsAsync(
    api.createServiceAccountToken('default', 'default', { spec: { audiences: [], expirationSeconds: 60 } }),
    { message: 'spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes' },
  );
});

test('ClientNodeApi: ConfigMap and Secret reads, the token POST and a by-name list, as an API server sees them', async (t) => {
  const seen: { method: string; url: string; body: unknown }[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    seen.push({ method: req.method!, url: req.url!, body: text ? JSON.parse(text) : undefined });
    res.setHeader('Content-Type', 'application/json');
    if (req.url === '/api/v1/namespaces/ns1/configmaps/cfg') {
      res.end(
        JSON.stringify({ kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'ns1' }, data: { k: 'v' } }),
      );
    } else if (req.url === '/api/v1/namespaces/ns1/secrets/s') {
      res.end(
        JSON.stringify({ kind: 'Secret', metadata: { name: 's' }, data: { p: 'cA==' }, type: 'Opaque' }),
      );
    } else if (req.url === '/api/v1/namespaces/ns1/serviceaccounts/sa/token') {
      res.statusCode = 201;
      res.end(
        JSON.stringify({
          kind: 'TokenRequest',
          apiVersion: 'authentication.k8s.io/v1',
          spec: { ...(JSON.parse(text) as { spec: object }).spec, expirationSeconds: 3607 },
          status: { token: 'jwt', expirationTimestamp: '2026-01-01T01:00:07Z' },
        }),
      );
    } else if (req.url!.startsWith('/api/v1/namespaces/ns1/configmaps?')) {
      res.end(JSON.stringify({ kind: 'ConfigMapList', metadata: { resourceVersion: '7' }, items: [] }));
    } else {
      res.statusCode = 404;
      res.end(
        JSON.stringify({ kind: 'Status', reason: 'NotFound', message: `${req.url} not found`, code: 404 }),
      );
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const { port } = server.address() as AddressInfo;
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-kc-'));
  writeFileSync(
    join(dir, 'kc'),
    `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
  );
  const api = new ClientNodeApi(loadKubeConfig(join(dir, 'kc')), { clock: new RealClock() });
  t.teardown(() => api.close());

  t.deepEqual((await api.getConfigMap('ns1', 'cfg')).data, { k: 'v' });
  t.deepEqual((await api.getSecret('ns1', 's')).data, { p: 'cA==' });
  const bound = { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'u1' };
  const answer = await api.createServiceAccountToken('ns1', 'sa', {
    spec: { audiences: ['x'], expirationSeconds: 3600, boundObjectRef: bound },
  });
  t.deepEqual(answer.status, { token: 'jwt', expirationTimestamp: '2026-01-01T01:00:07Z' });
  const post = seen.find((s) => s.method === 'POST')!;
  t.is(post.url, '/api/v1/namespaces/ns1/serviceaccounts/sa/token');
  t.like(post.body, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { audiences: ['x'], expirationSeconds: 3600, boundObjectRef: bound },
  });
  await namedObjectListWatcher(api, 'configmaps', 'ns1', 'cfg').list();
  t.is(seen.at(-1)!.url, '/api/v1/namespaces/ns1/configmaps?fieldSelector=metadata.name%3Dcfg');
  const missing = await t.throwsAsync(api.getConfigMap('ns1', 'nope'));
  t.is((missing as ApiError).code, 404);
});

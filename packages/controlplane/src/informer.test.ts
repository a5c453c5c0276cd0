import test from 'ava';
import * as k8s from '@kubernetes/client-node';
import { startCluster, waitFor, type TestCluster } from './test-helpers.js';

// @kubernetes/client-node's informer (list + watch) stays in sync with the server through 1,000 pod
// creates and deletes, including a forced watch expiry: its watch ends while it is behind, the history it
// would resume from is compacted, the server answers 410 Gone, and the informer lists again.

let c: TestCluster;

test.before(async () => {
  c = await startCluster({ controllers: { scheduler: false, endpointSlices: false } });
});

test.after.always(async () => {
  await c?.destroy();
});

const podBody = (name: string): k8s.V1Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels: { app: 'informer' } },
  spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
});

async function inBatches<T>(items: T[], size: number, run: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(run));
}

test('a client-node informer stays in sync through 1,000 creates and deletes and a 410 relist', async (t) => {
  t.timeout(120_000);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(c.cp.kubeconfigPath);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let lists = 0;
  const informer = k8s.makeInformer(kc, '/api/v1/namespaces/default/pods', () => {
    lists++;
    return core.listNamespacedPod({ namespace: 'default' });
  });
  const errors: unknown[] = [];
  let adds = 0;
  let deletes = 0;
  informer.on('add', () => adds++);
  informer.on('delete', () => deletes++);
  informer.on('error', (err) => errors.push(err));
  await informer.start();

  const names = Array.from({ length: 1000 }, (_, i) => `p-${String(i).padStart(4, '0')}`);
  const first = names.slice(0, 500);
  // The writes go through a keep-alive HTTPS client (client-node opens a TLS connection per request).
  const create = async (name: string) => {
    const r = await c.api('POST', '/api/v1/namespaces/default/pods', podBody(name));
    if (r.status !== 201) throw new Error(r.text);
  };
  const remove = async (name: string) => {
    const r = await c.api('DELETE', `/api/v1/namespaces/default/pods/${name}`, { gracePeriodSeconds: 0 });
    if (r.status !== 200) throw new Error(r.text);
  };
  await inBatches(first, 25, create);
  await inBatches(
    first.filter((_, i) => i % 2 === 0),
    25,
    remove,
  );
  await waitFor(
    () => (informer.list('default').length === 250 ? true : undefined),
    'the informer to see the first 500 creates and 250 deletes',
    30_000,
  );

  // Forced expiry: end the informer's watch, change things while it is away, compact the history it
  // would resume from. Synchronous on the server, so the client cannot come back in between.
  const pods = c.cp.registry.byStorage('pods');
  const listsBefore = lists;
  t.true(c.cp.closeWatches() >= 1);
  for (const name of first.filter((_, i) => i % 2 === 1).slice(0, 50))
    c.cp.registry.delete(pods, 'default', name, { gracePeriodSeconds: 0 });
  for (const name of ['away-1', 'away-2']) c.cp.registry.create(pods, 'default', podBody(name));
  c.cp.compact();
  await waitFor(() => (lists > listsBefore ? true : undefined), 'the relist after 410 Gone', 30_000);

  const second = names.slice(500);
  await inBatches(second, 25, create);
  await inBatches(
    second.filter((_, i) => i % 3 === 0),
    25,
    remove,
  );

  const server = async () => (await core.listNamespacedPod({ namespace: 'default' })).items;
  const expected = await server();
  await waitFor(
    () => {
      const local = new Map(
        informer.list('default').map((p) => [p.metadata!.name!, p.metadata!.resourceVersion]),
      );
      if (local.size !== expected.length) return undefined;
      return expected.every((p) => local.get(p.metadata!.name!) === p.metadata!.resourceVersion)
        ? true
        : undefined;
    },
    'the informer cache to equal the server list',
    30_000,
  );
  const errorsBeforeStop = [...errors];
  await informer.stop(); // (client-node reports its own abort of the watch as an error)
  t.is(expected.length, 250 - 50 + 2 + 500 - 167);
  t.true(lists >= 2, `lists: ${lists}`);
  t.true(adds >= 1000, `adds: ${adds}`);
  t.true(deletes >= 250 + 50 + 167, `deletes: ${deletes}`);
  t.deepEqual(errorsBeforeStop, []);
  t.true(
    c.logs.records.every((r) => r.level !== 'error'),
    c.logs.lines('error').join('\n'),
  );
});

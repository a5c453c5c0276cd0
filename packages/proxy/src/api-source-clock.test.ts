import test from 'ava';
import { FakeKubeApi } from '@nodelet/client/testing';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { ApiSource, PROXY_LABEL_SELECTOR } from './api-source.js';
import type { ProxySourceHandler } from './source.js';

// The API source on the kernel's virtual clock, against @nodelet/client's in-memory API: an outage of
// minutes and its backoff run in milliseconds, deterministically.

const SERVICES = '/api/v1/services';
const SLICES = '/apis/discovery.k8s.io/v1/endpointslices';

test('on virtual time: synced after both lists; an outage backs off 800 ms doubling to 30 s, then resumes', async (t) => {
  const clock = new VirtualClock();
  const api = new FakeKubeApi();
  const logs = new MemorySink();
  api.put(SERVICES, { metadata: { name: 'web', namespace: 'default' }, spec: { clusterIP: '10.96.0.10' } });
  api.put(SLICES, {
    metadata: { name: 'web-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'web' } },
    endpoints: [{ addresses: ['10.244.0.5'] }],
  });
  const calls: string[] = [];
  const handler: ProxySourceHandler = {
    upsertService: (s) => calls.push(`+svc ${s.metadata?.name}`),
    deleteService: (s) => calls.push(`-svc ${s.metadata?.name}`),
    upsertEndpointSlice: (s) => calls.push(`+slice ${s.metadata?.name}`),
    deleteEndpointSlice: (s) => calls.push(`-slice ${s.metadata?.name}`),
    synced: () => calls.push('synced'),
  };
  const source = new ApiSource({
    api,
    clock,
    logger: createLogger({ sink: logs.sink, now: () => clock.now() }),
    random: () => 0,
  });
  source.start(handler);
  await clock.advance(0);
  t.deepEqual(calls.slice().sort(), ['+slice web-1', '+svc web', 'synced']);
  t.is(calls.at(-1), 'synced');
  const watch = api.callsOf('watch', 'services')[0]!.body as Record<string, unknown>;
  t.is(watch.labelSelector, PROXY_LABEL_SELECTOR);
  t.is(watch.timeoutSeconds, 300);

  api.down = true;
  await clock.advance(120_000);
  const waits = logs
    .lines()
    .filter((l) => l.includes('listing or watching Services failed'))
    .map((l) => Number(/retryAfterMs=(\d+)/.exec(l)![1]));
  t.deepEqual(waits.slice(0, 8), [800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000]);
  api.down = false;
  calls.length = 0;
  await clock.advance(30_000);
  api.put(SERVICES, { metadata: { name: 'db', namespace: 'default' }, spec: { clusterIP: '10.96.0.11' } });
  await clock.advance(0);
  t.deepEqual(calls, ['+svc db']);
  t.is(source.lists.Service, 1, 'resumed from its resource version, no relist');
  await source.stop();
  t.is(api.openWatches(), 0);
});

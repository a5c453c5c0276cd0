import test from 'ava';
import type { Pod } from '@nodelet/api';
import type { EventType } from '@nodelet/kernel';
import { PodConfig } from './pod-config.js';
import { testEnv } from './test-env.js';

const pod = (name: string, uid: string, extra: Partial<Pod['metadata']> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', uid, ...extra },
  spec: { containers: [{ name: 'main', image: 'busybox' }] },
});

function setup() {
  const env = testEnv();
  const config = new PodConfig({ bus: env.bus, logger: env.logger, clock: env.clock });
  const seen = (...types: EventType[]) =>
    env.events
      .filter((e) => types.includes(e.type))
      .map((e) => `${e.type.replace('[Source] ', '')} ${'pod' in e ? e.pod.metadata!.name : ''}`.trim());
  return { ...env, config, seen };
}

test('snapshots become Added, Updated (same UID, changed content) and Removed events', (t) => {
  const { config, seen, events } = setup();
  config.apply('file', [pod('a', '1'), pod('b', '2')]);
  t.deepEqual(seen('[Source] Pod Added'), ['Pod Added a', 'Pod Added b']);

  // The same snapshot again: nothing.
  config.apply('file', [pod('a', '1'), pod('b', '2')]);
  t.is(events.length, 2);

  // Only the kubelet's own annotations changed: not an update.
  config.apply('file', [
    pod('a', '1', { annotations: { 'kubernetes.io/config.seen': 'later' } }),
    pod('b', '2'),
  ]);
  t.is(events.length, 2);

  config.apply('file', [pod('a', '1', { annotations: { owner: 'ops' } }), pod('c', '3')]);
  t.deepEqual(seen('[Source] Pod Added', '[Source] Pod Updated', '[Source] Pod Removed').slice(2), [
    'Pod Removed b',
    'Pod Added c',
    'Pod Updated a',
  ]);
  t.deepEqual(
    config.pods().map((p) => p.metadata!.name),
    ['a', 'c'],
  );
});

test('pods carry config.source and keep their first config.seen across updates', async (t) => {
  const { config, clock } = setup();
  config.apply('api', [pod('a', '1')]);
  const first = config.pods()[0]!.metadata!.annotations!;
  t.is(first['kubernetes.io/config.source'], 'api');
  t.is(first['kubernetes.io/config.seen'], new Date(clock.now()).toISOString());
  await clock.advance(5_000);
  config.apply('api', [pod('a', '1', { labels: { v: '2' } })]);
  t.is(
    config.pods()[0]!.metadata!.annotations!['kubernetes.io/config.seen'],
    first['kubernetes.io/config.seen'],
  );
  t.is(config.pods()[0]!.metadata!.labels!.v, '2');
});

test('a full name held by another source is refused once, and admitted when released', (t) => {
  const { config, seen, sink, events } = setup();
  const origins: Record<string, string> = {
    '1': '/etc/kubernetes/manifests/web.yaml',
    '2': 'http://127.0.0.1/pods',
  };
  config.register('file', (p) => origins[p.metadata!.uid!]!);
  config.register('http', (p) => origins[p.metadata!.uid!]!);
  config.apply('file', [pod('web-node1', '1')]);
  config.apply('http', [pod('web-node1', '2')]);
  config.apply('http', [pod('web-node1', '2')]);

  t.deepEqual(
    sink.find('duplicate pod name').map((r) => r.message),
    [
      'duplicate pod name "default/web-node1": already defined by /etc/kubernetes/manifests/web.yaml; ignoring http://127.0.0.1/pods',
    ],
  );
  const rejected = events.filter((e) => e.type === '[Source] Manifest Rejected');
  t.is(rejected.length, 1);
  t.like(rejected[0], { source: 'http', origin: 'http://127.0.0.1/pods' });
  t.deepEqual(config.podsOf('http'), []);

  config.apply('file', []);
  t.deepEqual(seen('[Source] Pod Added', '[Source] Pod Removed'), [
    'Pod Added web-node1',
    'Pod Removed web-node1',
    'Pod Added web-node1',
  ]);
  t.is(config.podsOf('http')[0]!.metadata!.uid, '2');
});

test('a file that changes its pod keeps the name it holds', (t) => {
  const { config } = setup();
  const origin = (p: Pod) => (p.metadata!.uid!.startsWith('b') ? '/m/b.yaml' : '/m/a.yaml');
  config.register('file', origin);
  // b.yaml came first and holds the name; a.yaml (sorted earlier) was refused.
  config.apply('file', [pod('web', 'b1')]);
  config.apply('file', [pod('web', 'a1'), pod('web', 'b1')]);
  t.deepEqual(
    config.pods().map((p) => p.metadata!.uid),
    ['b1'],
  );
  // b.yaml is edited (new UID): it still holds the name.
  config.apply('file', [pod('web', 'a1'), pod('web', 'b2')]);
  t.deepEqual(
    config.pods().map((p) => p.metadata!.uid),
    ['b2'],
  );
});

test('mirror pods share their static pod name without conflict', (t) => {
  const { config, sink } = setup();
  config.apply('file', [pod('web-node1', '1')]);
  config.apply('api', [pod('web-node1', 'm1', { annotations: { 'kubernetes.io/config.mirror': '1' } })]);
  t.is(config.pods().length, 2);
  t.deepEqual(sink.find('duplicate'), []);
});

test('seenAllSources is true once every registered source sent a snapshot', (t) => {
  const { config } = setup();
  t.false(config.seenAllSources());
  config.register('file');
  config.register('http');
  config.apply('file', []);
  t.false(config.seenAllSources());
  config.apply('http', []);
  t.true(config.seenAllSources());
});

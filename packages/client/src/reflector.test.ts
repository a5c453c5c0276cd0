import test from 'ava';
import { VirtualClock } from '@nodelet/kernel';
import { Informer, type KubeObject } from './informer.js';
import { ApiError, type WatchEvent } from './kube-api.js';
import { listWatcher, Reflector } from './reflector.js';
import { FakeKubeApi } from './testing/fake-api.js';

// The Reflector and Informer against the in-memory API, on virtual time: every wait is asserted in
// virtual milliseconds, none is slept for.

const SERVICES = '/api/v1/services';
const svc = (name: string, labels: Record<string, string> = {}) => ({
  kind: 'Service',
  metadata: { name, namespace: 'default', labels },
  spec: { clusterIP: '10.96.0.10' },
});

function setup(options: { minWatchMs?: number } = {}) {
  const clock = new VirtualClock();
  const api = new FakeKubeApi();
  const seen: string[] = [];
  const errors: { phase: string; retryAfterMs: number; at: number }[] = [];
  const informer = new Informer(
    clock,
    listWatcher<KubeObject>(api, SERVICES, { labelSelector: '!skip' }),
    {
      added: (o) => seen.push(`+${o.metadata?.name}`),
      updated: (o) => seen.push(`~${o.metadata?.name}`),
      deleted: (o) => seen.push(`-${o.metadata?.name}`),
      listed: () => seen.push('listed'),
    },
    {
      initialBackoffMs: 100,
      maxBackoffMs: 400,
      ...options,
      onError: (phase, _err, retryAfterMs) => errors.push({ phase, retryAfterMs, at: clock.elapsed() }),
    },
  );
  return { clock, api, informer, seen, errors };
}

test('lists, then watches from the list version with its selector; events reach the store and handlers', async (t) => {
  const { clock, api, informer, seen } = setup();
  api.put(SERVICES, svc('a'));
  api.put(SERVICES, svc('hidden', { skip: 'yes' }));
  informer.start();
  await clock.advance(0);
  t.deepEqual(seen, ['+a', 'listed']);
  t.true(informer.hasSynced);
  const watch = api.callsOf('watch', 'services')[0]!.body as Record<string, unknown>;
  t.is(watch.resourceVersion, informer.resourceVersion);
  t.is(watch.labelSelector, '!skip');
  api.put(SERVICES, svc('b'));
  api.put(SERVICES, svc('a'));
  api.remove(SERVICES, 'default/b');
  await clock.advance(0);
  t.deepEqual(seen.slice(2), ['+b', '~a', '-b']);
  t.deepEqual([...informer.store.keys()], ['default/a']);
  t.is(informer.lists, 1);
  informer.stop();
  t.is(api.openWatches(), 0);
});

test('a bookmark moves the version a resumed watch starts from; a closed watch resumes without a list', async (t) => {
  const { clock, api, informer } = setup();
  informer.start();
  await clock.advance(0);
  api.put('/api/v1/pods', { metadata: { name: 'elsewhere', namespace: 'x' } }); // moves the version on
  api.bookmark();
  await clock.advance(0);
  const bookmarked = informer.resourceVersion;
  const listed = (api.callsOf('watch', 'services')[0]!.body as { resourceVersion: string }).resourceVersion;
  t.true(Number(bookmarked) > Number(listed), 'the bookmark is newer than the list');
  await clock.advance(5_000); // the watch has been open a while: its end is a normal server timeout
  api.endWatches(SERVICES);
  await clock.advance(0);
  const watches = api.callsOf('watch', 'services');
  t.is(watches.length, 2);
  t.is((watches[1]!.body as { resourceVersion: string }).resourceVersion, bookmarked);
  t.is(informer.lists, 1, 'no relist');
});

test('410 Gone lists again at once; what vanished is deleted, what stayed unchanged is not re-sent', async (t) => {
  const { clock, api, informer, seen } = setup();
  api.put(SERVICES, svc('a'));
  api.put(SERVICES, svc('b'));
  informer.start();
  await clock.advance(0);
  seen.length = 0;
  api.collections.get(SERVICES)!.delete('default/b'); // history lost: b vanished without an event
  api.compact();
  api.put(SERVICES, svc('c'));
  await clock.advance(0);
  t.is(informer.lists, 2);
  t.deepEqual(seen, ['-b', '+c', 'listed']);
});

test('failed lists back off 100, 200, 400, 400 ms (virtual) and the first success resets the wait', async (t) => {
  const { clock, api, informer, errors } = setup();
  api.down = true;
  informer.start();
  await clock.advance(1_099);
  t.deepEqual(
    errors.map((e) => [e.phase, e.at, e.retryAfterMs]),
    [
      ['list', 0, 100],
      ['list', 100, 200],
      ['list', 300, 400],
      ['list', 700, 400],
    ],
  );
  api.down = false;
  await clock.advance(1);
  t.true(informer.hasSynced);
  // The watch fails (the server goes away again): the wait starts from the first step again.
  api.down = true;
  await clock.advance(0);
  t.deepEqual(
    errors.slice(4).map((e) => [e.phase, e.retryAfterMs]),
    [['watch', 100]],
  );
  api.down = false;
  await clock.advance(100);
  t.is(api.openWatches(SERVICES), 1);
  t.is(informer.lists, 1, 'the watch resumed from its version');
});

test('a server that ends every watch at once, empty, is watched again only after a growing backoff', async (t) => {
  const clock = new VirtualClock();
  const starts: number[] = [];
  const reflector = new Reflector(
    clock,
    {
      list: async () => ({ items: [], resourceVersion: '1' }),
      watch: () => {
        starts.push(clock.elapsed());
        return { stop: () => undefined, done: Promise.resolve(undefined) };
      },
    },
    { replace: () => undefined, event: () => undefined },
    { initialBackoffMs: 100, maxBackoffMs: 400 },
  );
  reflector.start();
  await clock.advance(1_600);
  t.deepEqual(starts, [0, 100, 300, 700, 1100, 1500]);
  reflector.stop();
  await clock.advance(10_000);
  t.is(starts.length, 6);
  t.is(clock.pendingTimers(), 0);
});

test('an ERROR event other than 410 lists again after a backoff', async (t) => {
  const clock = new VirtualClock();
  let lists = 0;
  let send: ((e: WatchEvent) => void) | undefined;
  let end: ((err: unknown) => void) | undefined;
  const reflector = new Reflector<unknown>(
    clock,
    {
      list: async () => ({ items: [], resourceVersion: String(++lists) }),
      watch: (_rv, onEvent) => {
        send = onEvent;
        return { stop: () => end?.(undefined), done: new Promise((resolve) => (end = resolve)) };
      },
    },
    { replace: () => undefined, event: () => undefined },
    { initialBackoffMs: 100, maxBackoffMs: 400 },
  );
  reflector.start();
  await clock.advance(0);
  send!({ type: 'ERROR', object: { kind: 'Status', code: 500, reason: 'InternalError' } });
  await clock.advance(50);
  t.is(lists, 1);
  await clock.advance(50);
  t.is(lists, 2);
  // A watch that fails with an error (not an event) resumes from its version instead.
  end!(new ApiError(0, 'Unavailable', 'connection reset'));
  await clock.advance(1_000);
  t.is(lists, 2);
  reflector.stop();
});

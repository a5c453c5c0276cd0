import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, MemorySink, RealClock, VirtualClock } from '@nodelet/kernel';
import { ClientNodeApi, loadKubeConfig, toApiError, toWire } from './client-node-api.js';
import { EventRecorder } from './event-recorder.js';
import { FakeKubeApi } from './fake-api.js';
import { ApiError, rfc3339Micro } from './kube-api.js';
import { TokenBucket } from './rate-limiter.js';

test('token bucket: burst at once, then qps per second, in order', async (t) => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket(clock, 50, 100);
  const done: number[] = [];
  for (let i = 0; i < 150; i++) void bucket.take().then(() => done.push(clock.elapsed()));
  await clock.advance(0);
  t.is(done.length, 100, 'the burst');
  await clock.advance(500);
  t.is(done.length, 125, '50 per second');
  await clock.advance(500);
  t.is(done.length, 150);
  t.true(
    done.every((v, i) => i === 0 || v >= done[i - 1]!),
    'in order',
  );
  t.false(bucket.tryTake(), 'empty again');
});

test('kubeconfig: missing, not YAML, no current context — each a message naming the file', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-kc-'));
  t.throws(() => loadKubeConfig(join(dir, 'nope')), {
    message: `kubeconfig ${join(dir, 'nope')}: no such file`,
  });
  writeFileSync(join(dir, 'bad'), 'clusters: [not: closed\n');
  t.throws(() => loadKubeConfig(join(dir, 'bad')), {
    message: new RegExp(`^kubeconfig ${join(dir, 'bad')} could not be loaded: `),
  });
  writeFileSync(join(dir, 'empty'), 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
  t.throws(() => loadKubeConfig(join(dir, 'empty')), {
    message: `kubeconfig ${join(dir, 'empty')} has no current cluster: set current-context to a context whose cluster exists`,
  });
});

test('an unreachable server is an ApiError with code 0 that names the server', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-kc-'));
  writeFileSync(
    join(dir, 'kc'),
    'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
  );
  const api = new ClientNodeApi(loadKubeConfig(join(dir, 'kc')), { clock: new RealClock() });
  const err = await t.throwsAsync(api.getNode('n1'));
  t.true(err instanceof ApiError);
  t.is((err as ApiError).code, 0);
  t.regex(
    err!.message,
    /^get node n1: the API server at https:\/\/127\.0\.0\.1:1 is unreachable: .*ECONNREFUSED/,
  );
  api.close();
});

test('API errors keep the Status reason and message; models become plain JSON with RFC 3339 times', (t) => {
  const conflict = toApiError(
    {
      code: 409,
      body: JSON.stringify({ kind: 'Status', reason: 'Conflict', message: 'the object has been modified' }),
    },
    'https://x',
    'update lease kube-node-lease/n1',
  );
  t.is(conflict.code, 409);
  t.is(conflict.reason, 'Conflict');
  t.is(conflict.message, 'update lease kube-node-lease/n1: the object has been modified (HTTP 409)');
  t.is(toApiError({ code: 404, body: '' }, 'https://x', 'get').reason, 'NotFound');
  t.deepEqual(
    toWire({
      metadata: { creationTimestamp: new Date(Date.UTC(2026, 0, 1)), x: undefined },
      list: [new Date(1)],
    }),
    {
      metadata: { creationTimestamp: '2026-01-01T00:00:00Z' },
      list: ['1970-01-01T00:00:00.001Z'],
    },
  );
  t.is(rfc3339Micro(Date.UTC(2026, 0, 1, 0, 0, 0, 123)), '2026-01-01T00:00:00.123000Z');
});

function recorder(api: FakeKubeApi, clock: VirtualClock, options = {}) {
  const logs = new MemorySink();
  const r = new EventRecorder(api, clock, createLogger({ sink: logs.sink }), { nodeName: 'n1', ...options });
  r.start();
  return r;
}

const pod = { metadata: { name: 'p', namespace: 'default', uid: 'u1' } };

test('events: an identical event is counted on one Event; more than 10 similar ones are combined', async (t) => {
  const clock = new VirtualClock();
  const api = new FakeKubeApi();
  const r = recorder(api, clock);
  r.pod(pod, 'Warning', 'BackOff', 'Back-off restarting failed container main');
  await clock.advance(1_000);
  r.pod(pod, 'Warning', 'BackOff', 'Back-off restarting failed container main');
  await clock.advance(1_000);
  t.is(api.events.size, 1);
  const e = [...api.events.values()][0]!;
  t.is(e.count, 2);
  t.is(e.firstTimestamp, '2026-01-01T00:00:00Z');
  t.is(e.lastTimestamp, '2026-01-01T00:00:01Z');
  for (let i = 0; i < 12; i++) r.pod(pod, 'Warning', 'Failed', `Error: attempt ${i}`);
  await clock.advance(1_000);
  const failed = [...api.events.values()].filter((x) => x.reason === 'Failed');
  t.is(failed.length, 11, '10 distinct, then one combined');
  t.true(
    failed.some((x) => x.message === '(combined from similar events): Error: attempt 11' && x.count === 2),
  );
  r.stop();
});

test('events: the per-object spam filter (25, then one per 5 min) and the write rate limit', async (t) => {
  const clock = new VirtualClock();
  const api = new FakeKubeApi();
  const r = recorder(api, clock, { qps: 5, burst: 10 });
  for (let i = 0; i < 40; i++) r.pod(pod, 'Normal', `Reason${i}`, 'm');
  await clock.advance(0);
  t.is(api.events.size, 10, 'the burst');
  await clock.advance(1_000);
  t.is(api.events.size, 15, '5 more per second');
  await clock.advance(10_000);
  t.is(api.events.size, 25, 'then the spam filter: 25 per object');
  await clock.advance(300_000);
  r.pod(pod, 'Normal', 'Later', 'm');
  await clock.advance(1_000);
  t.is(api.events.size, 26, 'one more after 5 min');
  r.stop();
});

test('events: while the API server is away they wait (bounded queue) and are written when it returns', async (t) => {
  const clock = new VirtualClock();
  const api = new FakeKubeApi();
  api.down = true;
  const r = recorder(api, clock, { maxQueued: 5 });
  for (let i = 0; i < 8; i++)
    r.pod({ metadata: { name: `p${i}`, namespace: 'default', uid: `u${i}` } }, 'Normal', 'Started', 'x');
  await clock.advance(5_000);
  t.is(r.queued, 5, 'the oldest were dropped');
  api.down = false;
  await clock.advance(10_000);
  t.is(api.events.size, 5);
  t.is(r.queued, 0);
  r.stop();
});

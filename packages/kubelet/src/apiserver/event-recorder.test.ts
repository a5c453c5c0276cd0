import test from 'ava';
import { FakeKubeApi } from '@nodelet/client/testing';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { EventRecorder } from './event-recorder.js';

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

import test from 'ava';
import { VirtualClock } from '@nodelet/kernel';
import { SyncRunner } from './sync-runner.js';

function setup() {
  const clock = new VirtualClock();
  const runs: number[] = [];
  const runner = new SyncRunner(
    async () => {
      runs.push(clock.elapsed());
    },
    { minIntervalMs: 1000, maxIntervalMs: 30_000, clock },
  );
  return { clock, runs, runner };
}

test('runs at start, then every syncPeriod without requests', async (t) => {
  const { clock, runs, runner } = setup();
  runner.start();
  await clock.advance(95_000);
  t.deepEqual(runs, [0, 30_000, 60_000, 90_000]);
  await runner.stop();
});

test('requests run at once but never closer than minSyncPeriod; bursts coalesce', async (t) => {
  const { clock, runs, runner } = setup();
  runner.start();
  await clock.advance(100);
  runner.run();
  runner.run();
  runner.run();
  await clock.advance(2000);
  t.deepEqual(runs, [0, 1000], 'three requests 100 ms after a run: one run, at 1 s');
  await clock.advance(3000);
  runner.run();
  await clock.advance(0);
  t.deepEqual(runs, [0, 1000, 5100], 'long after the last run: at once');
  await clock.advance(30_000);
  t.deepEqual(runs, [0, 1000, 5100, 35_100], 'the periodic run counts from the last run');
  await runner.stop();
});

test('retryAfter runs again without a request, not before minSyncPeriod', async (t) => {
  const { clock, runs, runner } = setup();
  runner.start();
  await clock.advance(0);
  runner.retryAfter(200);
  await clock.advance(5000);
  t.deepEqual(runs, [0, 1000]);
  await runner.stop();
});

test('stop cancels the timer', async (t) => {
  const { clock, runs, runner } = setup();
  runner.start();
  await clock.advance(0);
  await runner.stop();
  runner.run();
  await clock.advance(60_000);
  t.deepEqual(runs, [0]);
  t.is(clock.pendingTimers(), 0);
});

import test from 'ava';
import { VirtualClock } from './clock.js';
import { DeadlineExceededError } from './deadline.js';

test('loop runs at once, then a period after each run ends, one run at a time', async (t) => {
  const clock = new VirtualClock();
  const starts: number[] = [];
  const loop = clock.loop(
    async () => {
      starts.push(clock.elapsed());
      await clock.sleep(300); // the step itself takes time: the period counts from its end
    },
    { period: 1000 },
  );
  await clock.advance(4000);
  t.deepEqual(starts, [0, 1300, 2600, 3900]);
  loop.stop();
  await clock.advance(10_000);
  t.is(starts.length, 4);
  t.is(clock.pendingTimers(), 0);
});

test('loop backs off on failures (throw or false) up to maxMs and resets after a success', async (t) => {
  const clock = new VirtualClock();
  const outcomes = ['throw', false, false, false, true, false];
  const starts: number[] = [];
  const errors: unknown[] = [];
  clock.loop(
    () => {
      starts.push(clock.elapsed());
      const outcome = outcomes.shift() ?? true;
      if (outcome === 'throw') throw new Error('boom');
      return outcome as boolean;
    },
    { period: 100, backoff: { initialMs: 1000, maxMs: 3000 }, onError: (e) => errors.push(e) },
  );
  await clock.advance(20_000);
  // 0 throws → +1000; fails → +2000; fails → +3000 (capped); fails → +3000; succeeds → +100; fails → +1000.
  t.deepEqual(starts.slice(0, 7), [0, 1000, 3000, 6000, 9000, 9100, 10_100]);
  t.is(errors.length, 1);
});

test('kick runs the step early; a kick during a run runs it once more right after', async (t) => {
  const clock = new VirtualClock();
  const starts: number[] = [];
  let release: (() => void) | undefined;
  const loop = clock.loop(
    () => {
      starts.push(clock.elapsed());
      if (starts.length === 2) return new Promise<void>((resolve) => (release = resolve));
    },
    { period: 10_000 },
  );
  await clock.advance(500);
  loop.kick();
  await clock.advance(0);
  t.deepEqual(starts, [0, 500]);
  loop.kick(); // while the second run waits
  loop.kick(); // kicks during a run coalesce into one more run
  release!();
  await clock.advance(0);
  t.deepEqual(starts, [0, 500, 500]);
  loop.kickAfter(20_000); // later than the next period: no effect
  loop.kickAfter(2000);
  await clock.advance(2000);
  t.deepEqual(starts, [0, 500, 500, 2500]);
  loop.stop();
  loop.kick();
  await clock.advance(20_000);
  t.is(starts.length, 4);
});

test('a step may name its next run; jitter lengthens waits by up to its fraction', async (t) => {
  const clock = new VirtualClock();
  const starts: number[] = [];
  clock.loop(
    () => {
      starts.push(clock.elapsed());
      return starts.length === 1 ? { after: 50 } : undefined;
    },
    { period: 1000, jitter: 0.5, random: () => 1, initialDelay: 10 },
  );
  await clock.advance(3000);
  t.deepEqual(starts, [10, 60, 1560]);
});

test('deadline aborts its signal on the clock; cancel and a parent abort behave', async (t) => {
  const clock = new VirtualClock();
  const deadline = clock.deadline(1000);
  await clock.advance(999);
  t.false(deadline.signal.aborted);
  await clock.advance(1);
  t.true(deadline.signal.aborted);
  t.true(deadline.expired);
  t.true(deadline.signal.reason instanceof DeadlineExceededError);
  t.is((deadline.signal.reason as Error).name, 'TimeoutError');

  const cancelled = clock.deadline(1000);
  cancelled.cancel();
  t.is(clock.pendingTimers(), 0);
  await clock.advance(2000);
  t.false(cancelled.signal.aborted);

  const parent = new AbortController();
  const child = clock.deadline(1000, parent.signal);
  parent.abort(new Error('pod stopped'));
  t.true(child.signal.aborted);
  t.false(child.expired);
  t.is((child.signal.reason as Error).message, 'pod stopped');
  t.is(clock.pendingTimers(), 0);
});

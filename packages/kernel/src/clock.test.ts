import test from 'ava';
import { timer } from 'rxjs';
import { VirtualClock } from './clock.js';

test('advance fires timers in order and lets async chains they start schedule more timers', async (t) => {
  const clock = new VirtualClock();
  const fired: number[] = [];
  const chain = async () => {
    for (let i = 0; i < 3; i++) {
      await clock.sleep(1000);
      await Promise.resolve();
      fired.push(clock.elapsed());
    }
  };
  void chain();
  timer(1500, clock.scheduler).subscribe(() => fired.push(clock.elapsed()));
  await clock.advance(2999);
  t.deepEqual(fired, [1000, 1500, 2000]);
  await clock.advance(1);
  t.deepEqual(fired, [1000, 1500, 2000, 3000]);
  t.is(clock.pendingTimers(), 0);
});

test('sleep rejects when aborted and cancels its timer', async (t) => {
  const clock = new VirtualClock();
  const ac = new AbortController();
  const p = clock.sleep(10_000, ac.signal);
  ac.abort(new Error('stopped'));
  await t.throwsAsync(p, { message: 'stopped' });
  t.is(clock.pendingTimers(), 0);
});

test('track with patience: virtual time waits that long in real time for I/O that never finishes, then moves on', async (t) => {
  const clock = new VirtualClock();
  const started = performance.now(); // before the patience timer starts: it runs from track()
  clock.track(new Promise(() => {}), 50);
  const fired: number[] = [];
  clock.setTimeout(() => fired.push(clock.elapsed()), 1000);
  await clock.advance(1000);
  t.deepEqual(fired, [1000]);
  t.true(performance.now() - started >= 45, 'waited for the I/O first');
  // Work that finishes in time is waited for, as without patience.
  let done = false;
  clock.track(
    new Promise<void>((resolve) => setTimeout(resolve, 20)).then(() => (done = true)),
    10_000,
  );
  await clock.advance(0);
  t.true(done);
});

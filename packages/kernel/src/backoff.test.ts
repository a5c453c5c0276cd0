import test from 'ava';
import { Backoff } from './backoff.js';
import { VirtualClock } from './clock.js';

test('delays double from 10 s to a 300 s cap', (t) => {
  const clock = new VirtualClock();
  const backoff = new Backoff(clock);
  const delays = Array.from({ length: 8 }, () => backoff.next('c') / 1000);
  t.deepEqual(delays, [10, 20, 40, 80, 160, 300, 300, 300]);
});

test('a key in backoff stays there exactly for its delay after the failure', async (t) => {
  const clock = new VirtualClock();
  const backoff = new Backoff(clock);
  const failedAt = clock.now();
  backoff.next('c', failedAt);
  t.true(backoff.isInBackoffSince('c', failedAt));
  await clock.advance(9_999);
  t.true(backoff.isInBackoffSince('c', failedAt));
  await clock.advance(1);
  t.false(backoff.isInBackoffSince('c', failedAt));
});

test('starts over after 600 s (twice the cap) without a failure', async (t) => {
  const clock = new VirtualClock();
  const backoff = new Backoff(clock);
  for (let i = 0; i < 6; i++) backoff.next('c');
  t.is(backoff.get('c'), 300_000);
  await clock.advance(600_000);
  t.is(backoff.next('c'), 300_000, '600 s is not yet more than twice the cap');
  await clock.advance(600_001);
  t.is(backoff.next('c'), 10_000);
});

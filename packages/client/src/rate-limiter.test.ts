import test from 'ava';
import { VirtualClock } from '@nodelet/kernel';
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

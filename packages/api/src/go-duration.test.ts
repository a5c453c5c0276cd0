import test from 'ava';
import { parseGoDuration } from './go-duration.js';

test('Go duration strings in milliseconds, as KubeletConfiguration and KubeProxyConfiguration write them', (t) => {
  t.is(parseGoDuration('0'), 0);
  t.is(parseGoDuration('20s'), 20_000);
  t.is(parseGoDuration('1m0s'), 60_000);
  t.is(parseGoDuration('1h30m'), 5_400_000);
  t.is(parseGoDuration('500ms'), 500);
  t.is(parseGoDuration('1.5s'), 1500);
  t.is(parseGoDuration('250us'), 0.25);
});

test('anything else is not a duration (the caller names the field)', (t) => {
  for (const bad of ['', '20', '1 second', '-1s', 's', '1d', '1s ', 'abc'])
    t.is(parseGoDuration(bad), undefined, bad);
});

import test from 'ava';
import { NodeletError } from '@nodelet/kernel';
import { grpcTarget, unixSocketPath } from './address.js';
import {
  CriAnnotations,
  CriLabels,
  containerLogPath,
  formatCriLog,
  formatCriLogLine,
  formatRfc3339Nano,
  matchesLabelSelector,
  msToNanos,
  nanosToMs,
  parseCriLogLine,
  parseRfc3339Nano,
  podLogsDirectory,
} from './helpers.js';

test('nanosToMs / msToNanos', (t) => {
  t.is(nanosToMs(1_759_000_000_123_456_789n), 1_759_000_000_123);
  t.is(nanosToMs(0n), 0);
  t.is(nanosToMs(-1n), -1);
  t.is(msToNanos(1_759_000_000_123), 1_759_000_000_123_000_000n);
  t.is(msToNanos(1.5), 1_500_000n);
  t.is(nanosToMs(msToNanos(Date.UTC(2025, 0, 1))), Date.UTC(2025, 0, 1));
  t.throws(() => msToNanos(NaN), { instanceOf: NodeletError });
});

test('RFC 3339 with nanoseconds: Go RFC3339Nano formatting (trailing zeros dropped) and parsing', (t) => {
  const ns = parseRfc3339Nano('2016-10-06T00:17:09.669794202Z');
  t.is(ns, 1_475_713_029_669_794_202n);
  t.is(formatRfc3339Nano(ns), '2016-10-06T00:17:09.669794202Z');
  t.is(formatRfc3339Nano(1_475_713_029_500_000_000n), '2016-10-06T00:17:09.5Z');
  t.is(formatRfc3339Nano(1_475_713_029_000_000_000n), '2016-10-06T00:17:09Z');
  t.is(parseRfc3339Nano('2016-10-06T02:17:09.5+02:00'), 1_475_713_029_500_000_000n);
  t.is(parseRfc3339Nano('1970-01-01T00:00:00Z'), 0n);
  t.is(formatRfc3339Nano(-1n), '1969-12-31T23:59:59.999999999Z');
  t.throws(() => parseRfc3339Nano('2016-10-06 00:17:09Z'), { instanceOf: NodeletError });
  t.throws(() => parseRfc3339Nano('2016-10-06T00:17:09.1234567891Z'), { instanceOf: NodeletError });
});

test('CRI log lines: format and parse round-trip', (t) => {
  const text = '2016-10-06T00:17:09.669794202Z stdout F hello, world\n';
  const line = parseCriLogLine(text);
  t.deepEqual(line, {
    time: 1_475_713_029_669_794_202n,
    stream: 'stdout',
    partial: false,
    content: 'hello, world',
  });
  t.is(formatCriLogLine(line), text);

  const partial = { time: 1n, stream: 'stderr' as const, partial: true, content: 'no newline yet  ' };
  t.deepEqual(parseCriLogLine(formatCriLogLine(partial)), partial);
  t.deepEqual(parseCriLogLine('2016-10-06T00:17:09Z stdout F '), {
    time: 1_475_713_029_000_000_000n,
    stream: 'stdout',
    partial: false,
    content: '',
  });
  // Extra tags after P/F are allowed and ignored.
  t.is(parseCriLogLine('2016-10-06T00:17:09Z stdout P:x a b').content, 'a b');
  t.true(parseCriLogLine('2016-10-06T00:17:09Z stdout P:x a b').partial);

  for (const bad of [
    '',
    'garbage',
    '2016-10-06T00:17:09Z stdin F x',
    '2016-10-06T00:17:09Z stdout X x',
    'notatime stdout F x',
    '2016-10-06T00:17:09Z stdout F',
  ]) {
    t.throws(() => parseCriLogLine(bad), { instanceOf: NodeletError }, bad);
  }
});

test('formatCriLog splits output into full lines and a trailing partial one', (t) => {
  const at = 1_475_713_029_669_794_202n;
  const out = formatCriLog(at, 'stdout', 'one\ntwo\nthr');
  t.is(
    out,
    '2016-10-06T00:17:09.669794202Z stdout F one\n' +
      '2016-10-06T00:17:09.669794202Z stdout F two\n' +
      '2016-10-06T00:17:09.669794202Z stdout P thr\n',
  );
  t.is(formatCriLog(at, 'stderr', ''), '');
  t.is(formatCriLog(at, 'stderr', '\n'), '2016-10-06T00:17:09.669794202Z stderr F \n');
});

test('label and annotation keys are upstream kubelet ones', (t) => {
  t.is(CriLabels.PodName, 'io.kubernetes.pod.name');
  t.is(CriLabels.PodNamespace, 'io.kubernetes.pod.namespace');
  t.is(CriLabels.PodUID, 'io.kubernetes.pod.uid');
  t.is(CriLabels.ContainerName, 'io.kubernetes.container.name');
  t.is(CriAnnotations.ContainerHash, 'io.kubernetes.container.hash');
  t.is(CriAnnotations.ContainerRestartCount, 'io.kubernetes.container.restartCount');
  t.is(CriAnnotations.PodTerminationGracePeriod, 'io.kubernetes.pod.terminationGracePeriod');
  t.is(CriAnnotations.ContainerTerminationMessagePath, 'io.kubernetes.container.terminationMessagePath');
});

test('label selectors, log paths and addresses', (t) => {
  t.true(matchesLabelSelector({ a: '1', b: '2' }, { a: '1' }));
  t.true(matchesLabelSelector({ a: '1' }, {}));
  t.true(matchesLabelSelector(undefined, undefined));
  t.false(matchesLabelSelector({ a: '1' }, { a: '2' }));
  t.false(matchesLabelSelector(undefined, { a: '1' }));

  t.is(podLogsDirectory('/var/log/pods/', 'default', 'web', 'u-1'), '/var/log/pods/default_web_u-1');
  t.is(containerLogPath('app', 2), 'app/2.log');

  t.is(grpcTarget('/run/containerd/containerd.sock'), 'unix:///run/containerd/containerd.sock');
  t.is(grpcTarget('127.0.0.1:1234'), '127.0.0.1:1234');
  t.is(unixSocketPath('unix:///run/x.sock'), '/run/x.sock');
  t.is(unixSocketPath('unix:/run/x.sock'), '/run/x.sock');
  t.is(unixSocketPath('/run/x.sock'), '/run/x.sock');
  t.is(unixSocketPath('127.0.0.1:1'), undefined);
});

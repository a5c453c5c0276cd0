import test from 'ava';
import { isErrorCode } from '@nodelet/kernel';
import {
  behaviorsFromAnnotations,
  parseBehavior,
  parseDuration,
  PLAIN_BEHAVIOR,
  resolveBehavior,
} from './behavior.js';

test('durations', (t) => {
  const cases: Array<[string, number | undefined]> = [
    ['5s', 5000],
    ['250ms', 250],
    ['1m30s', 90_000],
    ['1.5s', 1500],
    ['2h', 7_200_000],
    ['0', 0],
    ['3', 3000],
    ['5 s', undefined],
    ['soon', undefined],
    ['-1s', undefined],
  ];
  for (const [text, ms] of cases) t.is(parseDuration(text), ms, text);
});

test('behaviour values: pairs, bare booleans, quoted text with commas and escapes', (t) => {
  t.deepEqual(parseBehavior('exitAfter=5s,exitCode=1'), { exitAfterMs: 5000, exitCode: 1 });
  t.deepEqual(parseBehavior(' ignoreStop , startDelay=2s '), { ignoreStop: true, startDelayMs: 2000 });
  t.deepEqual(parseBehavior('crashLoop=true,oom=false'), { crashLoop: true, oom: false });
  t.deepEqual(parseBehavior('stdout="a, \\"b\\"\\nc",failStart=boom'), {
    stdout: 'a, "b"\nc',
    failStart: 'boom',
  });
  t.deepEqual(parseBehavior(''), {});
});

test('behaviour errors name the key and what it takes', (t) => {
  const cases: Array<[string, RegExp]> = [
    ['exitAftr=5s', /^unknown key "exitAftr"; known keys: /],
    ['exitAfter', /"exitAfter" takes a duration/],
    ['exitCode=256', /"exitCode" takes an exit code from 0 to 255, not "256"/],
    ['ignoreStop=yes', /"ignoreStop" takes true or false, not "yes"/],
    ['stdout', /"stdout" needs a value/],
    ['stdout="open', /unterminated quoted value for "stdout"/],
  ];
  for (const [text, message] of cases) {
    const err = t.throws(() => parseBehavior(text), { message }, text);
    t.true(isErrorCode(err, 'InvalidInput'));
  }
});

test('annotations: by container name or all; others are ignored', (t) => {
  const found = behaviorsFromAnnotations({
    'runtime-fake.nodelet.dev/app': 'exitAfter=1s',
    'runtime-fake.nodelet.dev/all': 'startDelay=1s',
    'example.com/other': 'x',
  });
  t.deepEqual(
    [...found!.entries()],
    [
      ['app', { exitAfterMs: 1000 }],
      ['all', { startDelayMs: 1000 }],
    ],
  );
  t.is(behaviorsFromAnnotations({ a: 'b' }), undefined);
});

test('resolving: later layers win field by field; crashLoop and oom defaults', (t) => {
  t.is(resolveBehavior([]), PLAIN_BEHAVIOR);
  t.like(resolveBehavior([{ crashLoop: true }]), { exitAfterMs: 1000, exitCode: 1, exitReason: undefined });
  t.like(resolveBehavior([{ crashLoop: true }, { exitCode: 2 }]), { exitAfterMs: 1000, exitCode: 2 });
  t.like(resolveBehavior([{ oom: true, exitAfterMs: 30_000 }]), {
    exitAfterMs: 30_000,
    exitCode: 137,
    exitReason: 'OOMKilled',
  });
  t.like(resolveBehavior([{ ignoreStop: true }]), { stopDelayMs: Infinity, stopExitCode: 143 });
  t.like(resolveBehavior([{ ignoreStop: true }, { ignoreStop: false, stopDelayMs: 100 }]), {
    stopDelayMs: 100,
  });
  t.like(resolveBehavior([{ exitAfterMs: 5 }, { exitAfterMs: undefined }]), { exitAfterMs: 5 });
});

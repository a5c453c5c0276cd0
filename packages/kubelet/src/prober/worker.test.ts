import test from 'ava';
import { PodEventLog } from './pod-events.js';
import { goDuration, probeTiming, resolveContainerPort } from './probe-spec.js';
import { countResult, initialResult, type RunState } from './worker.js';

/** The pure parts of the prober, table-driven. */

test('countResult: a result stands after its threshold of identical results in a row', (t) => {
  const timing = { successThreshold: 2, failureThreshold: 3 };
  const table: ['success' | 'failure', boolean][] = [
    ['failure', false],
    ['failure', false],
    ['success', false], // the failure run is broken
    ['failure', false],
    ['failure', false],
    ['failure', true], // third in a row
    ['failure', true], // still failing: stands
    ['success', false],
    ['success', true], // second success in a row
  ];
  let state: RunState = { run: 0 };
  table.forEach(([result, commit], i) => {
    const next = countResult(state, result, timing);
    t.is(next.commit, commit, `step ${i}: ${result}`);
    state = next.state;
  });
});

test('initial results: liveness is alive until proven dead; readiness and startup unknown', (t) => {
  t.is(initialResult('liveness'), 'success');
  t.is(initialResult('readiness'), 'unknown');
  t.is(initialResult('startup'), 'unknown');
});

test('probeTiming: upstream defaults; 0 is unset, as in Go', (t) => {
  t.deepEqual(probeTiming({ exec: { command: ['true'] } }), {
    initialDelayMs: 0,
    periodMs: 10_000,
    timeoutMs: 1_000,
    successThreshold: 1,
    failureThreshold: 3,
  });
  t.deepEqual(
    probeTiming({ periodSeconds: 0, timeoutSeconds: 5, initialDelaySeconds: 7, failureThreshold: 30 }),
    { initialDelayMs: 7_000, periodMs: 10_000, timeoutMs: 5_000, successThreshold: 1, failureThreshold: 30 },
  );
});

test('resolveContainerPort: numbers, named ports, numbers written as strings', (t) => {
  const c = { name: 'web', image: 'x', ports: [{ name: 'http', containerPort: 8080 }] };
  t.is(resolveContainerPort(80, c), 80);
  t.is(resolveContainerPort('http', c), 8080);
  t.is(resolveContainerPort('9090', c), 9090);
  t.throws(() => resolveContainerPort('admin', c), {
    message: 'port "admin" not found in the ports of container "web"',
  });
  t.throws(() => resolveContainerPort(0, c), { message: 'invalid port number: 0' });
});

test('goDuration prints as Go does', (t) => {
  t.is(goDuration(500), '500ms');
  t.is(goDuration(1_000), '1s');
  t.is(goDuration(90_000), '1m30s');
});

test('PodEventLog: an identical event is counted, the newest N distinct ones kept', (t) => {
  const log = new PodEventLog(2);
  const failed = {
    type: 'Warning' as const,
    reason: 'Unhealthy',
    message: 'Liveness probe failed: x',
    container: 'c',
  };
  log.record('u', failed, 1_000);
  log.record('u', { ...failed, message: 'Readiness probe failed: y' }, 2_000);
  const again = log.record('u', failed, 3_000);
  t.like(again, { count: 2, firstTimestamp: 1_000, lastTimestamp: 3_000 });
  t.deepEqual(
    log.list('u').map((e) => e.message),
    ['Readiness probe failed: y', 'Liveness probe failed: x'],
  );
  log.record('u', { type: 'Normal', reason: 'Killing', message: 'Container c failed liveness probe' }, 4_000);
  t.deepEqual(
    log.list('u').map((e) => e.reason),
    ['Unhealthy', 'Killing'],
  );
  log.delete('u');
  t.deepEqual(log.list('u'), []);
});

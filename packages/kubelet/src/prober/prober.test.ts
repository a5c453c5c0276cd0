import test from 'ava';
import type { Container, Pod, Probe } from '@nodelet/api';
import type { NodeletEvent } from '@nodelet/kernel';
import { makePod, recordStarts, startHarness, type Harness } from '../test-harness.js';

/**
 * The prober under virtual time with the fake runtime: exec probes answered by `runtime.onExec`, so every
 * threshold, delay and period is exact to the millisecond.
 */

/** A probe that execs `check <name>`; `answers` says what each run of it returns (default: success). */
function execProbe(name: string, fields: Partial<Probe> = {}): Probe {
  return { exec: { command: ['check', name] }, ...fields };
}

interface ExecLog {
  /** Virtual ms of each run of `check <name>`. */
  runs(name: string): number[];
  /** Makes `check <name>` exit with these codes, in order, then with `then`. */
  answer(name: string, codes: number[], then?: number): void;
}

function scriptExec(h: Harness): ExecLog {
  const runs = new Map<string, number[]>();
  const answers = new Map<string, { codes: number[]; then: number }>();
  h.runtime.onExec((_id, cmd) => {
    if (cmd[0] !== 'check') return undefined;
    const name = cmd[1]!;
    runs.set(name, [...(runs.get(name) ?? []), h.clock.elapsed()]);
    const a = answers.get(name);
    const code = a ? (a.codes.length > 0 ? a.codes.shift()! : a.then) : 0;
    return code === 0 ? { exitCode: 0, stdout: 'ok\n' } : { exitCode: code, stderr: `${name} is not well\n` };
  });
  return {
    runs: (name) => runs.get(name) ?? [],
    answer: (name, codes, then = 0) => answers.set(name, { codes: [...codes], then }),
  };
}

const withProbes = (c: Partial<Container>, extra: Partial<Container> = {}): Container => ({
  name: 'main',
  image: 'busybox:1.36',
  imagePullPolicy: 'IfNotPresent',
  ...c,
  ...extra,
});

const podWith = (name: string, container: Partial<Container>, spec: Partial<NonNullable<Pod['spec']>> = {}) =>
  makePod(name, { containers: [withProbes(container)], ...spec });

/** Log lines whose message is exactly `message` (event-like lines). */
const logged = (h: Harness, message: string) => h.logs.records.filter((r) => r.message === message).length;

const mainStatus = (h: Harness, uid: string) => h.status(uid).containerStatuses![0]!;
const condition = (h: Harness, uid: string, type: string) =>
  h.status(uid).conditions?.find((c) => c.type === type);

test('liveness: 2 failures then a success with failureThreshold 3 is no restart; 3 in a row is', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const exec = scriptExec(h);
  const starts = recordStarts(h);
  exec.answer('live', [1, 1, 0, 1, 1, 0], 0);
  h.source.set([podWith('flaky', { livenessProbe: execProbe('live', { periodSeconds: 1 }) })]);
  await h.clock.advance(10_000);
  t.is(starts.length, 1, 'never restarted');
  t.true(exec.runs('live').length >= 9, 'probed every second');
  t.is(mainStatus(h, 'uid-flaky').restartCount, 0);

  exec.answer('live', [1, 1, 1], 0);
  await h.clock.advance(5_000);
  t.is(starts.length, 2, 'restarted after the third failure in a row');
  t.is(mainStatus(h, 'uid-flaky').restartCount, 1);
  t.is(mainStatus(h, 'uid-flaky').lastState?.terminated?.exitCode, 143);
  t.true(h.logs.find('Liveness probe failed: live is not well').length >= 3);
  t.is(logged(h, 'Container main failed liveness probe, will be restarted'), 1);
});

test('period and initial delay: the first probe comes initialDelaySeconds after the start, then one per period', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const exec = scriptExec(h);
  const starts = recordStarts(h);
  h.source.set([
    podWith('delayed', { readinessProbe: execProbe('ready', { initialDelaySeconds: 5, periodSeconds: 3 }) }),
  ]);
  await h.clock.advance(4_000);
  t.deepEqual(exec.runs('ready'), [], 'not probed during the initial delay');
  t.false(mainStatus(h, 'uid-delayed').ready, 'not ready before the first success');
  t.is(condition(h, 'uid-delayed', 'Ready')?.status, 'False');
  t.is(condition(h, 'uid-delayed', 'ContainersReady')?.message, 'containers with unready status: [main]');
  await h.clock.advance(12_000);
  const started = starts[0]!.at;
  t.deepEqual(
    exec.runs('ready').map((at) => at - started),
    [5_000, 8_000, 11_000, 14_000],
  );
  t.true(mainStatus(h, 'uid-delayed').ready);
  t.is(condition(h, 'uid-delayed', 'Ready')?.status, 'True');
});

test('defaults: period 10 s, timeout 1 s, thresholds 1 and 3', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const exec = scriptExec(h);
  const starts = recordStarts(h);
  exec.answer('live', [], 1); // always fails
  h.source.set([podWith('defaults', { livenessProbe: execProbe('live') })]);
  await h.clock.advance(25_000);
  t.is(starts.length, 2, 'killed and restarted at the third failure');
  t.deepEqual(
    exec.runs('live').map((at) => at - starts[0]!.at),
    [0, 10_000, 20_000, 20_000],
    'the new container is probed as soon as it runs',
  );
  t.is(starts[1]!.at - starts[0]!.at, 20_000);
});

test('timeout: an exec probe that outlives timeoutSeconds fails ("command timed out")', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const starts = recordStarts(h);
  h.source.set([
    podWith('slow', {
      livenessProbe: {
        exec: { command: ['sleep', '5'] },
        periodSeconds: 10,
        timeoutSeconds: 1,
        failureThreshold: 1,
      },
    }),
  ]);
  await h.clock.advance(1_500);
  t.is(starts.length, 2, 'the 1 s timeout failed the probe at once, and the container was restarted');
  t.is(logged(h, 'Liveness probe failed: command "sleep 5" timed out'), 1);
  const events = h.kubelet.podEvents('default', 'slow') as { items: { reason: string; message: string }[] };
  t.deepEqual(
    events.items.map((e) => [e.reason, e.message]),
    [
      ['Unhealthy', 'Liveness probe failed: command "sleep 5" timed out'],
      ['Killing', 'Container main failed liveness probe, will be restarted'],
    ],
  );

  // Within the timeout, the same command succeeds.
  h.source.set([
    podWith('patient', {
      livenessProbe: {
        exec: { command: ['sleep', '5'] },
        periodSeconds: 10,
        timeoutSeconds: 6,
        failureThreshold: 1,
      },
    }),
  ]);
  await h.clock.advance(30_000);
  t.is(starts.filter((s) => s.at >= 1_500).length, 1, 'patient started once and never restarted');
});

test('startup probe gates liveness and readiness until it succeeds once, then stops', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const exec = scriptExec(h);
  const starts = recordStarts(h);
  exec.answer('startup', [1, 1, 1, 1], 0); // succeeds at its 5th run
  h.source.set([
    podWith('gated', {
      startupProbe: execProbe('startup', { periodSeconds: 1, failureThreshold: 30 }),
      livenessProbe: execProbe('live', { periodSeconds: 1 }),
      readinessProbe: execProbe('ready', { periodSeconds: 1 }),
    }),
  ]);
  await h.clock.advance(3_500);
  t.deepEqual(exec.runs('live'), []);
  t.deepEqual(exec.runs('ready'), []);
  t.false(mainStatus(h, 'uid-gated').started);
  t.false(mainStatus(h, 'uid-gated').ready);
  await h.clock.advance(3_000);
  const startupRuns = exec.runs('startup').length;
  t.is(startupRuns, 5, 'the startup probe stopped after its first success');
  t.true(mainStatus(h, 'uid-gated').started);
  const firstLive = exec.runs('live')[0]!;
  t.true(firstLive > exec.runs('startup')[4]!, 'liveness starts after startup succeeded');
  await h.clock.advance(5_000);
  t.true(mainStatus(h, 'uid-gated').ready);
  t.is(exec.runs('startup').length, startupRuns);
  t.is(starts.length, 1);
});

test('startup failure past its threshold kills and restarts the container', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const exec = scriptExec(h);
  const starts = recordStarts(h);
  exec.answer('startup', [], 1);
  h.source.set([
    podWith('neverup', {
      startupProbe: execProbe('startup', { periodSeconds: 2, failureThreshold: 3 }),
      livenessProbe: execProbe('live', { periodSeconds: 1 }),
    }),
  ]);
  await h.clock.advance(5_000);
  t.is(starts.length, 2, 'restarted after 3 failures (0, 2, 4 s)');
  t.deepEqual(exec.runs('live'), [], 'liveness never ran');
  t.is(logged(h, 'Container main failed startup probe, will be restarted'), 1);
  // Three failures of the first container, and the new one's first probe, at once.
  t.is(logged(h, 'Startup probe failed: startup is not well'), 4);
});

test('readiness successThreshold: ready only after that many successes in a row, again after a failure', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const exec = scriptExec(h);
  const results: NodeletEvent<'[Prober] Probe Result'>[] = [];
  h.bus.subscribe('[Prober] Probe Result', (e) => results.push(e));
  exec.answer('ready', [0, 0, 0, 1, 0, 0], 0);
  h.source.set([
    podWith('steady', {
      readinessProbe: execProbe('ready', { periodSeconds: 1, successThreshold: 3, failureThreshold: 1 }),
    }),
  ]);
  const readyAt: boolean[] = [];
  for (let i = 0; i < 8; i++) {
    await h.clock.advance(1_000);
    readyAt.push(!!mainStatus(h, 'uid-steady').ready);
  }
  // Probes at 0..8 s answer 0 0 0 1 0 0 0 0 0; statuses read at 1..8 s: ready after the third success
  // (2 s), not ready after the failure (3 s), ready again after three more successes (6 s).
  t.deepEqual(readyAt, [false, true, false, false, false, true, true, true]);
  t.deepEqual(
    results.filter((e) => e.changed).map((e) => e.result),
    ['success', 'failure', 'success'],
  );
  t.true(
    results.every((e) => e.probe === 'readiness' && e.container === 'main' && e.podUid === 'uid-steady'),
  );
});

test('a container without a readiness probe is ready when running; the pod is Ready only when all are', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const exec = scriptExec(h);
  exec.answer('ready', [], 1);
  h.source.set([
    makePod('two', {
      containers: [
        withProbes({ name: 'web', readinessProbe: execProbe('ready', { periodSeconds: 1 }) }),
        withProbes({ name: 'sidecar' }),
      ],
    }),
  ]);
  await h.clock.advance(3_000);
  const [web, sidecar] = h.status('uid-two').containerStatuses!;
  t.false(web!.ready);
  t.true(web!.started);
  t.true(sidecar!.ready);
  t.is(condition(h, 'uid-two', 'ContainersReady')?.status, 'False');
  t.is(condition(h, 'uid-two', 'Ready')?.message, 'containers with unready status: [web]');
  t.is(h.status('uid-two').phase, 'Running');
  exec.answer('ready', [], 0);
  await h.clock.advance(1_000);
  t.is(condition(h, 'uid-two', 'Ready')?.status, 'True');
});

test("the liveness kill uses the probe-level terminationGracePeriodSeconds, else the pod's", async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const exec = scriptExec(h);
  const stops: { id: string; timeout: number; at: number }[] = [];
  const stop = h.runtime.stopContainer.bind(h.runtime);
  h.runtime.stopContainer = async (req: Parameters<typeof stop>[0]) => {
    stops.push({ id: req.containerId, timeout: Number(req.timeout), at: h.clock.elapsed() });
    return stop(req);
  };
  exec.answer('live', [1], 0);
  exec.answer('live-default', [1], 0);
  h.source.set([
    podWith(
      'quick',
      {
        livenessProbe: execProbe('live', {
          periodSeconds: 1,
          failureThreshold: 1,
          terminationGracePeriodSeconds: 5,
        }),
      },
      { terminationGracePeriodSeconds: 30 },
    ),
    podWith(
      'slowkill',
      { livenessProbe: execProbe('live-default', { periodSeconds: 1, failureThreshold: 1 }) },
      { terminationGracePeriodSeconds: 30 },
    ),
  ]);
  h.runtime.script(() => true, { ignoreStop: true });
  await h.clock.advance(500);
  t.deepEqual(
    stops.map((s) => s.timeout).sort((a, b) => a - b),
    [5, 30],
  );
  // The stubborn container of `quick` is SIGKILLed 5 s after the kill began.
  await h.clock.advance(5_000);
  t.is(mainStatus(h, 'uid-quick').restartCount, 1);
  t.is(mainStatus(h, 'uid-quick').lastState?.terminated?.exitCode, 137);
  t.is(mainStatus(h, 'uid-slowkill').restartCount, 0, 'still waiting out the pod grace period');
  await h.clock.advance(25_000);
  t.is(mainStatus(h, 'uid-slowkill').restartCount, 1);
});

test('restartPolicy Never: a liveness failure kills the container for good and the pod fails', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const exec = scriptExec(h);
  const starts = recordStarts(h);
  exec.answer('live', [], 1);
  h.source.set([
    podWith(
      'once',
      { livenessProbe: execProbe('live', { periodSeconds: 1, failureThreshold: 2 }) },
      {
        restartPolicy: 'Never',
      },
    ),
  ]);
  await h.clock.advance(20_000);
  t.is(starts.length, 1);
  t.is(h.status('uid-once').phase, 'Failed');
  t.is(exec.runs('live').length, 2, 'no probes of a dead container');
  t.is(h.kubelet.prober.workerCount(), 2 - 1, 'the worker stays (stopped) until the pod goes');
  t.is(logged(h, 'Container main failed liveness probe'), 1);
  t.is(h.logs.find('will be restarted').length, 0);
});

test('a removed pod stops its workers; during termination liveness does not kill', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const exec = scriptExec(h);
  h.source.set([
    podWith(
      'leaving',
      {
        livenessProbe: execProbe('live', { periodSeconds: 1 }),
        readinessProbe: execProbe('ready', { periodSeconds: 1 }),
      },
      { terminationGracePeriodSeconds: 10 },
    ),
  ]);
  h.runtime.script('main', { ignoreStop: true });
  await h.clock.advance(2_000);
  t.is(h.kubelet.prober.workerCount(), 2);
  exec.answer('live', [], 1);
  const liveRuns = exec.runs('live').length;
  h.source.set([]);
  await h.clock.advance(5_000);
  t.is(exec.runs('live').length, liveRuns, 'liveness stopped when termination began');
  t.is(h.logs.find('failed liveness probe').length, 0);
  await h.clock.advance(10_000);
  t.is(h.kubelet.prober.workerCount(), 0);
  t.is(h.kubelet.podList().items.length, 0);
  const readyRuns = exec.runs('ready').length;
  await h.clock.advance(5_000);
  t.is(exec.runs('ready').length, readyRuns);
});

test('a probe that cannot be run is retried three times, then thrown away: no state change', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const starts = recordStarts(h);
  let calls = 0;
  h.runtime.onExec((_id, cmd) => {
    if (cmd[0] !== 'broken') return undefined;
    calls++;
    throw new Error('runtime hiccup');
  });
  h.source.set([
    podWith('err', {
      livenessProbe: { exec: { command: ['broken'] }, periodSeconds: 1, failureThreshold: 1 },
    }),
  ]);
  await h.clock.advance(2_500);
  t.is(calls, 9, 'three attempts per period');
  t.is(starts.length, 1, 'an error is not a failure');
  t.true(h.logs.find('Liveness probe errored').length >= 3);
});

// Scripted container behaviour on the virtual clock: exits, stops, crash loops, start delays, failures, scripts.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { ContainerState } from '@nodelet/cri';
import {
  behave,
  createContainer,
  expectCode as code,
  ns,
  runPod,
  setup,
  startContainer,
  track,
} from './fixtures.js';

test('exitAfter exits at exactly startedAt + the delay with the scripted code', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'job', {
    annotations: { ...behave('main', 'exitAfter=5s,exitCode=3'), ...behave('ok', 'exitAfter=5s') },
  });
  await clock.advance(250);
  const main = await startContainer(runtime, pod, 'main');
  const ok = await startContainer(runtime, pod, 'ok');
  t.is(clock.pendingTimers(), 2);
  await clock.advance(4999);
  t.is(
    (await runtime.containerStatus({ containerId: main, verbose: false })).status!.state,
    ContainerState.CONTAINER_RUNNING,
  );
  await clock.advance(1);
  const s = (await runtime.containerStatus({ containerId: main, verbose: false })).status!;
  t.is(s.state, ContainerState.CONTAINER_EXITED);
  t.is(s.exitCode, 3);
  t.is(s.reason, 'Error');
  t.is(s.startedAt, ns(250));
  t.is(s.finishedAt, ns(5250));
  const done = (await runtime.containerStatus({ containerId: ok, verbose: false })).status!;
  t.is(done.exitCode, 0);
  t.is(done.reason, 'Completed');
  t.is(clock.pendingTimers(), 0);
});

test('ignoreStop: killed with 137 at exactly the grace deadline, not a millisecond before', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'stubborn', { annotations: behave('app', 'ignoreStop=true') });
  const id = await startContainer(runtime, pod, 'app');
  await clock.advance(1000);
  const stop = track(runtime.stopContainer({ containerId: id, timeout: 30n }));
  await clock.advance(29_999);
  t.false(stop.settled, 'still stopping at timeout − 1 ms');
  t.is(
    (await runtime.containerStatus({ containerId: id, verbose: false })).status!.state,
    ContainerState.CONTAINER_RUNNING,
  );
  await clock.advance(1);
  t.true(stop.settled);
  await stop.promise;
  const s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.exitCode, 137);
  t.is(s.reason, 'Error');
  t.is(s.finishedAt, ns(31_000));
  t.is(clock.pendingTimers(), 0);
});

test('a second stop with a shorter grace period brings the kill forward; timeout 0 kills at once', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', { annotations: behave('all', 'ignoreStop') });
  const a = await startContainer(runtime, pod, 'a');
  const b = await startContainer(runtime, pod, 'b');
  const first = track(runtime.stopContainer({ containerId: a, timeout: 30n }));
  await clock.advance(1000);
  const second = track(runtime.stopContainer({ containerId: a, timeout: 2n }));
  await clock.advance(1999);
  t.false(first.settled);
  await clock.advance(1);
  t.true(first.settled && second.settled);
  t.is((await runtime.containerStatus({ containerId: a, verbose: false })).status!.finishedAt, ns(3000));

  await runtime.stopContainer({ containerId: b, timeout: 0n });
  const s = (await runtime.containerStatus({ containerId: b, verbose: false })).status!;
  t.is(s.exitCode, 137);
  t.is(s.finishedAt, ns(3000));
});

test('stopDelay: a graceful shutdown that takes time, killed if the grace period is shorter', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', { annotations: behave('all', 'stopDelay=3s,stopExitCode=0') });
  const quick = await startContainer(runtime, pod, 'quick');
  const slow = await startContainer(runtime, pod, 'slow');
  const q = track(runtime.stopContainer({ containerId: quick, timeout: 10n }));
  const s = track(runtime.stopContainer({ containerId: slow, timeout: 2n }));
  await clock.advance(2000);
  t.true(s.settled);
  t.false(q.settled);
  await clock.advance(1000);
  t.true(q.settled);
  const quickStatus = (await runtime.containerStatus({ containerId: quick, verbose: false })).status!;
  const slowStatus = (await runtime.containerStatus({ containerId: slow, verbose: false })).status!;
  t.deepEqual([quickStatus.exitCode, quickStatus.reason], [0, 'Completed']);
  t.deepEqual([slowStatus.exitCode, slowStatus.reason], [137, 'Error']);
});

test('crashLoop exits 1 after 1 s and every restart does it again; oom exits 137 OOMKilled', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', {
    annotations: { ...behave('crash', 'crashLoop=true'), ...behave('hog', 'oom=true,exitAfter=10s') },
  });
  for (let attempt = 0; attempt < 3; attempt++) {
    const id = await startContainer(runtime, pod, 'crash', { attempt });
    await clock.advance(1000);
    const s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
    t.deepEqual([s.state, s.exitCode, s.reason], [ContainerState.CONTAINER_EXITED, 1, 'Error']);
  }
  const hog = await startContainer(runtime, pod, 'hog');
  await clock.advance(10_000);
  const s = (await runtime.containerStatus({ containerId: hog, verbose: false })).status!;
  t.deepEqual([s.exitCode, s.reason], [137, 'OOMKilled']);
});

test('startDelay: StartContainer takes that long on the clock', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', { annotations: behave('slow', 'startDelay=2s') });
  const id = await createContainer(runtime, pod, 'slow');
  const start = track(runtime.startContainer({ containerId: id }));
  await clock.advance(1999);
  t.false(start.settled);
  t.is(
    (await runtime.containerStatus({ containerId: id, verbose: false })).status!.state,
    ContainerState.CONTAINER_CREATED,
  );
  await clock.advance(1);
  await start.promise;
  const s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.state, ContainerState.CONTAINER_RUNNING);
  t.is(s.startedAt, ns(2000));

  // Stopping it while it is still starting: it never runs, and StartContainer fails.
  const other = await createContainer(runtime, pod, 'slow', { attempt: 1 });
  const pending = runtime.startContainer({ containerId: other });
  await clock.advance(500);
  await runtime.stopContainer({ containerId: other, timeout: 30n });
  code(t, await t.throwsAsync(pending), 'Internal');
  const o = (await runtime.containerStatus({ containerId: other, verbose: false })).status!;
  t.deepEqual([o.state, o.exitCode, o.reason], [ContainerState.CONTAINER_EXITED, 128, 'StartError']);
  t.is(clock.pendingTimers(), 0);
});

test('failCreate and failStart fail with the scripted message, as a missing command does', async (t) => {
  const { runtime } = setup();
  const message = 'exec: "nope": executable file not found in $PATH';
  const pod = await runPod(runtime, 'p', {
    annotations: {
      ...behave('a', `failCreate=${JSON.stringify(message)}`),
      ...behave('b', `failStart=${JSON.stringify(message)}`),
    },
  });
  const create = await t.throwsAsync(createContainer(runtime, pod, 'a'));
  code(t, create, 'Internal');
  t.is(create?.message, message);
  t.is(runtime.counts().containers, 0, 'a failed create leaves nothing behind');

  const b = await createContainer(runtime, pod, 'b');
  const start = await t.throwsAsync(runtime.startContainer({ containerId: b }));
  t.is(start?.message, message);
  const s = (await runtime.containerStatus({ containerId: b, verbose: false })).status!;
  t.deepEqual(
    [s.state, s.exitCode, s.reason, s.message],
    [ContainerState.CONTAINER_EXITED, 128, 'StartError', message],
  );
  t.is(s.startedAt, 0n);
});

test('script() by name or predicate layers over annotations and can be removed', async (t) => {
  const { clock, runtime } = setup();
  const unscript = runtime.script('app', 'exitAfter=2s');
  runtime.script((c) => c.podNamespace === 'batch', { exitCode: 7 });
  const pod = await runPod(runtime, 'p', {
    namespace: 'batch',
    annotations: behave('all', 'exitAfter=9s,exitCode=1'),
  });
  const app = await startContainer(runtime, pod, 'app');
  const side = await startContainer(runtime, pod, 'side');
  await clock.advance(2000);
  t.is(
    (await runtime.containerStatus({ containerId: app, verbose: false })).status!.exitCode,
    7,
    'exitAfter from script, exitCode from predicate',
  );
  await clock.advance(7000);
  t.is((await runtime.containerStatus({ containerId: side, verbose: false })).status!.exitCode, 7);
  unscript();
  const again = await startContainer(runtime, pod, 'app', { attempt: 1 });
  await clock.advance(2000);
  t.is(
    (await runtime.containerStatus({ containerId: again, verbose: false })).status!.state,
    ContainerState.CONTAINER_RUNNING,
  );
  t.throws(() => runtime.script('x', 'exitAfter=soon'), { message: /"exitAfter" takes a duration/ });
});

test('killContainer ends a running container from outside, now', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const a = await startContainer(runtime, pod, 'a');
  const b = await startContainer(runtime, pod, 'b');
  await clock.advance(42);
  runtime.killContainer(a, 2);
  runtime.killContainer(b, 137, { reason: 'OOMKilled' });
  const sa = (await runtime.containerStatus({ containerId: a, verbose: false })).status!;
  const sb = (await runtime.containerStatus({ containerId: b, verbose: false })).status!;
  t.deepEqual([sa.exitCode, sa.reason, sa.finishedAt], [2, 'Error', ns(42)]);
  t.deepEqual([sb.exitCode, sb.reason], [137, 'OOMKilled']);
  t.throws(() => runtime.killContainer(a), { message: /CONTAINER_EXITED/ });
});

test('a malformed behaviour annotation fails RunPodSandbox, naming the annotation', async (t) => {
  const { runtime } = setup();
  const err = await t.throwsAsync(runPod(runtime, 'p', { annotations: behave('app', 'exitAftr=5s') }));
  code(t, err, 'InvalidInput');
  t.regex(
    err!.message,
    /^annotation "runtime-fake.nodelet.dev\/app": unknown key "exitAftr"; known keys: startDelay, exitAfter/,
  );
});

test('terminationMessage: written as the process exits to the host file mounted at the termination-message path', async (t) => {
  const { clock, runtime } = setup();
  const dir = mkdtempSync(join(tmpdir(), 'fake-termination-'));
  const file = join(dir, 'msg');
  const custom = join(dir, 'custom');
  writeFileSync(file, '');
  writeFileSync(custom, '');
  const pod = await runPod(runtime, 'msg', {
    annotations: {
      ...behave('main', 'exitAfter=1s,exitCode=1,terminationMessage="out of cheese"'),
      ...behave('other', 'terminationMessage=custom'),
    },
  });
  await startContainer(runtime, pod, 'main', {
    mounts: [{ containerPath: '/dev/termination-log', hostPath: file }],
  });
  const other = await startContainer(runtime, pod, 'other', {
    annotations: { 'io.kubernetes.container.terminationMessagePath': '/tmp/why' },
    mounts: [{ containerPath: '/tmp/why', hostPath: custom }],
  });
  t.is(readFileSync(file, 'utf8'), '', 'nothing before the exit');
  await clock.advance(1000);
  t.is(readFileSync(file, 'utf8'), 'out of cheese');
  await runtime.stopContainer({ containerId: other, timeout: 0n });
  t.is(readFileSync(custom, 'utf8'), 'custom', 'any exit writes it, at the annotated path');
  rmSync(dir, { recursive: true, force: true });
});

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { isErrorCode } from '@nodelet/kernel';
import { createContainer, runPod, setup, startContainer, track } from './fixtures.js';

const out = (r: { stdout: Buffer; stderr: Buffer; exitCode: number }) => [
  r.exitCode,
  r.stdout.toString(),
  r.stderr.toString(),
];

test('ExecSync defaults: true, false, exit N, echo, anything else succeeds', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const id = await startContainer(runtime, pod, 'app');
  const exec = async (...cmd: string[]) => out(await runtime.execSync({ containerId: id, cmd, timeout: 0n }));
  t.deepEqual(await exec('true'), [0, '', '']);
  t.deepEqual(await exec('/bin/false'), [1, '', '']);
  t.deepEqual(await exec('sh', '-c', 'exit 3'), [3, '', '']);
  t.deepEqual(await exec('/bin/sh', '-c', 'false'), [1, '', '']);
  t.deepEqual(await exec('echo', 'hello', 'world'), [0, 'hello world\n', '']);
  t.deepEqual(await exec('sh', '-c', 'echo "a  b" c'), [0, 'a  b c\n', '']);
  t.deepEqual(await exec('cat', '/tmp/healthy'), [0, '', '']);
});

test('ExecSync default shell: lists with ;, && and ||, >&2 to stderr, exit ends the script', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const id = await startContainer(runtime, pod, 'app');
  const sh = async (script: string) =>
    out(await runtime.execSync({ containerId: id, cmd: ['sh', '-c', script], timeout: 0n }));
  t.deepEqual(await sh('echo out; echo err >&2; exit 3'), [3, 'out\n', 'err\n']);
  t.deepEqual(await sh('echo a 1>&2; echo "b; c"'), [0, 'b; c\n', 'a\n']);
  t.deepEqual(await sh('false && echo no; echo yes'), [0, 'yes\n', '']);
  t.deepEqual(await sh('false || echo recovered'), [0, 'recovered\n', '']);
  t.deepEqual(await sh('true || echo no'), [0, '', '']);
  t.deepEqual(await sh('echo one\necho two; false'), [1, 'one\ntwo\n', '']);
  t.deepEqual(await sh('false; exit'), [1, '', ''], 'a bare exit keeps the last status');
  t.deepEqual(await sh('exit 2; echo never'), [2, '', '']);
});

test('onExec handlers answer first, newest first, and may pass a command on', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const id = await startContainer(runtime, pod, 'app');
  const seen: string[] = [];
  runtime.onExec((containerId, cmd, ctx) => {
    seen.push(`${ctx.podName}/${ctx.containerName}:${containerId === id}`);
    return cmd[0] === 'check' ? { exitCode: 2, stderr: 'unhealthy\n' } : undefined;
  });
  const remove = runtime.onExec(async (_id, cmd) =>
    cmd[0] === 'check' ? { exitCode: 0, stdout: new Uint8Array([111, 107]) } : undefined,
  );
  t.deepEqual(out(await runtime.execSync({ containerId: id, cmd: ['check'], timeout: 0n })), [0, 'ok', '']);
  remove();
  t.deepEqual(out(await runtime.execSync({ containerId: id, cmd: ['check'], timeout: 0n })), [
    2,
    '',
    'unhealthy\n',
  ]);
  t.deepEqual(out(await runtime.execSync({ containerId: id, cmd: ['echo', 'x'], timeout: 0n })), [
    0,
    'x\n',
    '',
  ]);
  t.deepEqual(seen, ['p/app:true', 'p/app:true']);
});

test('exec in a container that is not running fails FailedPrecondition; unknown ids NotFound', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const created = await createContainer(runtime, pod, 'app');
  const err = await t.throwsAsync(runtime.execSync({ containerId: created, cmd: ['true'], timeout: 0n }));
  t.true(isErrorCode(err, 'FailedPrecondition'));
  t.is(err?.message, 'failed to exec in container: container is in CONTAINER_CREATED state');
  t.true(
    isErrorCode(
      await t.throwsAsync(runtime.execSync({ containerId: 'nope', cmd: ['true'], timeout: 0n })),
      'NotFound',
    ),
  );
});

test('the exec timeout is measured on the clock: DeadlineExceeded at exactly the timeout', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const id = await startContainer(runtime, pod, 'app');
  runtime.onExec(async (_id, cmd, ctx) => {
    if (cmd[0] !== 'slow') return undefined;
    await ctx.clock.sleep(5000, ctx.signal);
    return { exitCode: 0 };
  });
  const slow = track(runtime.execSync({ containerId: id, cmd: ['slow'], timeout: 2n }));
  await clock.advance(1999);
  t.false(slow.settled);
  await clock.advance(1);
  const err = await t.throwsAsync(slow.promise);
  t.true(isErrorCode(err, 'DeadlineExceeded'));
  t.is(err?.message, 'failed to exec in container: timeout 2s exceeded: context deadline exceeded');
  t.is(clock.pendingTimers(), 0, 'the handler was told to stop waiting');

  // The default `sleep N` takes N seconds on the clock; within the timeout it succeeds.
  const fast = track(runtime.execSync({ containerId: id, cmd: ['sleep', '1'], timeout: 2n }));
  await clock.advance(1000);
  t.deepEqual(out(await fast.promise), [0, '', '']);
  t.is(clock.pendingTimers(), 0, 'the timeout timer is cancelled when the command finishes');
  const late = track(runtime.execSync({ containerId: id, cmd: ['sh', '-c', 'sleep 10'], timeout: 1n }));
  await clock.advance(1000);
  t.true(isErrorCode(await t.throwsAsync(late.promise), 'DeadlineExceeded'));
  t.is(clock.pendingTimers(), 0);
});

test('logs are CRI lines with the clock time: stdout at start, writeLog, partial lines', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', {
    annotations: { 'runtime-fake.nodelet.dev/app': 'stdout="hello, world"' },
  });
  await clock.advance(1500);
  const id = await startContainer(runtime, pod, 'app');
  await clock.advance(250);
  runtime.writeLog(id, 'two\nthree\npart', 'stderr');
  t.deepEqual(runtime.logs(id), [
    '2026-01-01T00:00:01.5Z stdout F hello, world',
    '2026-01-01T00:00:01.75Z stderr F two',
    '2026-01-01T00:00:01.75Z stderr F three',
    '2026-01-01T00:00:01.75Z stderr P part',
  ]);
  const other = await startContainer(runtime, pod, 'quiet');
  t.deepEqual(runtime.logs(other), []);
  await runtime.stopContainer({ containerId: id, timeout: 0n });
  t.is(runtime.logs(id).length, 4, 'logs stay readable after the container exited');
  t.throws(() => runtime.writeLog(id, 'x'), { message: /not running/ });
});

test('in-memory logs keep the newest maxLogLines', async (t) => {
  const { runtime } = setup({ maxLogLines: 3 });
  const pod = await runPod(runtime, 'p');
  const id = await startContainer(runtime, pod, 'app');
  for (let i = 0; i < 10; i++) runtime.writeLog(id, `line ${i}\n`);
  t.deepEqual(
    runtime.logs(id).map((l) => l.slice(l.lastIndexOf(' ') + 1)),
    ['7', '8', '9'],
  );
});

test('writeLogs writes the file the kubelet reads, creating directories; ReopenContainerLog recreates it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'runtime-fake-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { runtime } = setup({ writeLogs: true });
  const logDirectory = join(dir, 'pods', 'default_p_uid-p');
  const pod = await runPod(runtime, 'p', {
    logDirectory,
    annotations: { 'runtime-fake.nodelet.dev/app': 'stdout=ready' },
  });
  const id = await startContainer(runtime, pod, 'app');
  runtime.writeLog(id, 'more\n');
  const path = join(logDirectory, 'app', '0.log');
  t.is((await runtime.containerStatus({ containerId: id, verbose: false })).status!.logPath, path);
  t.is(
    await readFile(path, 'utf8'),
    '2026-01-01T00:00:00Z stdout F ready\n2026-01-01T00:00:00Z stdout F more\n',
  );
  await rm(path); // what log rotation does before asking the runtime to reopen
  await runtime.reopenContainerLog({ containerId: id });
  t.is(await readFile(path, 'utf8'), '');
  runtime.writeLog(id, 'after\n');
  t.is(await readFile(path, 'utf8'), '2026-01-01T00:00:00Z stdout F after\n');
  await runtime.stopContainer({ containerId: id, timeout: 0n });
  t.true(
    isErrorCode(await t.throwsAsync(runtime.reopenContainerLog({ containerId: id })), 'FailedPrecondition'),
  );
});

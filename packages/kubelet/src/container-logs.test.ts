import { getEventListeners } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { ContainerStatus } from '@nodelet/api';
import { formatCriLogLine } from '@nodelet/cri';
import { createLogger, EventBus, MemorySink, RealClock, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import {
  CriLogDecoder,
  decodeCriLog,
  followContainerLog,
  logContainerId,
  tailLines,
} from './container-logs.js';
import { Kubelet } from './kubelet.js';
import { openServerConfig } from './server/test-server.js';
import { startKubeletServers } from './server/kubelet-server.js';
import { httpsGet } from './server/test-https.js';
import { makePod, TestSource } from './test-harness.js';

const line = (content: string, partial = false, stream: 'stdout' | 'stderr' = 'stdout') =>
  formatCriLogLine({ time: 1_700_000_000_123_456_789n, stream, partial, content });

test('CRI log lines decode to what the container wrote: F ends a line, P lines join the next', (t) => {
  const text =
    line('first') + line('a long ', true) + line('line', true) + line(' ends', false, 'stderr') + line('');
  t.is(decodeCriLog(text), 'first\na long line ends\n\n');
  t.is(decodeCriLog(''), '');
  t.is(decodeCriLog('not a cri line\n' + line('kept')), 'kept\n', 'malformed lines are skipped');
  t.is(decodeCriLog(line('no newline at the end').trimEnd()), 'no newline at the end\n');
});

test('the decoder keeps a line split across chunks until its newline arrives', (t) => {
  const d = new CriLogDecoder();
  const text = line('hello') + line('wor', true) + line('ld');
  const cut = text.indexOf('hello') + 2;
  t.is(d.push(text.slice(0, cut)), '');
  t.is(d.push(text.slice(cut, cut + 10)), 'hello\n');
  t.is(d.push(text.slice(cut + 10)), 'world\n');
});

test('tailLines keeps the last n lines', (t) => {
  t.is(tailLines('a\nb\nc\n', 2), 'b\nc\n');
  t.is(tailLines('a\nb\nc\n', 5), 'a\nb\nc\n');
  t.is(tailLines('a\nb\nc\n', 0), '');
  t.is(tailLines('a\nb\npartial', 1), 'partial');
  t.is(tailLines('a\nb\n', undefined), 'a\nb\n');
});

test('which container instance a log request reads (upstream validateContainerLogStatus)', (t) => {
  const running: ContainerStatus = {
    name: 'app',
    image: 'x',
    imageID: '',
    ready: true,
    restartCount: 1,
    containerID: 'containerd://new',
    state: { running: {} },
    lastState: { terminated: { exitCode: 1, containerID: 'containerd://old' } },
  };
  const waitingAfterCrash: ContainerStatus = {
    ...running,
    state: { waiting: { reason: 'CrashLoopBackOff' } },
  };
  const neverStarted = (reason: string): ContainerStatus => ({
    ...running,
    containerID: undefined,
    state: { waiting: { reason } },
    lastState: {},
  });
  const cases: Array<[ContainerStatus | undefined, boolean, object]> = [
    [running, false, { id: 'new' }],
    [running, true, { id: 'old' }],
    [waitingAfterCrash, false, { id: 'old' }],
    [
      { ...running, state: { terminated: { exitCode: 0, containerID: 'containerd://done' } } },
      false,
      { id: 'done' },
    ],
    [
      neverStarted('ContainerCreating'),
      false,
      { error: 'container "app" in pod "p" is waiting to start: ContainerCreating' },
    ],
    [
      neverStarted('ErrImagePull'),
      false,
      { error: `container "app" in pod "p" is waiting to start: image can't be pulled` },
    ],
    [
      neverStarted('ImagePullBackOff'),
      false,
      { error: 'container "app" in pod "p" is waiting to start: trying and failing to pull image' },
    ],
    [
      neverStarted('ContainerCreating'),
      true,
      { error: 'previous terminated container "app" in pod "p" not found' },
    ],
    [undefined, false, { error: 'container "app" in pod "p" is not available' }],
  ];
  for (const [status, previous, want] of cases) {
    t.deepEqual(logContainerId('p', 'app', status, previous), want, JSON.stringify({ status, previous }));
  }
});

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const { status, body } = await httpsGet(port, path);
  return { status, body };
}

test('/containerLogs on the kubelet API: the current and the previous instance, tailLines, errors', async (t) => {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const runtime = new FakeRuntime({ clock, logger, config: { writeLogs: true, pullLatencyMs: 0 } });
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-logs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const source = new TestSource();
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus: new EventBus(clock, logger), clock, logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      sources: [source],
    },
  );
  await kubelet.start();
  const server = await startKubeletServers(kubelet, openServerConfig(join(dir, 'pki')), logger);
  const port = server.securePort!;
  t.teardown(async () => {
    await server.close();
    await kubelet.stop();
  });

  // The first instance writes two lines and exits 1 after 5 s; the next one the same again.
  source.set([
    makePod('web', {}, { 'runtime-fake.nodelet.dev/main': 'stdout="one\\ntwo",exitAfter=5s,exitCode=1' }),
  ]);
  await clock.advance(2_000);
  const [first] = (await runtime.listContainers({})).containers;
  runtime.writeLog(first!.id, 'split ');
  runtime.writeLog(first!.id, 'in two\n');
  t.deepEqual(await get(port, '/containerLogs/default/web/main'), {
    status: 200,
    body: 'one\ntwo\nsplit in two\n',
  });
  t.deepEqual(await get(port, '/containerLogs/default/web/main?tailLines=1'), {
    status: 200,
    body: 'split in two\n',
  });
  t.deepEqual(await get(port, '/containerLogs/default/web/main?previous=true'), {
    status: 400,
    body: 'previous terminated container "main" in pod "web" not found\n',
  });

  await clock.advance(5_000); // exits; restarted at once (the first restart has no backoff)
  await clock.advance(2_000);
  t.is(kubelet.getPod('default', 'web')?.status?.containerStatuses?.[0]?.restartCount, 1);
  t.deepEqual(await get(port, '/containerLogs/default/web/main?previous=true'), {
    status: 200,
    body: 'one\ntwo\nsplit in two\n',
  });
  t.deepEqual(await get(port, '/containerLogs/default/web/main'), { status: 200, body: 'one\ntwo\n' });

  t.deepEqual(await get(port, '/containerLogs/default/nope/main'), {
    status: 404,
    body: 'pods "nope" not found\n',
  });
  t.deepEqual(await get(port, '/containerLogs/default/web/other'), {
    status: 404,
    body: 'container "other" not found in pod "web"; its containers are: main\n',
  });
  t.is((await get(port, '/containerLogs/default/web')).status, 400);
  t.is((await get(port, '/containerLogs/default/web/main?tailLines=x')).status, 400);
});

test('following a log keeps one abort listener however many times it polls (no MaxListenersExceededWarning)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-follow-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, '0.log');
  writeFileSync(path, '');
  const controller = new AbortController();
  const listeners: number[] = [];
  let polls = 0;
  const done = followContainerLog(
    path,
    0,
    () => undefined,
    async () => {
      polls++;
      listeners.push(getEventListeners(controller.signal, 'abort').length);
      if (polls >= 30) controller.abort();
      return true;
    },
    controller.signal,
    { clock: new RealClock(), pollMs: 1, checkEveryMs: 0 },
  );
  await done;
  t.is(polls, 30);
  t.true(
    listeners.every((n) => n <= 1),
    `abort listeners while polling: ${listeners.join(',')}`,
  );
  t.is(getEventListeners(controller.signal, 'abort').length, 0, 'none left when it returns');
});

import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { Kubelet } from '../kubelet.js';
import { makePod, TestSource } from '../test-harness.js';
import { startKubeletServers } from './kubelet-server.js';
import { httpsGet } from './test-https.js';
import { openServerConfig } from './test-server.js';

async function node(t: ExecutionContext) {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const runtime = new FakeRuntime({ clock, logger, config: { writeLogs: true } });
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-endpoints-'));
  const source = new TestSource();
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus: new EventBus(clock, logger), clock, logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'pods'),
      sources: [source],
    },
  );
  await kubelet.start();
  const logDir = join(dir, 'varlog');
  mkdirSync(join(logDir, 'sub'), { recursive: true });
  const servers = await startKubeletServers(
    kubelet,
    openServerConfig(join(dir, 'pki'), { logDir, configz: () => ({ port: 10250, readOnlyPort: 0 }) }),
    logger,
  );
  t.teardown(async () => {
    await servers.close();
    await kubelet.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const get = async (path: string) => {
    const { status, body } = await httpsGet(servers.securePort!, path);
    return { status, body };
  };
  return { clock, runtime, source, dir, logDir, get, kubelet };
}

test('containerLogs: timestamps, limitBytes, sinceSeconds, sinceTime, tail', async (t) => {
  const { clock, runtime, source, get } = await node(t);
  source.set([makePod('web', {}, { 'runtime-fake.nodelet.dev/main': 'stdout="one\\ntwo"' })]);
  await clock.advance(2_000);
  const [c] = (await runtime.listContainers({})).containers;
  await clock.advance(10_000);
  runtime.writeLog(c!.id, 'three\n');
  const logs = (q: string) => get(`/containerLogs/default/web/main${q}`);
  t.deepEqual(await logs(''), { status: 200, body: 'one\ntwo\nthree\n' });
  const stamped = (await logs('?timestamps=true')).body.split('\n');
  t.regex(stamped[0]!, /^2026-01-01T00:00:\d{2}(\.\d+)?Z one$/);
  t.regex(stamped[2]!, /^2026-01-01T00:00:1\d(\.\d+)?Z three$/);
  t.deepEqual(await logs('?limitBytes=5'), { status: 200, body: 'one\nt' });
  t.deepEqual(await logs('?sinceSeconds=5'), { status: 200, body: 'three\n' });
  t.deepEqual(await logs('?sinceTime=2026-01-01T00:00:05Z'), { status: 200, body: 'three\n' });
  t.deepEqual(await logs('?sinceTime=2025-12-31T00:00:00Z'), { status: 200, body: 'one\ntwo\nthree\n' });
  t.deepEqual(await logs('?tailLines=2&limitBytes=4'), { status: 200, body: 'two\n' });
  t.deepEqual(await logs('?tail=1'), { status: 200, body: 'three\n' });
  t.deepEqual(await logs('?tail=all'), { status: 200, body: 'one\ntwo\nthree\n' });
});

test('containerLogs: every bad query value is a 400 naming its parameter', async (t) => {
  const { clock, source, get } = await node(t);
  source.set([makePod('web', {}, { 'runtime-fake.nodelet.dev/main': 'stdout="one"' })]);
  await clock.advance(2_000);
  const cases: [string, RegExp][] = [
    ['tailLines=x', /^query parameter tailLines must be an integer, got "x"\n$/],
    ['tailLines=-1', /^query parameter tailLines must be at least 0/],
    ['limitBytes=0', /^query parameter limitBytes must be at least 1/],
    ['limitBytes=1e3', /^query parameter limitBytes must be an integer/],
    ['sinceSeconds=0', /^query parameter sinceSeconds must be at least 1/],
    ['sinceTime=yesterday', /^query parameter sinceTime must be an RFC 3339 time/],
    ['sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z', /sinceSeconds and sinceTime are mutually exclusive/],
    ['follow=maybe', /^query parameter follow must be true or false/],
    ['previous=2', /^query parameter previous must be true or false/],
    ['timestamps=yes', /^query parameter timestamps must be true or false/],
    ['tailLines=99999999999999999999', /^query parameter tailLines must be an integer/],
  ];
  for (const [query, message] of cases) {
    const { status, body } = await get(`/containerLogs/default/web/main?${query}`);
    t.is(status, 400, query);
    t.regex(body, message, query);
  }
});

test('containerLogs follow ends at limitBytes', async (t) => {
  const { clock, runtime, source, get } = await node(t);
  source.set([makePod('web', {}, { 'runtime-fake.nodelet.dev/main': 'stdout="one"' })]);
  await clock.advance(2_000);
  const [c] = (await runtime.listContainers({})).containers;
  const answer = get('/containerLogs/default/web/main?follow=true&limitBytes=12');
  for (let i = 0; i < 20; i++) {
    await clock.advance(300);
    runtime.writeLog(c!.id, `line${i}\n`);
  }
  t.deepEqual(await answer, { status: 200, body: 'one\nline0\nli' });
});

test('/logs/: files and listings of the log directory, and nothing outside it', async (t) => {
  const { dir, logDir, get } = await node(t);
  writeFileSync(join(logDir, 'syslog'), 'hello\n');
  writeFileSync(join(logDir, 'sub', 'a<b>.log'), 'nested\n');
  writeFileSync(join(dir, 'secret'), 'top secret\n');
  symlinkSync(join(dir, 'secret'), join(logDir, 'escape'));
  symlinkSync(dir, join(logDir, 'escapedir'));
  symlinkSync(join(logDir, 'syslog'), join(logDir, 'inside'));
  t.deepEqual(await get('/logs/syslog'), { status: 200, body: 'hello\n' });
  t.deepEqual(await get('/logs/inside'), { status: 200, body: 'hello\n' }, 'a symlink that stays inside');
  t.deepEqual(await get('/logs/sub/'), {
    status: 200,
    body: '<pre>\n<a href="a%3Cb%3E.log">a&lt;b&gt;.log</a>\n</pre>\n',
  });
  const root = await get('/logs/');
  t.is(root.status, 200);
  t.true(root.body.includes('<a href="sub/">sub/</a>'));
  t.is((await get('/logs/sub')).status, 301);
  for (const path of [
    '/logs/escape',
    '/logs/escapedir/secret',
    '/logs/%2e%2e/secret',
    '/logs/sub/%2e%2e/%2e%2e/secret',
    '/logs/sub%2f..%2f..%2fsecret',
  ]) {
    const { status, body } = await get(path);
    t.true(status === 403 || status === 404, `${path}: ${status}`);
    t.false(body.includes('top secret'), path);
  }
  t.is((await get('/logs/missing')).status, 404);
});

test('/configz is the running configuration; /runningpods/ lists the pods with running containers', async (t) => {
  const { clock, source, get } = await node(t);
  t.deepEqual(JSON.parse((await get('/configz')).body), { kubeletconfig: { port: 10250, readOnlyPort: 0 } });
  source.set([makePod('web', {})]);
  await clock.advance(3_000);
  const running = JSON.parse((await get('/runningpods/')).body);
  t.is(running.kind, 'PodList');
  t.deepEqual(
    running.items.map((p: any) => [
      p.metadata.namespace,
      p.metadata.name,
      p.spec.containers.map((c: any) => c.name),
    ]),
    [['default', 'web', ['main']]],
  );
});

test('/healthz/syncloop fails when the sync loop has not run for 2 × syncFrequency (at least 5 min)', async (t) => {
  const { kubelet, get } = await node(t);
  t.deepEqual(await get('/healthz/syncloop'), { status: 200, body: 'ok' });
  // The loop stops (a stuck iteration): after 5 min the check fails.
  await kubelet.stop();
  kubelet.latestLoopEntryTime = kubelet.clock.now() - 300_001;
  t.deepEqual(await get('/healthz/syncloop'), {
    status: 500,
    body: 'internal server error: sync Loop took longer than expected\n',
  });
  const all = await get('/healthz');
  t.is(all.status, 500);
  t.regex(all.body, /\[-\]syncloop failed: reason withheld\n/);
});

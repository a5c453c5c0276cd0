import { mkdtempSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import test from 'ava';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import {
  breaksTheRules,
  describeStatuses,
  fuzzCaseCount,
  httpFuzzCases,
  runFuzz,
  sendRaw,
} from '@nodelet/kernel/testing';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { Kubelet } from '../kubelet.js';
import { makePod, TestSource } from '../test-harness.js';
import { startKubeletServers } from './kubelet-server.js';
import { kubeletRouteTable } from './kubelet-routes.js';
import { ReadOnlyServer } from './read-only-server.js';
import { installStreamingRoutes } from './streaming-routes.js';
import { openServerConfig } from './test-server.js';

// Requests that once ended the process (URIError from a malformed escape), replayed before the random ones.
const crashCorpus = ['/pods/%ff/%ff/events', '/containerLogs/%ff/x/y', '/containerLogs/a/%e0%a4/c'];

const fuzzPaths = [
  '/containerLogs/default/web/main?tailLines=1',
  '/containerLogs/default/web/main?follow=true&limitBytes=4',
  '/logs/',
  '/pods',
  '/pods/default/web/events',
  '/healthz/syncloop',
  '/runningpods/',
  '/configz',
  '/spec/',
  '/stats/summary',
  '/metrics/resource',
];
const upgradePaths = [
  '/exec/default/web/main?command=sh&input=1&output=1&tty=1',
  '/attach/default/web/main?output=1',
  '/portForward/default/web?port=80',
];
const params = [
  'follow',
  'previous',
  'tailLines',
  'limitBytes',
  'sinceSeconds',
  'sinceTime',
  'timestamps',
  'command',
  'input',
  'output',
  'error',
  'tty',
  'port',
];

const CASES = fuzzCaseCount(10_000);

test(`${CASES.toLocaleString('en')} random and mutated requests to the HTTPS and read-only ports: the kubelet never dies, never answers 5xx, every 4xx has a message`, async (t) => {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const runtime = new FakeRuntime({ clock, logger, config: { writeLogs: true } });
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-fuzz-'));
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
  const routes = kubeletRouteTable(kubelet, logger, { logDir: dir });
  installStreamingRoutes(routes, kubelet, runtime, logger);
  const servers = await startKubeletServers(
    kubelet,
    { ...openServerConfig(join(dir, 'pki'), { logDir: dir }), readOnlyPort: 0 },
    logger,
    { routes },
  );
  t.teardown(async () => {
    await servers.close();
    await kubelet.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  source.set([makePod('web', {}, { 'runtime-fake.nodelet.dev/main': 'stdout="one\\ntwo"' })]);
  await clock.advance(2_000);

  const port = servers.securePort!;
  let session: Buffer | undefined;
  const open = (): TLSSocket => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, session });
    socket.once('session', (s: Buffer) => (session = s));
    return socket;
  };
  const send = (bytes: Buffer) => sendRaw(open(), bytes, 300, { halfClose: false });
  const sendAndWait = (bytes: Buffer) => sendRaw(open(), bytes, 10_000, { halfClose: false });

  // Each answer is awaited in full here (a TLS handshake on a loaded machine can take longer than the
  // fuzz loop's 300 ms, which only bounds how long a case may hold a connection).
  for (const path of crashCorpus) {
    const a = await sendAndWait(Buffer.from(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`));
    t.is(a.status, 400, path);
    t.regex(a.body, /malformed percent-escape/, path);
  }
  const { statuses, failures } = await runFuzz(
    httpFuzzCases(CASES, { seed: 20, paths: fuzzPaths, upgradePaths, params }),
    send,
  );
  t.log(describeStatuses(statuses));
  t.deepEqual(failures.slice(0, 20), [], `${failures.length} bad answers`);
  t.is(
    (await sendAndWait(Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'))).status,
    200,
    'still serving',
  );
});

test('without credentials: 401 with a message, or 4xx for what never reached authentication; the read-only port likewise never 5xx', async (t) => {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const runtime = new FakeRuntime({ clock, logger });
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-fuzz-'));
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus: new EventBus(clock, logger), clock, logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'pods'),
      sources: [new TestSource()],
    },
  );
  await kubelet.start();
  const config = openServerConfig(join(dir, 'pki'), { logDir: dir });
  const servers = await startKubeletServers(
    kubelet,
    {
      ...config,
      readOnlyPort: 0,
      authentication: { ...config.authentication, anonymous: { enabled: false } },
    },
    logger,
  );
  const readOnly = new ReadOnlyServer(servers.routes, logger);
  const readOnlyPort = (await readOnly.listen(0)).port;
  t.teardown(async () => {
    await servers.close();
    await readOnly.close();
    await kubelet.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const port = servers.securePort!;
  const secure = await runFuzz(
    httpFuzzCases(fuzzCaseCount(2_000), { seed: 7, paths: fuzzPaths, upgradePaths, params }),
    (bytes) =>
      sendRaw(connect({ host: '127.0.0.1', port, rejectUnauthorized: false }), bytes, 300, {
        halfClose: false,
      }),
    {
      judge: (c, a) =>
        breaksTheRules(c, a) ??
        (a.status !== undefined && a.status < 400 ? `${c.name}: ${a.status} without credentials` : undefined),
    },
  );
  t.deepEqual(secure.failures.slice(0, 20), [], `${secure.failures.length} bad answers`);
  // The read-only port has no authentication; what it serves is the upstream subset.
  const readOnlyRun = await runFuzz(
    httpFuzzCases(fuzzCaseCount(2_000), { seed: 8, paths: fuzzPaths, upgradePaths, params }),
    (bytes) => sendRaw(tcpConnect(readOnlyPort, '127.0.0.1'), bytes, 500),
  );
  t.deepEqual(
    readOnlyRun.failures.slice(0, 20),
    [],
    `${readOnlyRun.failures.length} bad answers on the read-only port`,
  );
  const plain = await sendRaw(tcpConnect(port, '127.0.0.1'), Buffer.from('GET /pods HTTP/1.1\r\n\r\n'), 500);
  t.is(plain.status, undefined, 'plain HTTP to the TLS port gets no HTTP answer');
});

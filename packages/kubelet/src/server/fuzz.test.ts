import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import test from 'ava';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { Kubelet } from '../kubelet.js';
import { makePod, TestSource } from '../test-harness.js';
import { startKubeletServers } from './kubelet-server.js';
import { openServerConfig } from './test-server.js';

/** A small deterministic PRNG (mulberry32), so a failing request can be found again. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const prefixes = [
  '/containerLogs/default/web/main',
  '/containerLogs/',
  '/logs/',
  '/pods/',
  '/pods/default/web/events',
  '/healthz/',
  '/runningpods/',
  '/configz',
  '/spec/',
  '/',
];
const pieces = [
  '%ff',
  '%',
  '%2',
  '%e0%a4',
  '..',
  '%2e%2e',
  '/',
  '//',
  '\u00e9',
  'x',
  '%00',
  '?',
  '&',
  '=',
  '#',
];
const params = [
  'follow',
  'previous',
  'timestamps',
  'tailLines',
  'limitBytes',
  'sinceSeconds',
  'sinceTime',
  'tail',
];
const values = [
  '',
  'true',
  '-1',
  '0',
  '1e9',
  '99999999999999999999',
  'NaN',
  '%ff',
  '2026-01-01T00:00:00Z',
  'x',
];

// Corpus: requests that once crashed the kubelet (URIError from a malformed escape).
const corpus = ['/pods/%ff/%ff/events', '/containerLogs/%ff/x/y', '/containerLogs/a/%e0%a4/c'];

test('fuzz: random and mutated requests never take the server down and are never answered 5xx', async (t) => {
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
  const servers = await startKubeletServers(
    kubelet,
    openServerConfig(join(dir, 'pki'), { logDir: dir }),
    logger,
  );
  const agent = new Agent({ keepAlive: true, maxSockets: 4, rejectUnauthorized: false });
  t.teardown(async () => {
    agent.destroy();
    await servers.close();
    await kubelet.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  source.set([makePod('web', {}, { 'runtime-fake.nodelet.dev/main': 'stdout="one\\ntwo"' })]);
  await clock.advance(2_000);
  const port = servers.securePort!;
  const send = (path: string, method = 'GET') =>
    new Promise<number>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path, method, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(-1));
      req.end();
    });

  const random = prng(20);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const paths = [...corpus];
  for (let i = 0; i < 600; i++) {
    let path = pick(prefixes);
    for (let n = Math.floor(random() * 4); n > 0; n--) path += pick(pieces);
    const query = Array.from({ length: Math.floor(random() * 4) }, () => `${pick(params)}=${pick(values)}`);
    // follow would wait for the container: never with a running one in a fuzz run.
    paths.push(`${path}${query.length ? `?${query.filter((q) => !q.startsWith('follow=')).join('&')}` : ''}`);
  }
  const bad: string[] = [];
  const seen = new Map<number, number>();
  for (const path of paths) {
    let status: number;
    try {
      status = await send(path, pick(['GET', 'GET', 'GET', 'HEAD', 'POST', 'DELETE', 'BREW']));
    } catch {
      status = -2; // Node refused to send it (an invalid path): nothing reached the server
    }
    if (status >= 500) bad.push(`${status} ${path}`);
    seen.set(status, (seen.get(status) ?? 0) + 1);
  }
  t.deepEqual(bad, [], 'no 5xx');
  t.log([...seen].sort().join(' '));

  // Raw bytes: a huge header, a truncated request, garbage — each answered or closed, never fatal.
  const raw = (bytes: string) =>
    new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => socket.end(bytes));
      let answer = '';
      socket.on('data', (d: Buffer) => (answer += d.toString()));
      socket.on('close', () => resolve(answer.split('\r\n')[0] ?? ''));
      socket.on('error', () => resolve('error'));
    });
  t.regex(
    await raw(`GET /pods HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`),
    /^HTTP\/1\.1 431|^$/,
  );
  t.regex(await raw('GET /pods HTTP/1.1\r\nHost'), /^HTTP\/1\.1 400|^$/);
  t.regex(await raw('\x00\x01\x02 garbage\r\n\r\n'), /^HTTP\/1\.1 400|^$/);
  t.is(await send('/healthz'), 200, 'still serving');
});

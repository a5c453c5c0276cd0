import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { UrlSource } from './url-source.js';
import { eventually, podYaml, testEnv } from './test-env.js';

interface Reply {
  status: number;
  body: string;
}

async function serve(t: { teardown(fn: () => unknown): void }) {
  const state = {
    reply: { status: 200, body: podYaml('web') } as Reply,
    requests: 0,
    headers: [] as IncomingHttpHeaders[],
  };
  const server = createServer((req, res) => {
    state.requests++;
    state.headers.push(req.headers);
    res.writeHead(state.reply.status, { 'content-type': 'application/yaml' });
    res.end(state.reply.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
  return { state, url };
}

function setup(url: string, headers?: Record<string, string | string[]>) {
  const env = testEnv();
  const source = new UrlSource({
    url,
    nodeName: 'node1',
    clock: env.clock,
    logger: env.logger,
    bus: env.bus,
    headers,
  });
  const snapshots: Pod[][] = [];
  source.snapshots$.subscribe((s) => snapshots.push(s));
  return { ...env, source, snapshots };
}

test('a 500 is one clear log line naming the URL and status; the last good pods are kept', async (t) => {
  const { state, url } = await serve(t);
  const { source, snapshots, clock, sink } = setup(url);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);
  t.deepEqual(
    snapshots[0]!.map((p) => p.metadata!.name),
    ['web-node1'],
  );
  t.is(snapshots[0]![0]!.metadata!.annotations!['kubernetes.io/config.source'], 'http');

  state.reply = { status: 500, body: 'boom' };
  await clock.advance(20_000);
  await eventually(() => state.requests >= 2 && sink.find('returned HTTP').length > 0, clock);
  const line = sink.find('returned HTTP')[0]!;
  t.is(line.level, 'warn');
  t.is(
    line.message,
    `manifest URL ${url} returned HTTP 500 Internal Server Error; keeping the 1 pod(s) it last served`,
  );
  t.deepEqual(
    source.pods().map((p) => p.metadata!.name),
    ['web-node1'],
  );

  // Still failing: not logged again.
  await clock.advance(20_000);
  await eventually(() => state.requests >= 3, clock);
  await source.poll();
  t.is(sink.find('returned HTTP').length, 1);
  t.is(snapshots.length, 1);

  // Back, same body: no new snapshot, one recovery line.
  state.reply = { status: 200, body: podYaml('web') };
  await clock.advance(20_000);
  await eventually(() => sink.find('serving again').length === 1, clock);
  t.is(snapshots.length, 1);
});

test('the body may be a PodList or multi-document YAML; headers are sent', async (t) => {
  const { state, url } = await serve(t);
  state.reply = {
    status: 200,
    body: JSON.stringify({
      apiVersion: 'v1',
      kind: 'PodList',
      items: [
        { metadata: { name: 'a' }, spec: { containers: [{ name: 'a', image: 'busybox' }] } },
        { metadata: { name: 'b' }, spec: { containers: [{ name: 'b', image: 'busybox' }] } },
      ],
    }),
  };
  const { source, snapshots, clock } = setup(url, { Authorization: 'Bearer x', 'X-Multi': ['1', '2'] });
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);
  t.deepEqual(
    snapshots[0]!.map((p) => p.metadata!.name),
    ['a-node1', 'b-node1'],
  );
  t.is(state.headers[0]!.authorization, 'Bearer x');
  t.is(state.headers[0]!['x-multi'], '1, 2');

  state.reply = { status: 200, body: `${podYaml('c')}---\n${podYaml('d')}` };
  await clock.advance(20_000);
  await eventually(() => snapshots.length === 2, clock);
  t.deepEqual(
    snapshots[1]!.map((p) => p.metadata!.name),
    ['c-node1', 'd-node1'],
  );
});

test('an invalid body is reported once and rejected; the last good pods are kept', async (t) => {
  const { state, url } = await serve(t);
  const { source, snapshots, clock, sink, events } = setup(url);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);
  state.reply = { status: 200, body: podYaml('web', '\n    imagePullPolcy: Always') };
  await clock.advance(20_000);
  await eventually(() => sink.find('invalid manifest').length === 1, clock);
  t.is(
    sink.find('invalid manifest')[0]!.message,
    `manifest URL ${url} served an invalid manifest: ${url}: pod "web": spec.containers[0].imagePullPolcy: unknown field; keeping the 1 pod(s) it last served`,
  );
  t.is(events.filter((e) => e.type === '[Source] Manifest Rejected').length, 1);
  t.is(source.pods().length, 1);
});

test('an unreachable URL is logged with the cause and no pods', async (t) => {
  // A port that was just free: nothing listens there.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const dead = `http://127.0.0.1:${port}/pods`;
  const { source, clock, sink } = setup(dead);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => sink.find('could not be read').length === 1, clock);
  t.regex(sink.find('could not be read')[0]!.message, /ECONNREFUSED.*; no pods from it yet$/);
});

test('a body larger than an object can be (1.5 MiB) is refused while it is read, naming the limit; the last good pods are kept', async (t) => {
  const { state, url } = await serve(t);
  const { source, snapshots, clock, sink } = setup(url);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);
  state.reply = { status: 200, body: `${podYaml('web')}# ${'x'.repeat(2 * 1024 * 1024)}\n` };
  await clock.advance(20_000);
  await eventually(() => sink.find('larger than any object can be').length > 0, clock);
  t.regex(
    sink.find('larger than any object can be')[0]!.message,
    new RegExp(
      `manifest URL ${url.replace(/[.]/g, '\\.')} is (2\\d{6}|more than 1572864) bytes, larger than any object can be: the API server's request limit is 1\\.5 MiB \\(1572864 bytes\\)`,
    ),
  );
  t.deepEqual(
    source.pods().map((p) => p.metadata!.name),
    ['web-node1'],
  );
});

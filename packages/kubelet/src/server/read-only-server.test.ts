import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { Kubelet } from '../kubelet.js';
import { TestSource } from '../test-harness.js';
import { kubeletRouteTable } from './kubelet-routes.js';
import { ReadOnlyServer } from './read-only-server.js';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function readOnlyServer(t: import('ava').ExecutionContext) {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const runtime = new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0 } });
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-server-'));
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus: new EventBus(clock, logger), clock, logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      sources: [new TestSource()],
    },
  );
  await kubelet.start();
  const server = new ReadOnlyServer(kubeletRouteTable(kubelet, logger, { logDir: dir }), logger);
  const { port } = await server.listen(0);
  t.teardown(async () => {
    await server.close();
    await kubelet.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return port;
}

// These two requests ended the process once (URIError from decodeURIComponent): the first in the
// request handler, the second in the log handler's promise, which took `nodelet up` down with it.
test('a malformed percent-escape in the path is 400 naming the path, and the server keeps serving', async (t) => {
  const port = await readOnlyServer(t);
  for (const path of ['/pods/%ff/%ff/events', '/containerLogs/%ff/x/y', '/containerLogs/a/%e0%a4/c']) {
    const { status, body } = await get(port, path);
    t.is(status, 400, path);
    t.is(body, `malformed percent-escape in the path ${JSON.stringify(path)}\n`);
  }
  t.is((await get(port, '/pods')).status, 200);
});

test('the read-only port serves healthz, pods and spec, and no container logs, node logs or exec', async (t) => {
  const port = await readOnlyServer(t);
  t.deepEqual(await get(port, '/healthz'), { status: 200, body: 'ok' });
  t.deepEqual(await get(port, '/healthz/ping'), { status: 200, body: 'ok' });
  t.deepEqual(await get(port, '/healthz/syncloop'), { status: 200, body: 'ok' });
  const pods = await get(port, '/pods');
  t.is(pods.status, 200);
  t.is(JSON.parse(pods.body).kind, 'PodList');
  t.is((await get(port, '/pods/')).status, 200);
  const spec = await get(port, '/spec/');
  t.is(spec.status, 200);
  t.true(JSON.parse(spec.body).num_cores > 0);
  for (const path of [
    '/containerLogs/default/web/main',
    '/logs/',
    '/exec/default/web/main',
    '/runningpods/',
    '/configz',
  ]) {
    t.is((await get(port, path)).status, 404, path);
  }
});

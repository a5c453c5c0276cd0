import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { Kubelet } from './kubelet.js';
import { ReadOnlyServer } from './server.js';
import { TestSource } from './test-harness.js';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

// These two requests ended the process once (URIError from decodeURIComponent): the first in the
// request handler, the second in the log handler's promise, which took `nodelet up` down with it.
test('a malformed percent-escape in the path is 400 naming the path, and the server keeps serving', async (t) => {
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
  const server = new ReadOnlyServer(kubelet, logger);
  const { port } = await server.listen(0);
  t.teardown(async () => {
    await server.close();
    await kubelet.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const path of ['/pods/%ff/%ff/events', '/containerLogs/%ff/x/y', '/containerLogs/a/%e0%a4/c']) {
    const { status, body } = await get(port, path);
    t.is(status, 400, path);
    t.is(body, `malformed percent-escape in the path ${JSON.stringify(path)}\n`);
  }
  t.is((await get(port, '/pods')).status, 200);
});

import { Agent, request as httpsRequest } from 'node:https';
import { connect, type TLSSocket } from 'node:tls';
import test from 'ava';
import { startApiServerProcess, type ApiServerProcess } from './test-apiserver-process.js';
import { startCluster, waitFor } from './test-helpers.js';

// Clients that hold the server's resources by being slow: sending a request a byte at a time (slowloris),
// or opening a watch and never reading it. The server lets them go and keeps serving everyone else.

function slowlyWrite(socket: TLSSocket, text: string, everyMs: number): () => void {
  let at = 0;
  const timer = setInterval(() => {
    if (at >= text.length || socket.destroyed) return clearInterval(timer);
    socket.write(text[at++]!);
  }, everyMs);
  return () => clearInterval(timer);
}

test('slowloris: clients that send headers or a body a byte at a time get 408 and are closed, while others are served', async (t) => {
  const c = await startCluster({ slowClients: { headersMs: 1000, requestMs: 3000, checkIntervalMs: 200 } });
  t.teardown(() => c.destroy());
  const port = Number(new URL(c.cp.url).port);
  const slow: { answer: string; closed: boolean; stop: () => void }[] = [];
  for (let i = 0; i < 20; i++) {
    const socket = connect({
      host: '127.0.0.1',
      port,
      ca: c.cp.caCert,
      ...c.cp.adminCredentials,
      servername: 'localhost',
    });
    const client = { answer: '', closed: false, stop: () => {} };
    socket.on('data', (d: Buffer) => (client.answer += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => (client.closed = true));
    const request =
      i % 2 === 0
        ? // Headers that never end.
          `GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(1000)}`
        : // Headers, then a body that never ends.
          `POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"metadata":{"name":"slow"},"data":{"a":"${'a'.repeat(900)}`;
    socket.once('secureConnect', () => (client.stop = slowlyWrite(socket, request, 50)));
    slow.push(client);
  }
  t.teardown(() => slow.forEach((s) => s.stop()));
  // Everyone else is served meanwhile.
  for (let i = 0; i < 20; i++) {
    const r = await c.api('GET', '/api/v1/namespaces/default/configmaps');
    t.is(r.status, 200);
  }
  await waitFor(
    () => (slow.every((s) => s.closed) ? true : undefined),
    'the slow clients to be closed',
    20_000,
  );
  for (const s of slow) {
    t.regex(s.answer, /^HTTP\/1\.1 408 Request Timeout\r\n/);
    t.regex(s.answer, /408 Request Timeout: request timeout/);
  }
  t.is(
    (await c.api('GET', '/api/v1/namespaces/default/configmaps/slow')).status,
    404,
    'nothing half-sent was stored',
  );
});

function api(
  s: ApiServerProcess,
  agent: Agent,
  method: string,
  path: string,
  body?: unknown,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      new URL(path, s.url),
      { method, agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** A raw watch: the bytes it got, whether the server ended it; `read` false leaves them unread. */
function rawWatch(s: ApiServerProcess, read: boolean, accept = 'application/json') {
  const socket = connect({
    host: '127.0.0.1',
    port: s.port,
    ca: s.ca,
    cert: s.cert,
    key: s.key,
    servername: 'localhost',
  });
  const state = { bytes: 0, text: '', ended: false, socket };
  const consume = () => {
    socket.on('data', (d: Buffer) => {
      state.bytes += d.length;
      if (state.text.length < 4096) state.text += d.toString('latin1');
    });
  };
  socket.on('end', () => (state.ended = true));
  socket.on('close', () => (state.ended = true));
  socket.on('error', () => undefined);
  socket.write(
    'GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&includeObject=Object HTTP/1.1\r\n' +
      `Host: x\r\nAccept: ${accept}\r\n\r\n`,
  );
  if (read) consume();
  return { state, resume: consume };
}

test('watchers that never read are cut off once 1 MiB waits for them; memory stays bounded and other watchers get every event', async (t) => {
  const s = await startApiServerProcess({ maxWatchBufferBytes: 1024 * 1024 });
  t.teardown(() => s.stop());
  const agent = new Agent({ keepAlive: true, ca: s.ca, cert: s.cert, key: s.key });
  t.teardown(() => agent.destroy());
  const reader = rawWatch(s, true);
  // Eight watchers that never read, each watching Table rows with the objects in them (encoded for each
  // watcher, not shared): unbounded, each would hold every event, 50 MiB apiece.
  const table = 'application/json;as=Table;v=v1;g=meta.k8s.io';
  const stalled = Array.from({ length: 8 }, () => rawWatch(s, false, table));
  await waitFor(() => (reader.state.text.includes('200 OK') ? true : undefined), 'the watches to start');
  const rssBefore = s.rss();
  const objects = 200;
  const value = 'x'.repeat(256 * 1024);
  for (let i = 0; i < objects; i++) {
    const status = await api(s, agent, 'POST', '/api/v1/namespaces/default/configmaps', {
      metadata: { name: `big-${i}` },
      data: { value },
    });
    t.is(status, 201);
  }
  await waitFor(
    () => (reader.state.bytes > objects * value.length ? true : undefined),
    'the reading watcher to get every event',
    30_000,
  );
  const rssAfter = s.rss();
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MiB`;
  t.log(
    `${mib(objects * value.length)} of events; server RSS ${mib(rssBefore)} before, ${mib(rssAfter)} after`,
  );
  // Writing 50 MiB grows the server by some 40 MiB of heap and page cache with no watcher at all; the
  // stalled watchers' 400 MiB would come on top.
  t.true(rssAfter - rssBefore < 100 * 1024 * 1024, `RSS grew from ${mib(rssBefore)} to ${mib(rssAfter)}`);
  // What a stalled watcher finds when it reads at last: a part of the stream, then the end.
  for (const w of stalled) {
    w.resume();
    await waitFor(() => (w.state.ended ? true : undefined), 'the stalled watch to have been ended', 30_000);
    t.true(w.state.bytes < (objects * value.length) / 2, `a stalled watch got ${mib(w.state.bytes)}`);
  }
  t.false(reader.state.ended, 'the reading watcher is still served');
  reader.state.socket.destroy();
  t.true(s.alive());
});

import test from 'ava';
import net, { type AddressInfo } from 'node:net';
import { Duplex } from 'node:stream';
import WebSocket from 'ws';
import type { PortForwardHandler } from './portforward/handler.js';
import { spdyPortForwardClient } from './portforward/spdy-client.js';
import { upgradeServer } from './test-servers.js';
import { handlePortForwardUpgrade } from './upgrade.js';

/** Echoes with the port in front, so a test sees which port a byte went to; port 9 refuses. */
const echo: PortForwardHandler = {
  forward(port: number, connection: Duplex) {
    if (port === 9) return Promise.reject(new Error('connection refused'));
    return new Promise((resolve) => {
      connection.on('data', (d: Buffer) => connection.write(`${port}:${d.toString()}`));
      connection.on('end', () => connection.end());
      connection.on('close', () => resolve());
    });
  },
};

test('WebSocket v4: ports from the query, 2-byte little-endian port prefix on each channel, data per channel pair', async (t) => {
  const server = await upgradeServer((req, socket, head) =>
    handlePortForwardUpgrade(req, socket, head, echo),
  );
  t.teardown(server.close);
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}/portForward/ns/pod?ports=80,8080`, [
    'v4.channel.k8s.io',
  ]);
  const got: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    ws.on('message', (d: Buffer) => {
      got.push(d);
      if (got.length === 4) {
        ws.send(Buffer.from('\x02hello'));
      }
      if (got.length === 5) resolve();
    });
    ws.on('error', reject);
  });
  ws.close();
  t.deepEqual(
    got.slice(0, 4).map((b) => [b[0], b.readUInt16LE(1)]),
    [
      [0, 80],
      [1, 80],
      [2, 8080],
      [3, 8080],
    ],
  );
  t.is(got[4]!.toString(), '\x028080:hello');
});

test('WebSocket: a bad port in the query is 400 naming the parameter', async (t) => {
  const server = await upgradeServer((req, socket, head) =>
    handlePortForwardUpgrade(req, socket, head, echo),
  );
  t.teardown(server.close);
  const status = await new Promise<{ code: number; body: string }>((resolve) => {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/portForward/ns/pod?ports=http`, [
      'v4.channel.k8s.io',
    ]);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ code: res.statusCode!, body }));
    });
    ws.on('error', () => undefined);
  });
  t.is(status.code, 400);
  t.regex(status.body, /query parameter ports: "http" is not a port number/);
});

async function forwardThrough(url: string, port: number, text: string): Promise<string> {
  const client = spdyPortForwardClient(url);
  const local = net.createServer((conn) => void client.forward(port, conn).catch(() => conn.destroy()));
  await new Promise<void>((r) => local.listen(0, '127.0.0.1', r));
  try {
    return await new Promise<string>((resolve, reject) => {
      const s = net.connect((local.address() as AddressInfo).port, '127.0.0.1', () => s.write(text));
      s.on('data', (d: Buffer) => {
        resolve(d.toString());
        s.destroy();
      });
      s.on('close', () => resolve(''));
      s.on('error', reject);
    });
  } finally {
    local.close();
    client.close();
  }
}

test('SPDY: data/error stream pairs by requestid; served here, and proxied to a streaming URL', async (t) => {
  const runtime = await upgradeServer((req, socket, head) =>
    handlePortForwardUpgrade(req, socket, head, echo),
  );
  t.teardown(runtime.close);
  t.is(await forwardThrough(`${runtime.url}/portForward/ns/pod`, 80, 'hi'), '80:hi');
  const kubelet = await upgradeServer((req, socket, head) =>
    handlePortForwardUpgrade(req, socket, head, { url: `${runtime.url}/pf/token` }),
  );
  t.teardown(kubelet.close);
  t.is(await forwardThrough(`${kubelet.url}/portForward/ns/pod`, 8080, 'via proxy'), '8080:via proxy');
});

test('SPDY: a refused port ends the forwarded connection (the error goes to the error stream)', async (t) => {
  const server = await upgradeServer((req, socket, head) =>
    handlePortForwardUpgrade(req, socket, head, echo),
  );
  t.teardown(server.close);
  const client = spdyPortForwardClient(`${server.url}/portForward/ns/pod`);
  t.teardown(() => client.close());
  const a = new Duplex({ read() {}, write: (_c, _e, cb) => cb() });
  await t.throwsAsync(client.forward(9, a), {
    message: /an error occurred forwarding 9 -> 9: connection refused/,
  });
});

test('garbage and truncated SPDY frames on an upgraded connection end that connection, not the server', async (t) => {
  const server = await upgradeServer((req, socket, head) =>
    handlePortForwardUpgrade(req, socket, head, echo),
  );
  t.teardown(server.close);
  const port = Number(new URL(server.url).port);
  for (const garbage of [
    Buffer.from([0x80, 3, 0, 1, 0, 0, 0, 2, 0, 0]), // SYN_STREAM too short
    Buffer.from([0x80, 3, 0, 1, 0, 0, 0, 14, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]), // bad header block
    Buffer.from([0x80, 3, 0, 1, 0, 0, 0, 50, 0]), // truncated, then the client goes away
    Buffer.from('\xff'.repeat(64), 'latin1'),
  ]) {
    const closed = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(
          'POST /portForward/ns/pod HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n',
        );
        s.write('X-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n');
        s.write(garbage);
        if (garbage.length === 9) s.end();
      });
      s.on('data', () => undefined);
      s.on('close', () => resolve(true));
      s.setTimeout(3000, () => {
        resolve(false);
        s.destroy();
      });
      s.on('error', () => undefined);
    });
    t.true(closed, garbage.toString('hex'));
  }
  t.is(await forwardThrough(`${server.url}/portForward/ns/pod`, 80, 'still up'), '80:still up');
});

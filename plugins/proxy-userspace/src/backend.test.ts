import { createHash, randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect, createServer } from 'node:net';
import test from 'ava';
import { createLogger, RealClock } from '@nodelet/kernel';
import { ChangeTracker, defaultNodeContext, type EndpointSlice } from '@nodelet/proxy';
import {
  CONFORMANCE_NODE,
  conformanceServices,
  conformanceSlices,
  connectMany,
  EMPTY,
  startNameServers,
  STICKY,
  tally,
  WEB,
} from '@nodelet/proxy/testing';
import { UserspaceBackend } from './backend.js';

// No root needed: backends on loopback addresses, the proxy on 127.0.0.1, free ports.
const BACKENDS: [string, string, string] = ['127.0.0.11', '127.0.0.12', '127.0.0.13'];

async function setup(t: { teardown: (fn: () => Promise<void>) => void }) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const servers = await startNameServers(BACKENDS, port);
  const backend = new UserspaceBackend({
    clock: new RealClock(),
    logger: createLogger({ sink: () => undefined }),
    ports: 'ephemeral',
  });
  t.teardown(async () => {
    await backend.stop();
    await servers.close();
  });
  const tracker = new ChangeTracker(
    defaultNodeContext(CONFORMANCE_NODE),
    createLogger({ sink: () => undefined }),
  );
  for (const s of conformanceServices()) tracker.upsertService(s);
  for (const s of conformanceSlices({ backends: BACKENDS, targetPort: port })) tracker.upsertEndpointSlice(s);
  const c = tracker.commit();
  await backend.sync(c.state, c.changes, true);
  const sync = async () => {
    const next = tracker.commit();
    return backend.sync(next.state, next.changes, false);
  };
  return { backend, tracker, sync, port };
}

/** A proxy for one conformance service whose only endpoint is `ip:port` (a server the test started). */
async function proxyOne(
  t: { teardown: (fn: () => Promise<void>) => void },
  service: string,
  slice: string,
  ip: string,
  port: { name: string; protocol: 'TCP' | 'UDP'; port: number },
  options: { udpSessionLimit?: number } = {},
) {
  const backend = new UserspaceBackend({
    clock: new RealClock(),
    logger: createLogger({ sink: () => undefined }),
    ports: 'ephemeral',
    ...options,
  });
  t.teardown(() => backend.stop());
  const tracker = new ChangeTracker(
    defaultNodeContext(CONFORMANCE_NODE),
    createLogger({ sink: () => undefined }),
  );
  tracker.upsertService(conformanceServices().find((s) => s.metadata?.name === service)!);
  tracker.upsertEndpointSlice({
    ...conformanceSlices().find((s) => s.metadata?.name === slice)!,
    endpoints: [{ addresses: [ip], conditions: { ready: true } }],
    ports: [port],
  });
  const c = tracker.commit();
  await backend.sync(c.state, c.changes, true);
  return backend;
}

test('round-robin over the ready endpoints; a NodePort listener too', async (t) => {
  const { backend } = await setup(t);
  const web = backend.addressOf(WEB.name)!;
  t.deepEqual(tally(await connectMany(web.address, web.port, 300)), { b1: 100, b2: 100, b3: 100 });
  const np = backend.addressOf(WEB.name, 'nodePort')!;
  t.deepEqual(tally(await connectMany(np.address, np.port, 3)), { b1: 1, b2: 1, b3: 1 });
});

test('ClientIP affinity pins a client to one endpoint', async (t) => {
  const { backend } = await setup(t);
  const sticky = backend.addressOf(STICKY.name)!;
  const got = tally(await connectMany(sticky.address, sticky.port, 30));
  t.is(Object.keys(got).length, 1);
  t.is(Object.values(got)[0], 30);
});

test('removing an endpoint stops traffic to it; no endpoints: connection refused', async (t) => {
  const { backend, tracker, sync } = await setup(t);
  const slice = conformanceSlices().find((s) => s.metadata?.name === 'web-fghij')!;
  tracker.deleteEndpointSlice(slice);
  await sync();
  const web = backend.addressOf(WEB.name)!;
  t.deepEqual(tally(await connectMany(web.address, web.port, 30)), { b1: 15, b2: 15 });
  const empty = backend.addressOf(EMPTY.name)!;
  t.deepEqual(await connectMany(empty.address, empty.port, 3), [
    'ECONNREFUSED',
    'ECONNREFUSED',
    'ECONNREFUSED',
  ]);
  t.false(backend.list().find((l) => l.servicePort === EMPTY.name)!.open);
});

test('an endpoint that refuses is skipped: the next one serves', async (t) => {
  const { backend, tracker, sync, port } = await setup(t);
  const down: EndpointSlice = {
    ...conformanceSlices().find((s) => s.metadata?.name === 'web-fghij')!,
    endpoints: [{ addresses: ['127.0.0.14'], conditions: { ready: true } }],
    ports: [{ name: 'http', protocol: 'TCP', port }],
  };
  tracker.upsertEndpointSlice(down);
  await sync();
  const web = backend.addressOf(WEB.name)!;
  const got = tally(await connectMany(web.address, web.port, 30));
  t.false('ECONNREFUSED' in got);
  t.is((got.b1 ?? 0) + (got.b2 ?? 0), 30);
});

test('TCP bulk both ways: every byte arrives in order; a half-closed client still gets the reply', async (t) => {
  // An endpoint that echoes what it receives, and ends its side only after the client ended its own.
  const echo = createServer({ allowHalfOpen: true }, (c) => {
    c.pipe(c);
    c.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.11', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => echo.close(() => resolve())));
  const echoPort = (echo.address() as { port: number }).port;
  const backend = await proxyOne(t, 'web', 'web-abcde', '127.0.0.11', {
    name: 'http',
    protocol: 'TCP',
    port: echoPort,
  });
  const web = backend.addressOf(WEB.name)!;

  // 24 MiB in writes of varying sizes (1 byte to 1 MiB): reads and writes never line up.
  const payload = randomBytes(24 * 1024 * 1024);
  const received = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = connect({ host: web.address, port: web.port, allowHalfOpen: true }, () => {
      let off = 0;
      let size = 1;
      const pump = () => {
        while (off < payload.length) {
          const end = Math.min(payload.length, off + size);
          const more = s.write(payload.subarray(off, end));
          off = end;
          size = size >= 1 << 20 ? 1 : size * 7;
          if (!more) return void s.once('drain', pump);
        }
        s.end();
      };
      pump();
    });
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('end', () => resolve(Buffer.concat(chunks)));
    s.on('error', reject);
    s.setTimeout(30_000, () => s.destroy(new Error('no reply within 30 s')));
  });
  t.is(received.length, payload.length);
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  t.is(sha(received), sha(payload));
});

test('UDP: datagrams are relayed both ways; the session table is bounded', async (t) => {
  const echoPort = 20000 + Math.floor(Math.random() * 20000);
  const echo = createSocket('udp4');
  echo.on('message', (msg, from) =>
    echo.send(Buffer.concat([Buffer.from('echo:'), msg]), from.port, from.address),
  );
  await new Promise<void>((resolve) => echo.bind(echoPort, '127.0.0.11', () => resolve()));
  t.teardown(async () => void echo.close());
  const backend = await proxyOne(
    t,
    'dns',
    'dns-abcde',
    '127.0.0.11',
    { name: 'dns', protocol: 'UDP', port: echoPort },
    { udpSessionLimit: 2 },
  );
  const dns = backend.addressOf('conformance/dns:dns')!;
  const ask = (text: string) =>
    new Promise<string>((resolve, reject) => {
      const s = createSocket('udp4');
      const timer = setTimeout(() => reject(new Error('no reply')), 2000);
      s.on('message', (m) => {
        clearTimeout(timer);
        s.close();
        resolve(m.toString());
      });
      s.send(text, dns.port, dns.address);
    });
  const replies: string[] = [];
  for (const text of ['a', 'b', 'c']) {
    replies.push(await ask(text));
    t.true(backend.udpSessions('conformance/dns:dns') <= 2, 'never more sessions than the limit');
  }
  t.deepEqual(replies, ['echo:a', 'echo:b', 'echo:c']);
  t.is(backend.udpSessions('conformance/dns:dns'), 2, 'the least recently used session was dropped');
});

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import {
  type sendUnaryData,
  Server as GrpcServer,
  ServerCredentials,
  type ServerUnaryCall,
  status as GrpcStatus,
} from '@grpc/grpc-js';
import type { Container, Probe } from '@nodelet/api';
import { createLogger, RealClock } from '@nodelet/kernel';
import {
  decodeHealthCheckRequest,
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  encodeHealthCheckResponse,
  healthServiceDefinition,
} from './grpc-health.js';
import { grpcHandler, httpGetHandler, tcpSocketHandler } from './handlers.js';
import { requestHeaders } from './http-handler.js';
import {
  KUBE_PROBE_USER_AGENT,
  type ProbeContext,
  type ProbeHandler,
  ProbeHandlerRegistry,
} from './probe-handler.js';

/**
 * The built-in handlers against real servers on 127.0.0.1, on the real clock: every server is closed in
 * teardown, every wait is bounded by the probe's own timeout. Probes that must succeed get 30 s: on a loaded
 * 2-core machine a TLS handshake or a redirect took over 1 s; the timeout rules are tested on the virtual
 * clock (timeout.test.ts) and here only with a server that never answers.
 */

const clock = new RealClock();
const logger = createLogger({ sink: () => {} });

function ctx(probe: Probe, container: Partial<Container> = {}, timeoutMs = 30_000): ProbeContext {
  return {
    probeType: 'readiness',
    probe,
    pod: { metadata: { name: 'p', namespace: 'default', uid: 'u' }, spec: { containers: [] } },
    container: { name: 'main', image: 'x', ...container },
    containerId: 'c1',
    podIP: '127.0.0.1',
    timeoutMs,
    runtime: undefined as never,
    clock,
    logger,
    userAgent: KUBE_PROBE_USER_AGENT,
  };
}

async function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return (server.address() as AddressInfo).port;
}

function close(server: { close(cb?: () => void): unknown; closeAllConnections?: () => void }) {
  return () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    });
}

/** An HTTP server whose handler the test sets; it records the request headers it saw. */
async function httpServer(t: { teardown(fn: () => unknown): void }) {
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  let handle: Parameters<typeof createHttpServer>[1] = (_req, res) => res.end('ok');
  const server = createHttpServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    handle!(req, res);
  });
  const port = await listen(server);
  t.teardown(close(server));
  return { port, seen, set: (h: typeof handle) => (handle = h) };
}

const freePort = async () => {
  const s = createTcpServer();
  const port = await listen(s);
  await new Promise((r) => s.close(r));
  return port;
};

test('httpGet: 200 is success with the body; the request carries kube-probe headers, no keep-alive', async (t) => {
  const s = await httpServer(t);
  s.set((_req, res) => res.writeHead(200).end('healthy'));
  const out = await httpGetHandler.probe(ctx({ httpGet: { port: s.port, path: '/healthz?full=1' } }));
  t.deepEqual(out, { result: 'success', output: 'healthy' });
  t.is(s.seen[0]!.url, '/healthz?full=1');
  t.is(s.seen[0]!.headers['user-agent'], 'kube-probe/1.34');
  t.is(s.seen[0]!.headers.accept, '*/*');
  t.is(s.seen[0]!.headers.connection, 'close');
  t.is(s.seen[0]!.headers['accept-encoding'], undefined);
});

test('httpGet: httpHeaders (repeatable, Host sets the host), a named port, the pod IP as default host', async (t) => {
  const s = await httpServer(t);
  const probe: Probe = {
    httpGet: {
      port: 'web',
      path: '/',
      httpHeaders: [
        { name: 'Host', value: 'example.test' },
        { name: 'X-Custom', value: 'a' },
        { name: 'x-custom', value: 'b' },
        { name: 'user-agent', value: 'mine' },
        { name: 'Accept', value: '' },
      ],
    },
  };
  const out = await httpGetHandler.probe(
    ctx(probe, { ports: [{ name: 'web', containerPort: s.port, protocol: 'TCP' }] }),
  );
  t.is(out.result, 'success');
  const h = s.seen[0]!.headers;
  t.is(h.host, 'example.test');
  t.is(h['x-custom'], 'a, b');
  t.is(h['user-agent'], 'mine');
  t.is(h.accept, undefined, 'an Accept given empty is dropped');
});

test('httpGet: 200–399 succeed, 3xx unfollowed is a warning, 400 and up fail with the status code', async (t) => {
  const s = await httpServer(t);
  for (const [code, result] of [
    [200, 'success'],
    [204, 'success'],
    [304, 'warning'],
    [399, 'warning'],
    [400, 'failure'],
    [500, 'failure'],
    [503, 'failure'],
  ] as const) {
    s.set((_req, res) => res.writeHead(code).end(code === 500 ? 'secret details' : ''));
    const out = await httpGetHandler.probe(ctx({ httpGet: { port: s.port, path: '/' } }));
    t.is(out.result, result, `status ${code}`);
    if (result === 'failure') t.is(out.output, `HTTP probe failed with statuscode: ${code}`, 'no body');
  }
});

test('httpGet: redirects are followed on the same host only; elsewhere the 3xx stands, as a warning', async (t) => {
  const s = await httpServer(t);
  s.set((req, res) => {
    if (req.url === '/old') res.writeHead(302, { location: '/new' }).end();
    else if (req.url === '/new') res.writeHead(200).end('moved here');
    else if (req.url === '/away')
      res.writeHead(301, { location: `http://localhost:${s.port}/new` }).end('bye');
    else if (req.url === '/loop') res.writeHead(307, { location: '/loop' }).end();
    else res.writeHead(404).end();
  });
  t.deepEqual(await httpGetHandler.probe(ctx({ httpGet: { port: s.port, path: '/old' } })), {
    result: 'success',
    output: 'moved here',
  });
  t.deepEqual(await httpGetHandler.probe(ctx({ httpGet: { port: s.port, path: '/away' } })), {
    result: 'warning',
    output: 'Probe terminated redirects, Response body: bye',
  });
  const loop = await httpGetHandler.probe(ctx({ httpGet: { port: s.port, path: '/loop' } }));
  t.is(loop.result, 'failure');
  t.is(loop.output, `Get "http://127.0.0.1:${s.port}/loop": stopped after 10 redirects`);
});

test('httpGet: the body read is bounded to 10 KiB', async (t) => {
  const s = await httpServer(t);
  s.set((_req, res) => {
    res.writeHead(200);
    res.end('x'.repeat(1024 * 1024));
  });
  const out = await httpGetHandler.probe(ctx({ httpGet: { port: s.port, path: '/' } }));
  t.is(out.result, 'success');
  t.is(out.output.length, 10 * 1024);
});

test('httpGet: connection refused and a timeout fail with Go-shaped messages', async (t) => {
  const port = await freePort();
  const refused = await httpGetHandler.probe(ctx({ httpGet: { port, path: '/healthz' } }));
  t.deepEqual(refused, {
    result: 'failure',
    output: `Get "http://127.0.0.1:${port}/healthz": dial tcp 127.0.0.1:${port}: connect: connection refused`,
  });

  const s = await httpServer(t);
  s.set(() => {}); // never answers
  const started = Date.now();
  const slow = await httpGetHandler.probe(ctx({ httpGet: { port: s.port, path: '/' } }, {}, 300));
  const took = Date.now() - started;
  t.is(slow.result, 'failure');
  t.regex(slow.output, /^Get "http:\/\/127\.0\.0\.1:\d+\/": context deadline exceeded/);
  t.true(took >= 290 && took < 2000, `timed out after ${took} ms`);
});

test('httpGet: HTTPS without certificate verification', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=self-signed'].concat([
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ]),
      { stdio: 'ignore' },
    );
  } catch {
    t.log('openssl is not available; skipping the HTTPS case');
    t.pass();
    return;
  }
  const server = createHttpsServer(
    { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
    (_req, res) => res.end('tls ok'),
  );
  const port = await listen(server);
  t.teardown(close(server));
  const out = await httpGetHandler.probe(ctx({ httpGet: { port, path: '/', scheme: 'HTTPS' } }));
  t.deepEqual(out, { result: 'success', output: 'tls ok' });
});

test('httpGet: a named port the container does not have is an error (retried, then thrown away)', async (t) => {
  await t.throwsAsync(httpGetHandler.probe(ctx({ httpGet: { port: 'metrics', path: '/' } })), {
    message: 'port "metrics" not found in the ports of container "main"',
  });
});

test('requestHeaders: case-insensitive defaults', (t) => {
  t.deepEqual(requestHeaders([], 'kube-probe/1.34'), { 'User-Agent': 'kube-probe/1.34', Accept: '*/*' });
  t.deepEqual(requestHeaders([{ name: 'accept', value: 'application/json' }], 'ua'), {
    accept: 'application/json',
    'User-Agent': 'ua',
  });
});

test('tcpSocket: a listening port succeeds; a closed one fails as Go says it', async (t) => {
  const server = createTcpServer((socket) => socket.destroy());
  const port = await listen(server);
  t.deepEqual(await tcpSocketHandler.probe(ctx({ tcpSocket: { port } })), { result: 'success', output: '' });
  await close(server)();
  t.deepEqual(await tcpSocketHandler.probe(ctx({ tcpSocket: { port, host: '127.0.0.1' } })), {
    result: 'failure',
    output: `dial tcp 127.0.0.1:${port}: connect: connection refused`,
  });
});

test('grpc health protocol: the hand-encoded messages round-trip', (t) => {
  t.deepEqual([...encodeHealthCheckRequest({ service: '' })], []);
  t.deepEqual([...encodeHealthCheckRequest({ service: 'db' })], [0x0a, 2, 0x64, 0x62]);
  t.deepEqual(decodeHealthCheckRequest(encodeHealthCheckRequest({ service: 'x'.repeat(300) })), {
    service: 'x'.repeat(300),
  });
  t.deepEqual([...encodeHealthCheckResponse({ status: 1 })], [0x08, 1]);
  t.deepEqual(decodeHealthCheckResponse(Buffer.from([0x08, 2])), { status: 2 });
  t.deepEqual(decodeHealthCheckResponse(Buffer.alloc(0)), { status: 0 });
  // Unknown fields are skipped.
  t.deepEqual(decodeHealthCheckResponse(Buffer.from([0x12, 1, 0x41, 0x08, 1])), { status: 1 });
});

/** A gRPC server with the health service; `statuses` maps a service name to its status number. */
async function grpcServer(
  t: { teardown(fn: () => unknown): void },
  statuses: Map<string, number>,
  withHealth = true,
) {
  const server = new GrpcServer();
  if (withHealth) {
    server.addService(healthServiceDefinition, {
      check: (call: ServerUnaryCall<{ service: string }, unknown>, callback: sendUnaryData<unknown>) => {
        const status = statuses.get(call.request.service);
        if (status === undefined) callback({ code: GrpcStatus.NOT_FOUND, details: 'unknown service' });
        else callback(null, { status });
      },
    });
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  t.teardown(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));
  return port;
}

test('grpc: SERVING is success; NOT_SERVING, an unknown service and no health service fail', async (t) => {
  const statuses = new Map([['', 1]]);
  const port = await grpcServer(t, statuses);
  t.deepEqual(await grpcHandler.probe(ctx({ grpc: { port } })), {
    result: 'success',
    output: 'service healthy',
  });
  statuses.set('', 2);
  t.deepEqual(await grpcHandler.probe(ctx({ grpc: { port } })), {
    result: 'failure',
    output: 'service unhealthy (responded with "NOT_SERVING")',
  });
  t.deepEqual(await grpcHandler.probe(ctx({ grpc: { port, service: 'db' } })), {
    result: 'failure',
    output: 'error: health rpc probe failed: rpc error: code = NotFound desc = unknown service',
  });
  const bare = await grpcServer(t, new Map(), false);
  const none = await grpcHandler.probe(ctx({ grpc: { port: bare } }));
  t.is(none.result, 'failure');
  t.regex(
    none.output,
    /^error: this server does not implement the grpc health protocol \(grpc\.health\.v1\.Health\): /,
  );
});

test('grpc: nothing listening fails within the timeout', async (t) => {
  const port = await freePort();
  const started = Date.now();
  const out = await grpcHandler.probe(ctx({ grpc: { port } }, {}, 500));
  t.deepEqual(out, {
    result: 'failure',
    output: `timeout: failed to connect service "127.0.0.1:${port}" within 500ms: context deadline exceeded`,
  });
  t.true(Date.now() - started < 3000);
});

test('the registry picks the handler by the field a probe sets; a later handler of a type replaces one', (t) => {
  const mine: ProbeHandler = { type: 'httpGet', probe: async () => ({ result: 'success', output: '' }) };
  const custom: ProbeHandler = { type: 'script', probe: async () => ({ result: 'success', output: '' }) };
  const registry = new ProbeHandlerRegistry([httpGetHandler, tcpSocketHandler, mine, custom]);
  t.is(registry.handlerFor({ httpGet: { port: 80 } }), mine);
  t.is(registry.handlerFor({ tcpSocket: { port: 80 } }), tcpSocketHandler);
  t.is(registry.handlerFor({ script: {} } as Probe), custom);
  t.is(registry.handlerFor({ exec: { command: ['true'] } }), undefined);
  t.deepEqual(registry.types(), ['httpGet', 'tcpSocket', 'script']);
});

import { createServer as createHttpServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createTcpServer } from 'node:net';
import test from 'ava';
import {
  type sendUnaryData,
  Server as GrpcServer,
  ServerCredentials,
  type ServerUnaryCall,
} from '@grpc/grpc-js';
import type { Container } from '@nodelet/api';
import { makePod, startHarness, type Harness } from '../test-harness.js';
import { healthServiceDefinition } from './grpc-health.js';

/**
 * A kubelet on the fake runtime under virtual time, probing real servers on 127.0.0.1 (the fake's pod
 * IPs are not real, so the probes name `host: 127.0.0.1`, or the pod uses the host network with the node
 * IP 127.0.0.1). The handlers track their sockets on the clock, so virtual time waits for each probe's
 * real I/O; every server is closed in teardown.
 */

type Closable = { close(cb?: () => void): unknown; closeAllConnections?: () => void };

async function listen(server: Server | ReturnType<typeof createTcpServer>, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

const closer = (server: Closable) => () =>
  new Promise<void>((resolve) => {
    server.closeAllConnections?.();
    server.close(() => resolve());
  });

async function freePort(): Promise<number> {
  const s = createTcpServer();
  const port = await listen(s);
  await closer(s)();
  return port;
}

const container = (c: Partial<Container>): Container => ({
  name: 'main',
  image: 'busybox:1.36',
  imagePullPolicy: 'IfNotPresent',
  ...c,
});

const main = (h: Harness, uid: string) => h.status(uid).containerStatuses![0]!;
const readyCondition = (h: Harness, uid: string) =>
  h.status(uid).conditions?.find((c) => c.type === 'Ready')?.status;
/** Log lines whose message is exactly `message`. */
const logged = (h: Harness, message: string) => h.logs.records.filter((r) => r.message === message).length;

test('an HTTP server that turns 500 after N requests flips readiness, then liveness restarts the container', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  let requests = 0;
  const userAgents = new Set<string>();
  const server = createHttpServer((req, res) => {
    requests++;
    userAgents.add(req.headers['user-agent'] ?? '');
    if (requests <= 6) res.writeHead(200).end('ok');
    else res.writeHead(500).end('broken');
  });
  const port = await listen(server);
  t.teardown(closer(server));
  const httpGet = { host: '127.0.0.1', port, path: '/healthz' };
  h.source.set([
    makePod('web', {
      containers: [
        container({
          readinessProbe: { httpGet, periodSeconds: 1, failureThreshold: 1 },
          livenessProbe: { httpGet, periodSeconds: 1, failureThreshold: 3 },
        }),
      ],
    }),
  ]);
  // Two probes a second: 200 for requests 1–6 (0, 1, 2 s), 500 from the 7th (3 s on).
  await h.clock.advance(2_500);
  t.true(main(h, 'uid-web').ready);
  t.is(readyCondition(h, 'uid-web'), 'True');
  await h.clock.advance(1_000); // 3 s: the first 500s
  t.false(main(h, 'uid-web').ready, 'readiness flips at the first failure');
  t.is(readyCondition(h, 'uid-web'), 'False');
  t.is(main(h, 'uid-web').restartCount, 0, 'liveness has not failed 3 times yet');
  await h.clock.advance(2_000); // 5 s: the third failure in a row
  t.is(main(h, 'uid-web').restartCount, 1, 'then liveness restarts the container');
  // Three failures of the old container, and the first probe of the new one (the server is still broken).
  t.is(logged(h, 'Liveness probe failed: HTTP probe failed with statuscode: 500'), 4);
  t.is(logged(h, 'Container main failed liveness probe, will be restarted'), 1);
  t.deepEqual([...userAgents], ['kube-probe/1.34']);
});

test('a TCP port that closes makes the container unready, and ready again when it reopens', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  let server = createTcpServer((socket) => socket.destroy());
  const port = await listen(server);
  t.teardown(() => closer(server)());
  h.source.set([
    makePod('db', {
      containers: [
        container({
          readinessProbe: {
            tcpSocket: { host: '127.0.0.1', port: 'db' },
            periodSeconds: 2,
            failureThreshold: 2,
          },
          ports: [{ name: 'db', containerPort: port, protocol: 'TCP' }],
        }),
      ],
    }),
  ]);
  await h.clock.advance(1_000);
  t.true(main(h, 'uid-db').ready);
  await closer(server)();
  await h.clock.advance(2_000); // one failure: below the threshold
  t.true(main(h, 'uid-db').ready);
  await h.clock.advance(2_000); // two in a row
  t.false(main(h, 'uid-db').ready);
  t.is(logged(h, `Readiness probe failed: dial tcp 127.0.0.1:${port}: connect: connection refused`), 2);
  server = createTcpServer((socket) => socket.destroy());
  await listen(server, port);
  await h.clock.advance(2_000);
  t.true(main(h, 'uid-db').ready);
});

test('a gRPC health server going SERVING → NOT_SERVING flips readiness (host network, node IP 127.0.0.1)', async (t) => {
  const h = await startHarness({ hostIP: '127.0.0.1' });
  t.teardown(() => h.kubelet.stop());
  let serving = 1;
  const services: string[] = [];
  const server = new GrpcServer();
  server.addService(healthServiceDefinition, {
    check: (call: ServerUnaryCall<{ service: string }, unknown>, callback: sendUnaryData<unknown>) => {
      services.push(call.request.service);
      callback(null, { status: serving });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  t.teardown(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));
  h.source.set([
    makePod('rpc', {
      hostNetwork: true,
      containers: [
        container({
          readinessProbe: { grpc: { port, service: 'api' }, periodSeconds: 1, failureThreshold: 1 },
        }),
      ],
    }),
  ]);
  await h.clock.advance(1_500);
  t.true(main(h, 'uid-rpc').ready);
  t.is(h.status('uid-rpc').podIP, '127.0.0.1');
  serving = 2;
  await h.clock.advance(1_000);
  t.false(main(h, 'uid-rpc').ready);
  t.is(logged(h, 'Readiness probe failed: service unhealthy (responded with "NOT_SERVING")'), 1);
  t.true(services.length >= 3 && services.every((s) => s === 'api'));
  serving = 1;
  await h.clock.advance(1_000);
  t.true(main(h, 'uid-rpc').ready);
});

test('a slow starter (listens after 20 s) survives with a startup probe and is restarted with only liveness', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const servers: Server[] = [];
  t.teardown(() => Promise.all(servers.map((s) => closer(s)())));
  /** An HTTP server that starts listening on `port` 20 s (virtual) from now, started by a clock timer. */
  const listenAfter20s = (port: number) => {
    const server = createHttpServer((_req, res) => res.end('up'));
    servers.push(server);
    h.clock.setTimeout(() => void h.clock.track(listen(server, port)), 20_000);
  };
  const [patientPort, impatientPort] = [await freePort(), await freePort()];
  listenAfter20s(patientPort);
  listenAfter20s(impatientPort);
  const probe = (port: number, failureThreshold: number) => ({
    httpGet: { host: '127.0.0.1', port, path: '/' },
    periodSeconds: 1,
    failureThreshold,
  });
  h.source.set([
    makePod('patient', {
      containers: [container({ startupProbe: probe(patientPort, 30), livenessProbe: probe(patientPort, 3) })],
    }),
    makePod('impatient', { containers: [container({ livenessProbe: probe(impatientPort, 3) })] }),
  ]);
  await h.clock.advance(19_000);
  t.false(main(h, 'uid-patient').started);
  t.false(main(h, 'uid-patient').ready);
  t.is(main(h, 'uid-patient').restartCount, 0);
  t.true(main(h, 'uid-impatient').restartCount >= 1, 'killed after 3 failed liveness probes');
  await h.clock.advance(10_000);
  t.is(main(h, 'uid-patient').restartCount, 0, 'never killed');
  t.true(main(h, 'uid-patient').started);
  t.true(main(h, 'uid-patient').ready);
  t.is(logged(h, 'Container main failed startup probe, will be restarted'), 0);
});

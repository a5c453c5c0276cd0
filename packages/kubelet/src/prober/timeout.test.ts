import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import test from 'ava';
import type { Probe } from '@nodelet/api';
import type { NodeletEvent } from '@nodelet/kernel';
import { makePod, startHarness, type Harness } from '../test-harness.js';
import type { ProbeHandler } from './probe-handler.js';
import { HANDLER_GRACE_MS } from './worker.js';

/**
 * A probe's `timeoutSeconds` on the virtual clock: a kubelet on the fake runtime under virtual time
 * probes a server on 127.0.0.1 that takes the connection and never answers. The probe fails at exactly
 * `timeoutSeconds` of virtual time after it began, with upstream's timeout message — the deadline is
 * the clock's, not a wall-clock timer. (Virtual time waits for the probe's real I/O at most its timeout
 * in real time, so each of these tests takes about `timeoutSeconds` of real time.)
 */

type ProbeResult = NodeletEvent<'[Prober] Probe Result'>;

async function listen(server: ReturnType<typeof createTcpServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return (server.address() as AddressInfo).port;
}

/** A TCP server that accepts connections and never writes a byte (nor reads a request to its end). */
async function silentServer(t: { teardown(fn: () => unknown): void }): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  const port = await listen(server);
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return port;
}

/**
 * Runs one pod with `readinessProbe` and returns the first probe result, with when its probe began. The
 * pod is on the host network of a node whose IP is 127.0.0.1 (the fake runtime's pod IPs are not real).
 */
async function firstResult(
  h: Harness,
  readinessProbe: Probe,
): Promise<{ result: ProbeResult; began: number }> {
  const results: ProbeResult[] = [];
  h.bus.subscribe('[Prober] Probe Result', (e) => results.push(e));
  const epoch = h.clock.now() - h.clock.elapsed();
  h.source.set([
    makePod('slow', {
      hostNetwork: true,
      containers: [{ name: 'main', image: 'busybox:1.36', readinessProbe }],
    }),
  ]);
  // The container runs at once on the fake runtime; its first readiness probe begins then.
  await h.clock.advanceUntil(
    () => h.status('uid-slow').containerStatuses?.[0]?.state?.running !== undefined,
    {
      maxMs: 5_000,
      stepMs: 10,
    },
  );
  const began = Date.parse(h.status('uid-slow').containerStatuses![0]!.state!.running!.startedAt!) - epoch;
  await h.clock.advanceUntil(() => results.length > 0, { maxMs: 60_000, stepMs: 100 });
  return { result: results[0]!, began };
}

const elapsedAt = (h: Harness, event: ProbeResult) => event.at - (h.clock.now() - h.clock.elapsed());

test('httpGet to a server that never answers fails at exactly timeoutSeconds of virtual time', async (t) => {
  const port = await silentServer(t);
  const h = await startHarness({ hostIP: '127.0.0.1' });
  t.teardown(() => h.kubelet.stop());
  const { result, began } = await firstResult(h, {
    httpGet: { host: '127.0.0.1', port, path: '/healthz' },
    timeoutSeconds: 2,
    periodSeconds: 10,
  });
  t.is(result.result, 'failure');
  t.is(
    result.message,
    `Get "http://127.0.0.1:${port}/healthz": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
  );
  t.is(elapsedAt(h, result) - began, 2_000);
});

test('grpc to a server that never speaks HTTP/2 fails at exactly timeoutSeconds of virtual time', async (t) => {
  const port = await silentServer(t);
  const h = await startHarness({ hostIP: '127.0.0.1' });
  t.teardown(() => h.kubelet.stop());
  const { result, began } = await firstResult(h, {
    grpc: { port },
    timeoutSeconds: 1,
    periodSeconds: 10,
  });
  t.is(result.result, 'failure');
  t.is(
    result.message,
    `timeout: failed to connect service "127.0.0.1:${port}" within 1s: context deadline exceeded`,
  );
  t.is(elapsedAt(h, result) - began, 1_000);
});

test('a plugin handler that ignores its deadline is cut off a grace period after it', async (t) => {
  const silent: ProbeHandler = { type: 'script', probe: () => new Promise(() => {}) };
  const h = await startHarness({ hostIP: '127.0.0.1', probeHandlers: [silent] });
  t.teardown(() => h.kubelet.stop());
  const { result, began } = await firstResult(h, {
    script: {},
    timeoutSeconds: 3,
    periodSeconds: 10,
  } as Probe);
  t.is(result.result, 'failure');
  t.is(result.message, 'timeout: script probe did not answer within 3s');
  t.is(elapsedAt(h, result) - began, 3_000 + HANDLER_GRACE_MS);
});

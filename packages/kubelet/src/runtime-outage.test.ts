import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { RuntimeService } from '@nodelet/cri';
import { createLogger, EventBus, MemorySink, NodeletError, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { Kubelet } from './kubelet.js';
import { kubeletRouteTable } from './server/kubelet-routes.js';
import { ReadOnlyServer } from './server/read-only-server.js';
import { makePod, TestSource } from './test-harness.js';

/**
 * The container runtime is unreachable for a while (containerd restarting, its socket gone) and comes
 * back with its containers intact — under the virtual clock, so minutes take milliseconds:
 *
 *   every CRI call fails Unavailable ─► PLEG and housekeeping log at failures 1, 2, 4, 8, … (not each
 *   second) ─► after 3 min without a successful relist PLEG is unhealthy: /healthz 500 "pleg was last
 *   seen active …", one [PLEG] Health Changed ─► the runtime answers again ─► relisting resumes, healthy,
 *   and the running containers are kept: nothing is killed or recreated.
 */
test('a runtime outage: logged per backoff step, PLEG unhealthy after 3 min, recovery keeps healthy containers', async (t) => {
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const bus = new EventBus(clock, logger);
  const fake = new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0 } });
  let down = false;
  const unavailable = () =>
    Promise.reject(
      new NodeletError(
        'Unavailable',
        'cannot connect to the container runtime at unix:///run/containerd/containerd.sock: connect ENOENT',
      ),
    );
  // Every RuntimeService / ImageService call fails while `down`, as the gRPC client's calls do.
  const runtime = new Proxy(fake, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        down ? unavailable() : (value as (...a: unknown[]) => unknown).apply(target, args);
    },
  }) as FakeRuntime & RuntimeService;
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-outage-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const source = new TestSource();
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus, clock, logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      sources: [source],
    },
  );
  const health: boolean[] = [];
  bus.subscribe('[PLEG] Health Changed', (e) => health.push(e.healthy));
  await kubelet.start();
  const server = new ReadOnlyServer(kubeletRouteTable(kubelet, logger), logger);
  const { port } = (await server.listen(0)) as AddressInfo;
  t.teardown(async () => {
    await server.close();
    await kubelet.stop();
  });
  const healthz = (path = '/healthz') =>
    new Promise<{ status: number; body: string }>((resolve, reject) =>
      request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
        .on('error', reject)
        .end(),
    );

  source.set([makePod('web', {}), makePod('db', {})]);
  await clock.advance(3_000);
  const before = (await fake.listContainers({})).containers.map((c) => `${c.id}:${c.state}`).sort();
  t.is(before.length, 2);
  t.deepEqual(await healthz(), { status: 200, body: 'ok' });

  down = true;
  const mark = logs.records.length;
  await clock.advance(179_000);
  t.true(kubelet.healthz().healthy, 'still healthy just before the threshold');
  await clock.advance(3_000);
  const unhealthy = await healthz();
  t.is(unhealthy.status, 500);
  t.regex(unhealthy.body, /\[-\]pleg failed: reason withheld\n/);
  const pleg = await healthz('/healthz/pleg');
  t.is(pleg.status, 500);
  t.regex(pleg.body, /^internal server error: pleg was last seen active 18\ds ago; threshold is 180s\n$/);
  t.deepEqual(health, [false], 'one Health Changed event');

  const during = logs.records.slice(mark);
  const failures = (msg: string) =>
    during.filter((r) => r.message === msg).map((r) => (r.fields as { failures?: number }).failures);
  t.deepEqual(failures('PLEG relist failed'), [1, 2, 4, 8, 16, 32, 64, 128], '182 failed relists, 8 lines');
  t.deepEqual(failures('housekeeping failed; will retry'), [1, 2, 4, 8, 16, 32, 64]);
  // Container garbage collection runs every minute: passes at 60, 120 and 180 s.
  t.deepEqual(failures('Container garbage collection failed'), [1, 2]);
  // Pod workers retry a failed sync every 10 s; each pod says so at its 1st, 2nd, 4th, … failure.
  const syncs = failures('error syncing pod, skipping');
  t.true(
    syncs.every((n) => [1, 2, 4, 8, 16].includes(n!)) && syncs.filter((n) => n === 1).length === 2,
    `pod sync failures logged: ${syncs.join(', ')}`,
  );
  const warnings = during.filter((r) => r.level === 'warn' || r.level === 'error');
  t.is(warnings.length, 8 + 7 + 2 + syncs.length, 'nothing else complains');

  down = false;
  await clock.advance(3_000);
  t.true(kubelet.healthz().healthy);
  t.deepEqual(health, [false, true]);
  t.true(logs.records.some((r) => r.message === 'PLEG relist succeeded again'));
  const after = (await fake.listContainers({})).containers.map((c) => `${c.id}:${c.state}`).sort();
  t.deepEqual(after, before, 'the same containers, still running: none killed or recreated');
  t.false(logs.records.slice(mark).some((r) => /^Killing/.test(r.message)));
  t.is(kubelet.podList().items.filter((p) => p.status?.phase === 'Running').length, 2);
});

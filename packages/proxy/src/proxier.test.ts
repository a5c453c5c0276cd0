import test from 'ava';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import type { ProxyBackend } from './backend.js';
import { Proxier } from './proxier.js';
import { defaultNodeContext, type ChangeSet, type ProxyState } from './state.js';
import { CONFORMANCE_NODE, conformanceServices, conformanceSlices } from './testing/fixtures.js';

class FakeBackend implements ProxyBackend {
  readonly name = 'fake';
  readonly calls: { full: boolean; updated: string[]; removed: string[]; ports: number; at: number }[] = [];
  failNext = 0;
  /** What the proxy asked of the backend's life cycle, in order. */
  readonly lifecycle: string[] = [];
  prepareFails = false;
  constructor(private readonly clock: VirtualClock) {}
  async prepare() {
    this.lifecycle.push('prepare');
    if (this.prepareFails) throw new Error('iptables-nft-save: not found');
  }
  async stop() {
    this.lifecycle.push('stop');
  }
  async sync(state: ProxyState, changes: ChangeSet, full: boolean) {
    this.lifecycle.push('sync');
    this.calls.push({
      full,
      updated: [...changes.updated].sort(),
      removed: [...changes.removed].sort(),
      ports: state.servicePorts.size,
      at: this.clock.elapsed(),
    });
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('iptables-restore: line 7 failed');
    }
    return { full, written: state.servicePorts.size };
  }
  async cleanup() {}
}

function setup() {
  const clock = new VirtualClock();
  const sink = new MemorySink();
  const backend = new FakeBackend(clock);
  const proxier = new Proxier(
    { backend, clock, logger: createLogger({ sink: sink.sink, now: () => clock.now() }) },
    { node: defaultNodeContext(CONFORMANCE_NODE), healthzBindAddress: '127.0.0.1:0' },
  );
  return { clock, sink, backend, proxier };
}

function feed(p: Proxier) {
  for (const s of conformanceServices()) p.handler.upsertService(s);
  for (const s of conformanceSlices()) p.handler.upsertEndpointSlice(s);
}

test('no rules before the source has listed everything; then a full sync; later changes are partial', async (t) => {
  const { clock, backend, proxier } = setup();
  await proxier.start();
  feed(proxier);
  await clock.advance(5000);
  t.is(backend.calls.length, 0, 'nothing synced before synced()');
  proxier.handler.synced();
  await clock.advance(0);
  t.is(backend.calls.length, 1);
  t.true(backend.calls[0]!.full);
  t.is(backend.calls[0]!.ports, 8);

  const slice = conformanceSlices()[1]!;
  proxier.handler.upsertEndpointSlice({ ...slice, endpoints: [{ addresses: ['10.244.3.11'] }] });
  await clock.advance(500);
  t.is(backend.calls.length, 1);
  await clock.advance(500);
  t.is(backend.calls.length, 2);
  t.false(backend.calls[1]!.full);
  t.deepEqual(backend.calls[1]!.updated, ['conformance/web:http']);
  t.is(backend.calls[1]!.at, 6000, 'not before minSyncPeriod after the first sync (at 5 s)');
  await proxier.stop();
});

test('the backend is prepared when the proxy starts, before its first sync, and stopped with it', async (t) => {
  const { clock, backend, proxier, sink } = setup();
  backend.prepareFails = true;
  await proxier.start();
  t.deepEqual(backend.lifecycle, ['prepare']);
  t.is(sink.find(/preparing the proxy backend failed; its syncs will retry.*not found/).length, 1);
  feed(proxier);
  proxier.handler.synced();
  await clock.advance(0);
  t.is(backend.calls.length, 1, 'a failed prepare does not stop the syncs');
  await proxier.stop();
  t.deepEqual(backend.lifecycle, ['prepare', 'sync', 'stop']);
});

test('syncPeriod: a periodic partial sync with no changes every 30 s', async (t) => {
  const { clock, backend, proxier } = setup();
  await proxier.start();
  proxier.handler.synced();
  await clock.advance(61_000);
  t.deepEqual(
    backend.calls.map((c) => [c.at, c.full, c.updated.length]),
    [
      [0, true, 0],
      [30_000, false, 0],
      [60_000, false, 0],
    ],
  );
  await proxier.stop();
});

test('a failed sync: one log line, previous rules stay, next sync is full and retries after 1 s', async (t) => {
  const { clock, backend, proxier, sink } = setup();
  await proxier.start();
  feed(proxier);
  proxier.handler.synced();
  await clock.advance(0);
  backend.failNext = 2;
  proxier.handler.deleteService(conformanceServices()[1]!);
  await clock.advance(1000);
  const errors = sink.lines('error');
  t.is(errors.length, 1);
  t.regex(
    errors[0]!,
    /partial sync of fake rules failed; the previous rules stay in force; retrying with a full sync in 1s: iptables-restore: line 7 failed/,
  );
  await clock.advance(1000);
  t.regex(sink.lines('error')[1]!, /full sync of fake rules failed.*retrying with a full sync in 2s/);
  await clock.advance(2000);
  const last = backend.calls.at(-1)!;
  t.true(last.full);
  t.is(last.at, 4000);
  t.is(proxier.health.snapshot().failures, 2);
  t.true(proxier.syncs.at(-1)!.ok);
  await proxier.stop();
});

test('/healthz serves the sync timestamps; unhealthy when a queued change waits longer than 2 × syncPeriod', async (t) => {
  const { clock, backend, proxier } = setup();
  t.teardown(() => proxier.stop());
  await proxier.start();
  feed(proxier);
  proxier.handler.synced();
  await clock.advance(0);
  const { port } = proxier.healthzAddress!;
  let res = await fetch(`http://127.0.0.1:${port}/healthz`);
  t.is(res.status, 200);
  const body = (await res.json()) as Record<string, unknown>;
  t.is(body.lastUpdated, new Date(clock.now()).toISOString());
  t.is(body.lastFullSync, body.lastUpdated);
  t.is(body.lastPartialSync, null);
  t.is(body.backend, 'fake');

  backend.failNext = 1000;
  proxier.handler.deleteService(conformanceServices()[0]!);
  await clock.advance(59_000);
  t.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  await clock.advance(2_000);
  res = await fetch(`http://127.0.0.1:${port}/healthz`);
  t.is(res.status, 503);
  const bad = (await res.json()) as { lastError?: { message: string } };
  t.regex(bad.lastError!.message, /line 7 failed/);
  await proxier.stop();
});

// The proxy's /metrics on metricsBindAddress (port 0 here): upstream's kubeproxy_* series, parsed
// strictly, moving as syncs happen; each proxy has its own registry.
import test from 'ava';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { parsePrometheusText, sampleValue } from '@nodelet/kernel/testing';
import type { ProxyBackend } from './backend.js';
import { Proxier } from './proxier.js';
import { defaultNodeContext } from './state.js';
import { CONFORMANCE_NODE, conformanceServices, conformanceSlices } from './testing/fixtures.js';

function setup(metricsBindAddress = '127.0.0.1:0') {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink, now: () => clock.now() });
  const bus = new EventBus(clock, logger);
  const backend: ProxyBackend = {
    name: 'fake',
    async sync(state, _changes, full) {
      return { full, written: state.servicePorts.size };
    },
    async cleanup() {},
  } as ProxyBackend;
  const proxier = new Proxier(
    { backend, clock, logger, bus },
    { node: defaultNodeContext(CONFORMANCE_NODE), healthzBindAddress: '', metricsBindAddress },
  );
  return { clock, proxier };
}

async function scrape(p: Proxier, path = '/metrics') {
  const { address, port } = p.metricsAddress!;
  const res = await fetch(`http://${address}:${port}${path}`);
  return { status: res.status, body: await res.text() };
}

test('kubeproxy_sync_* and network programming duration move with syncs', async (t) => {
  const { clock, proxier } = setup();
  await proxier.start();
  t.teardown(() => proxier.stop());
  let m = parsePrometheusText((await scrape(proxier)).body);
  t.is(sampleValue(m, 'kubeproxy_sync_proxy_rules_duration_seconds_count'), 0);
  t.is(sampleValue(m, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds'), 0);

  for (const s of conformanceServices()) proxier.handler.upsertService(s);
  for (const s of conformanceSlices()) proxier.handler.upsertEndpointSlice(s);
  proxier.handler.synced();
  await clock.advance(100);
  const slice = conformanceSlices()[1]!;
  proxier.handler.upsertEndpointSlice({ ...slice, endpoints: [{ addresses: ['10.244.3.11'] }] });
  await clock.advance(2_000);

  m = parsePrometheusText((await scrape(proxier)).body);
  t.is(sampleValue(m, 'kubeproxy_sync_proxy_rules_duration_seconds_count'), proxier.syncs.length);
  t.is(sampleValue(m, 'kubeproxy_sync_full_proxy_rules_duration_seconds_count'), 1);
  t.is(sampleValue(m, 'kubeproxy_sync_partial_proxy_rules_duration_seconds_count'), 1);
  t.is(
    sampleValue(m, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds'),
    proxier.health.lastUpdated / 1000,
  );
  // Once for the first sync (the listed objects), once for the endpoint change.
  t.is(sampleValue(m, 'kubeproxy_network_programming_duration_seconds_count'), 2);
  t.true((sampleValue(m, 'kubeproxy_sync_proxy_rules_endpoint_changes_total') ?? 0) >= 1);
  const healthz = await scrape(proxier, '/healthz');
  t.is(healthz.status, 200);
  t.truthy(JSON.parse(healthz.body).lastUpdated);
  t.is((await scrape(proxier, '/nope')).status, 404);
});

test('two proxies in one process keep separate series; metricsBindAddress "" serves nothing', async (t) => {
  const a = setup();
  const b = setup('');
  await a.proxier.start();
  await b.proxier.start();
  t.teardown(async () => {
    await a.proxier.stop();
    await b.proxier.stop();
  });
  b.proxier.handler.synced();
  await b.clock.advance(100);
  t.is(b.proxier.metricsAddress, undefined);
  const m = parsePrometheusText((await scrape(a.proxier)).body);
  t.is(sampleValue(m, 'kubeproxy_sync_proxy_rules_duration_seconds_count'), 0, 'b synced, a did not');
});

test('a metricsBindAddress that is not host:port is refused naming the field', async (t) => {
  const { proxier } = setup('localhost');
  await t.throwsAsync(proxier.start(), { message: /metricsBindAddress: "localhost" is not host:port/ });
});

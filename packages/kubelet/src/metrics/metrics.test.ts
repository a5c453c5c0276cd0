// The kubelet's metrics and stats endpoints, served over HTTP from a kubelet on the fake runtime under
// virtual time: every endpoint parses as Prometheus text (strictly), counters move when things happen,
// simulated usage shows in /metrics/resource, /metrics/cadvisor and /stats/summary, and the summary
// validates against a JSON Schema written from upstream's types.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import type { Pod } from '@nodelet/api';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { parsePrometheusText, sampleValue, validateAgainst } from '@nodelet/kernel/testing';
import { CriStatsProvider } from '@nodelet/cri';
import { FakeRuntime, fakeProbeHandlers } from '@nodelet/runtime-fake';
import { Kubelet } from '../kubelet.js';
import { makePod, TestSource } from '../test-harness.js';
import { HostMounter } from '../volume/index.js';
import { instrumentRuntime, KubeletMetrics, kubeletMetricsRoutes, type MetricsRoute } from './index.js';
import { summarySchema } from './test-summary-schema.js';

const B = 'runtime-fake.nodelet.dev/';

async function startNode(t: ExecutionContext) {
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, now: () => clock.now() });
  const bus = new EventBus(clock, logger);
  const fake = new FakeRuntime({ clock, logger, config: {} as never });
  const source = new TestSource();
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-metrics-'));
  const metrics: KubeletMetrics = new KubeletMetrics(bus, {
    nodeName: 'node1',
    podRef: (uid): { name: string; namespace: string } | undefined => {
      const pod: Pod | undefined = kubelet.podList().items.find((p) => p.metadata?.uid === uid);
      return pod && { name: pod.metadata!.name!, namespace: pod.metadata!.namespace! };
    },
  });
  const runtime = instrumentRuntime(fake, metrics, clock);
  const kubelet: Kubelet = new Kubelet(
    {
      runtime,
      images: instrumentRuntime(fake, metrics, clock),
      bus,
      clock,
      logger,
      probeHandlers: fakeProbeHandlers(fake),
      mounter: new HostMounter({ tmpfs: false }),
    },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      sources: [source],
    },
  );
  await kubelet.start();
  const stats = new CriStatsProvider(fake, { clock }); // the node's name comes from the kubelet
  const server = await serve(kubeletMetricsRoutes(metrics, stats));
  t.teardown(async () => {
    await kubelet.stop();
    metrics.stop();
    await new Promise<void>((r) => server.close(() => r()));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const get = async (path: string) => {
    const res = await fetch(base + path);
    return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
  };
  const scrape = async (path: string) => {
    const res = await get(path);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.body}`);
    return parsePrometheusText(res.body);
  };
  return { clock, fake, source, metrics, bus, get, scrape };
}

function serve(routes: MetricsRoute[]): Promise<Server> {
  const byPath = new Map(routes.map((r) => [r.path, r]));
  const server = createServer((req, res) => {
    const route = byPath.get(new URL(req.url ?? '/', 'http://x').pathname);
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    void route.handle(req, res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const busy = (name: string, usage: string): Pod => makePod(name, {}, { [`${B}main`]: usage });

test('/metrics: running pods and containers, starts, pod start duration, PLEG and runtime operations move', async (t) => {
  const node = await startNode(t);
  let m = await node.scrape('/metrics');
  t.is(sampleValue(m, 'kubelet_node_name', { node: 'node1' }), 1);
  t.is(sampleValue(m, 'kubelet_running_pods'), 0);
  t.is(sampleValue(m, 'kubelet_started_pods_total'), 0);

  node.source.set([makePod('a', {}), makePod('b', {})]);
  await node.clock.advance(5_000);
  m = await node.scrape('/metrics');
  t.is(sampleValue(m, 'kubelet_running_pods'), 2);
  t.is(sampleValue(m, 'kubelet_running_containers', { container_state: 'running' }), 2);
  t.is(sampleValue(m, 'kubelet_started_pods_total'), 2);
  t.is(sampleValue(m, 'kubelet_started_containers_total', { container_type: 'container' }), 2);
  t.is(sampleValue(m, 'kubelet_pod_start_duration_seconds_count'), 2);
  t.true((sampleValue(m, 'kubelet_pleg_relist_duration_seconds_count') ?? 0) >= 4);
  t.true((sampleValue(m, 'kubelet_pleg_relist_interval_seconds_count') ?? 0) >= 3);
  t.is(sampleValue(m, 'kubelet_runtime_operations_total', { operation_type: 'run_podsandbox' }), 2);
  t.is(sampleValue(m, 'kubelet_runtime_operations_total', { operation_type: 'start_container' }), 2);
  t.true(
    (sampleValue(m, 'kubelet_runtime_operations_total', { operation_type: 'list_podsandbox' }) ?? 0) > 0,
  );
  t.is(
    sampleValue(m, 'kubelet_runtime_operations_duration_seconds_count', {
      operation_type: 'create_container',
    }),
    2,
  );

  node.source.set([makePod('a', {})]);
  await node.clock.advance(40_000);
  m = await node.scrape('/metrics');
  t.is(sampleValue(m, 'kubelet_running_pods'), 1);
  t.is(sampleValue(m, 'kubelet_runtime_operations_total', { operation_type: 'stop_podsandbox' }), 1);

  node.bus.emit('[Eviction] Eviction Started', { podUid: 'uid-a', signal: 'memory.available', message: '' });
  m = await node.scrape('/metrics');
  t.is(sampleValue(m, 'kubelet_evictions', { eviction_signal: 'memory.available' }), 1);
});

test('a failing runtime call counts as an operation error of its type', async (t) => {
  const node = await startNode(t);
  const metrics = node.metrics;
  const clock = node.clock;
  const runtime = instrumentRuntime(node.fake, metrics, clock);
  await t.throwsAsync(runtime.containerStatus({ containerId: 'nope', verbose: false }));
  const m = await node.scrape('/metrics');
  t.is(sampleValue(m, 'kubelet_runtime_operations_errors_total', { operation_type: 'container_status' }), 1);
});

test('/metrics/probes: prober_probe_total by type and result, labelled with the pod', async (t) => {
  const node = await startNode(t);
  const probe = { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 };
  node.source.set([
    makePod(
      'web',
      { containers: [{ name: 'main', image: 'busybox:1.36', readinessProbe: probe, livenessProbe: probe }] },
      {
        [`${B}main`]: 'readinessFail',
      },
    ),
  ]);
  await node.clock.advance(5_500);
  const m = await node.scrape('/metrics/probes');
  const labels = { container: 'main', pod: 'web', namespace: 'default', pod_uid: 'uid-web' };
  const failed = sampleValue(m, 'prober_probe_total', {
    ...labels,
    probe_type: 'Readiness',
    result: 'failed',
  });
  const ok = sampleValue(m, 'prober_probe_total', {
    ...labels,
    probe_type: 'Liveness',
    result: 'successful',
  });
  t.true((failed ?? 0) >= 3, `readiness failed ${failed}`);
  t.true((ok ?? 0) >= 3, `liveness successful ${ok}`);
  t.is(
    sampleValue(m, 'prober_probe_total', { ...labels, probe_type: 'Readiness', result: 'successful' }),
    undefined,
  );
});

test('/metrics/resource: simulated usage of a fake pod, cumulative CPU advancing on virtual time', async (t) => {
  const node = await startNode(t);
  node.source.set([busy('hog', 'cpu=500m,memory=100Mi'), makePod('idle', {})]);
  await node.clock.advance(3_000);
  const first = await node.scrape('/metrics/resource');
  await node.clock.advance(10_000);
  const m = await node.scrape('/metrics/resource');
  const hog = { container: 'main', namespace: 'default', pod: 'hog' };
  const cpu = (f: typeof m) => sampleValue(f, 'container_cpu_usage_seconds_total', hog) ?? NaN;
  t.true(Math.abs(cpu(m) - cpu(first) - 5) < 0.001, `0.5 core for 10 s: ${cpu(m) - cpu(first)}`);
  t.is(sampleValue(m, 'container_memory_working_set_bytes', hog), 100 * 2 ** 20);
  t.is(sampleValue(m, 'pod_memory_working_set_bytes', { namespace: 'default', pod: 'hog' }), 100 * 2 ** 20);
  t.is(sampleValue(m, 'container_memory_working_set_bytes', { ...hog, pod: 'idle' }), 0);
  t.is(sampleValue(m, 'node_memory_working_set_bytes'), 100 * 2 ** 20);
  t.true((sampleValue(m, 'node_cpu_usage_seconds_total') ?? 0) >= cpu(m));
  t.true((sampleValue(m, 'container_start_time_seconds', hog) ?? 0) > 1.7e9);
  t.is(sampleValue(m, 'scrape_error'), 0);
  const sample = m.get('container_cpu_usage_seconds_total')!.samples[0]!;
  t.is(sample.timestampMs, node.clock.now(), 'samples carry the time they were read');
});

test('/metrics/cadvisor: container_* series with cAdvisor labels, network, fs', async (t) => {
  const node = await startNode(t);
  node.source.set([busy('hog', 'cpu=250m,memory=64Mi,disk=10Mi')]);
  await node.clock.advance(11_000);
  const res = await node.get('/metrics/cadvisor');
  t.is(res.status, 200);
  t.regex(res.type, /^text\/plain; version=0\.0\.4/);
  const m = parsePrometheusText(res.body);
  const ws = m.get('container_memory_working_set_bytes')!.samples.find((s) => s.labels.container === 'main')!;
  t.is(ws.value, 64 * 2 ** 20);
  t.deepEqual(Object.keys(ws.labels).sort(), ['container', 'id', 'image', 'name', 'namespace', 'pod']);
  t.is(ws.labels.image, 'busybox:1.36');
  t.regex(ws.labels.name!, /^[0-9a-f]{64}$/);
  t.regex(ws.labels.id!, /^\/kubepods\/poduid-hog\/[0-9a-f]{64}$/);
  t.is(sampleValue(m, 'container_memory_rss', { container: 'main' }), 64 * 2 ** 20);
  t.true((sampleValue(m, 'container_cpu_usage_seconds_total', { container: 'main' }) ?? 0) > 2);
  t.is(sampleValue(m, 'container_cpu_usage_seconds_total', { id: '/' }) !== undefined, true, 'the node root');
  t.is(sampleValue(m, 'container_network_receive_bytes_total', { pod: 'hog', interface: 'eth0' }), 0);
  t.is(sampleValue(m, 'container_fs_usage_bytes', { container: 'main' }), 10 * 2 ** 20);
});

test('/stats/summary validates against the upstream schema and shows the simulated usage', async (t) => {
  const node = await startNode(t);
  node.source.set([busy('hog', 'cpu=1,memory=1Gi,disk=5Mi'), makePod('idle', {})]);
  await node.clock.advance(4_000);
  await node.get('/stats/summary'); // a first sample, so that rates exist
  await node.clock.advance(6_000);
  const res = await node.get('/stats/summary');
  t.is(res.status, 200);
  t.is(res.type, 'application/json');
  const summary = JSON.parse(res.body);
  const validate = validateAgainst(summarySchema);
  t.deepEqual(validate(summary), []);
  t.is(summary.node.nodeName, 'node1');
  const hog = summary.pods.find((p: { podRef: { name: string } }) => p.podRef.name === 'hog');
  t.deepEqual(hog.podRef, { name: 'hog', namespace: 'default', uid: 'uid-hog' });
  t.is(hog.containers[0].name, 'main');
  t.is(hog.containers[0].memory.workingSetBytes, 2 ** 30);
  t.is(hog.containers[0].cpu.usageNanoCores, 1e9);
  t.is(hog.containers[0].rootfs.usedBytes, 5 * 2 ** 20);
  t.is(hog.memory.workingSetBytes, 2 ** 30);
  t.is(hog['ephemeral-storage'].usedBytes, 5 * 2 ** 20);
  t.is(summary.node.memory.workingSetBytes, 2 ** 30);
  t.is(summary.node.memory.availableBytes, 15 * 2 ** 30);

  const brief = JSON.parse((await node.get('/stats/summary?only_cpu_and_memory=true')).body);
  t.deepEqual(validate(brief), []);
  t.is(brief.pods[0].network, undefined);
  const bad = await node.get('/stats/summary?only_cpu_and_memory=perhaps');
  t.is(bad.status, 400);
  t.regex(bad.body, /only_cpu_and_memory/);
});

test('a stats provider that fails: /metrics/resource says scrape_error 1, /stats/summary is a 500 naming it', async (t) => {
  const routes = kubeletMetricsRoutes(
    new KubeletMetrics(new EventBus(new VirtualClock(), createLogger({ sink: () => {} })), { nodeName: 'n' }),
    {
      snapshot: () => Promise.reject(new Error('runtime is down')),
    },
  );
  const server = await serve(routes);
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const resource = await fetch(`${base}/metrics/resource`);
  const m = parsePrometheusText(await resource.text());
  t.is(sampleValue(m, 'scrape_error'), 1);
  const summary = await fetch(`${base}/stats/summary`);
  t.is(summary.status, 500);
  t.regex(await summary.text(), /runtime is down/);
});

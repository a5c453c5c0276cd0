import { join } from 'node:path';
import test from 'ava';
import { startKubeletStub, type KubeletStub } from './test-kubelet-stub.js';
import { kubectlTests, startCluster, type TestCluster } from './test-helpers.js';
import { parsePrometheusText } from './metrics/resource-metrics.js';

/** metrics.k8s.io from the kubelets' /metrics/resource, read by the real `kubectl top`. */
const kubectlTest = kubectlTests(test);
let c: TestCluster;
let kubelet: KubeletStub;

/** A kubelet's /metrics/resource at time `t` seconds: cumulative CPU grows by `rate` cores. */
function fixture(t: number): string {
  const ms = 1_767_225_600_000 + t * 1000;
  return [
    '# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds',
    '# TYPE node_cpu_usage_seconds_total counter',
    `node_cpu_usage_seconds_total ${(0.25 * t).toFixed(3)} ${ms}`,
    `node_memory_working_set_bytes ${512 * 1024 * 1024} ${ms}`,
    `container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} ${(0.1 * t).toFixed(3)} ${ms}`,
    `container_memory_working_set_bytes{container="app",namespace="default",pod="web"} ${64 * 1024 * 1024} ${ms}`,
    `container_cpu_usage_seconds_total{container="app",namespace="default",pod="db"} ${(0.02 * t).toFixed(3)} ${ms}`,
    `container_memory_working_set_bytes{container="app",namespace="default",pod="db"} ${32 * 1024 * 1024} ${ms}`,
    'scrape_error 0',
    '',
  ].join('\n');
}

test.before(async () => {
  c = await startCluster();
  kubelet = await startKubeletStub(join(c.dataDir, 'pki'));
  await c.api('POST', '/api/v1/nodes', { metadata: { name: 'node-1', labels: { zone: 'a' } } });
  await c.api(
    'PATCH',
    '/api/v1/nodes/node-1/status',
    {
      status: {
        addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
        daemonEndpoints: { kubeletEndpoint: { Port: kubelet.port } },
      },
    },
    { 'content-type': 'application/merge-patch+json' },
  );
  for (const [name, tier] of [
    ['web', 'front'],
    ['db', 'back'],
  ]) {
    await c.api('POST', '/api/v1/namespaces/default/pods', {
      metadata: { name, labels: { tier } },
      spec: { nodeName: 'node-1', containers: [{ name: 'app', image: 'busybox' }] },
    });
  }
  // Two scrapes 15 s apart (by the samples' own timestamps) make the CPU rates.
  kubelet.metrics = fixture(0);
  await c.cp.resourceMetrics.scrapeAll();
  kubelet.metrics = fixture(15);
  await c.cp.resourceMetrics.scrapeAll();
});

test.after.always(async () => {
  await kubelet?.close();
  await c?.destroy();
});

test('the Prometheus text parser reads names, labels, values and timestamps, and skips comments', (t) => {
  const samples = parsePrometheusText('# c\na{x="1",y="q\\"z"} 2.5 1000\nb 3\nbad line here\n');
  t.deepEqual(samples, [
    { name: 'a', labels: { x: '1', y: 'q"z' }, value: 2.5, timestampMs: 1000 },
    { name: 'b', labels: {}, value: 3 },
  ]);
});

test('NodeMetrics and PodMetrics: CPU as the rate between scrapes, memory the working set', async (t) => {
  const node = await c.api('GET', '/apis/metrics.k8s.io/v1beta1/nodes/node-1');
  t.is(node.status, 200, node.text);
  t.deepEqual(node.json.usage, { cpu: '250000000n', memory: `${512 * 1024}Ki` });
  t.is(node.json.window, '15s');
  const pods = await c.api(
    'GET',
    '/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=tier%3Dfront',
  );
  t.deepEqual(
    pods.json.items.map((p: any) => [p.metadata.name, p.containers]),
    [['web', [{ name: 'app', usage: { cpu: '100000000n', memory: `${64 * 1024}Ki` } }]]],
  );
  const missing = await c.api('GET', '/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/none');
  t.is(missing.status, 404);
  t.regex(missing.json.message, /podmetrics.metrics.k8s.io "none" not found/);
  const bad = await c.api('GET', '/apis/metrics.k8s.io/v1beta1/pods?labelSelector=%3D%3D');
  t.is(bad.status, 400);
  t.regex(bad.json.message, /labelSelector/);
  const groups = await c.api('GET', '/apis');
  t.true(groups.json.groups.some((g: any) => g.name === 'metrics.k8s.io'));
});

kubectlTest('kubectl top node and kubectl top pod read them', async (t) => {
  const nodes = await c.kubectl(['top', 'node', '--no-headers']);
  t.is(nodes.code, 0, nodes.stderr);
  t.regex(nodes.stdout, /^node-1\s+250m\s+(\S+%\s+)?512Mi/); // percentages need node allocatable
  const pods = await c.kubectl(['top', 'pod', '-n', 'default', '--no-headers']);
  t.is(pods.code, 0, pods.stderr);
  t.regex(pods.stdout, /db\s+20m\s+32Mi/);
  t.regex(pods.stdout, /web\s+100m\s+64Mi/);
  const selected = await c.kubectl(['top', 'pod', '-l', 'tier=back', '--no-headers']);
  t.is(selected.code, 0, selected.stderr);
  t.regex(selected.stdout.trim(), /^db\s+20m\s+32Mi$/);
});

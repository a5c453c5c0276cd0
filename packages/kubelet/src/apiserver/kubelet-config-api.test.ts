import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { readKubeletConfig } from '../kubelet-config.js';
import { ClientNodeApi, loadKubeConfig } from '@nodelet/client/client-node';
import { NodeLeaseNamespace } from './node-lease.js';
import { nodeName, startCluster } from './test-harness.js';

/** A KubeletConfiguration file with `fields`, read as `nodelet kubelet --config` reads it. */
function kubeletConfig(t: { teardown: (fn: () => void) => void }, fields: string) {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-kubelet-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'kubelet.yaml');
  writeFileSync(path, `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${fields}`);
  return readKubeletConfig(path, createLogger({ sink: new MemorySink().sink }));
}

test('nodeLeaseDurationSeconds, nodeStatusUpdateFrequency and nodeStatusReportFrequency from the config file set the heartbeat', async (t) => {
  const c = kubeletConfig(
    t,
    'nodeLeaseDurationSeconds: 20\nnodeStatusUpdateFrequency: 4s\nnodeStatusReportFrequency: 1m\n',
  );
  const h = await startCluster({
    apiServer: {
      nodeLeaseDurationSeconds: c.nodeLeaseDurationSeconds,
      nodeStatusUpdateFrequencyMs: c.nodeStatusUpdateFrequencyMs,
      nodeStatusReportFrequencyMs: c.nodeStatusReportFrequencyMs,
    },
  });
  await h.clock.advance(1_000);
  t.is(h.api.leases.get(`${NodeLeaseNamespace}/${nodeName}`)!.spec!.leaseDurationSeconds, 20);
  const renewals = () => h.api.callsOf('update', 'lease/').length;
  const before = renewals();
  await h.clock.advance(60_000);
  t.is(renewals() - before, 12, 'renewed every quarter of the lease duration: 5 s (default 10 s)');

  const patches = () => h.api.callsOf('patch', `node/${nodeName}/status`).length;
  const written = patches();
  await h.clock.advance(60_000);
  t.is(patches(), written + 1, 'an unchanged status is written once a minute (default 5 min)');
  h.runtime.setCondition('NetworkReady', false, 'NetworkPluginNotReady', 'cni plugin not initialized');
  await h.clock.advance(4_000);
  const ready = h.api.nodes.get(nodeName)!.status!.conditions!.find((c) => c.type === 'Ready')!;
  t.is(ready.status, 'False', 'a change is seen within 4 s (default 10 s)');
  await h.kubelet.stop();
});

test('nodeStatusUpdateFrequency alone is also the report frequency, as upstream', (t) => {
  t.like(kubeletConfig(t, 'nodeStatusUpdateFrequency: 20s\n'), {
    nodeStatusUpdateFrequencyMs: 20_000,
    nodeStatusReportFrequencyMs: 20_000,
  });
  t.is(kubeletConfig(t, 'nodeLeaseDurationSeconds: 30\n').nodeStatusReportFrequencyMs, undefined);
});

test('kubeAPIQPS and kubeAPIBurst from the config file limit the requests the API client sends', async (t) => {
  const c = kubeletConfig(t, 'kubeAPIQPS: 1\nkubeAPIBurst: 2\n');
  let received = 0;
  const server = createServer((_req, res) => {
    received++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } }));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => void server.close());
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-kc-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, 'kc'),
    `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:${(server.address() as AddressInfo).port}", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
  );
  const clock = new VirtualClock();
  const api = new ClientNodeApi(loadKubeConfig(join(dir, 'kc')), {
    clock,
    qps: c.kubeAPIQPS,
    burst: c.kubeAPIBurst,
  });
  t.teardown(() => api.close());
  const calls = [0, 1, 2, 3].map(() => api.getNode('n1'));
  await Promise.all(calls.slice(0, 2));
  // The others wait for a token, which only time on the (virtual) clock brings.
  t.is(received, 2, 'the burst of 2 at once');
  await clock.advance(1_000);
  await calls[2];
  t.is(received, 3, 'then 1 per second');
  await clock.advance(1_000);
  await calls[3];
  t.is(received, 4);
});

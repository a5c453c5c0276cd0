import test from 'ava';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NodeletUp, requireKubectl } from './e2e-containerd/nodelet-up.js';
import { pollUntil } from './test-helpers.js';

/**
 * Node-pressure eviction as a kubectl user sees it on `nodelet up` (fake runtime): a node of 2Gi with
 * `evictionHard: memory.available<500Mi` runs a pod whose simulated memory grows; the node reports
 * MemoryPressure and gets the memory-pressure taint, and the pod ends Failed, reason Evicted.
 */
const kubectl = requireKubectl(test);

const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
evictionHard: {memory.available: 500Mi}
`;
const nodeletConfig = `apiVersion: nodelet.dev/v1alpha1
kind: NodeletConfiguration
kubelet: {kubeletConfig: ./kubelet-config.yaml, evictionMonitoringPeriod: 1s}
plugins:
  runtime-fake: {node: {memory: 2Gi}}
`;
const pod = `apiVersion: v1
kind: Pod
metadata:
  name: leaky
  annotations: {runtime-fake.nodelet.dev/main: "memory=1Gi,memoryGrowth=200Mi"}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nodelet.test/busybox:1
    resources: {requests: {memory: 100Mi}}
`;

if (kubectl) {
  test('simulated memory pressure: MemoryPressure and its taint on the Node, the pod Failed/Evicted', async (t) => {
    const { dataDir, configPath } = NodeletUp.newDataDir(nodeletConfig);
    writeFileSync(join(dataDir, 'kubelet-config.yaml'), kubeletConfig);
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const up = await NodeletUp.start(['--hostname-override', 'pressure', '--config', configPath!], {
      dataDir,
    });
    t.teardown(async () => void (await up.stop()));
    await up.waitNodeReady('pressure');

    await up.kubectlOk(['apply', '-f', '-'], pod);
    const evicted = await pollUntil(
      'the pod to be evicted',
      async () => {
        const r = await up.kubectl([
          'get',
          'pod',
          'leaky',
          '-o',
          'jsonpath={.status.phase}/{.status.reason}',
        ]);
        return r.stdout === 'Failed/Evicted' ? r.stdout : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500, describe: () => up.stderr().slice(-3000) },
    );
    t.is(evicted, 'Failed/Evicted');
    const message = await up.kubectlOk(['get', 'pod', 'leaky', '-o', 'jsonpath={.status.message}']);
    t.regex(
      message,
      /^The node was low on resource: memory\. Threshold quantity: 500Mi, available: \S+\. Container main was using \S+, request is 100Mi, has larger consumption of memory\./,
    );
    const pressure = await up.kubectlOk([
      'get',
      'node',
      'pressure',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="MemoryPressure")].status}/{.status.conditions[?(@.type=="MemoryPressure")].reason}',
    ]);
    t.is(pressure, 'True/KubeletHasInsufficientMemory');
    const taints = await pollUntil(
      'the memory-pressure taint',
      async () => {
        const out = await up.kubectlOk(['get', 'node', 'pressure', '-o', 'jsonpath={.spec.taints[*].key}']);
        return out.includes('node.kubernetes.io/memory-pressure') ? out : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    t.regex(taints, /node\.kubernetes\.io\/memory-pressure/);
    // kubectl's printer shows the stopped container's reason (Error, killed at the end of the 1 s grace
    // period) over the pod's Evicted, as for any pod whose containers terminated; the reason is the pod's.
    const row = await up.kubectlOk(['get', 'pods', '--no-headers']);
    t.regex(row, /^leaky\s+0\/1\s+Error\s/m);
    const wide = await up.kubectlOk([
      'get',
      'pods',
      '-o',
      'custom-columns=NAME:.metadata.name,STATUS:.status.reason',
      '--no-headers',
    ]);
    t.regex(wide, /^leaky\s+Evicted$/m);
    const events = await pollUntil(
      'the Evicted event',
      async () => {
        const r = await up.kubectl([
          'get',
          'events',
          '--field-selector',
          'involvedObject.name=leaky',
          '--no-headers',
        ]);
        return /Evicted/.test(r.stdout) ? r.stdout : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    t.regex(events, /Warning\s+Evicted\s+pod\/leaky\s+The node was low on resource: memory\./);
  });
}

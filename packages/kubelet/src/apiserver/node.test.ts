import test from 'ava';
import { FakeKubeApi } from '@nodelet/client/testing';
import { NodeLeaseNamespace } from './node-lease.js';
import { nodeConditions, parseLabels, parseTaints } from './node-status.js';
import { apiPod, nodeName, startCluster } from './test-harness.js';

test('registers the Node: labels, taints, addresses, capacity, allocatable, nodeInfo, Ready', async (t) => {
  const h = await startCluster({
    apiServer: {
      nodeLabels: { 'topology.kubernetes.io/zone': 'z1', 'kubernetes.io/hostname': 'custom-host' },
      registerWithTaints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }],
      hostname: 'host1',
    },
  });
  await h.clock.advance(1_000);
  const node = h.api.nodes.get(nodeName)!;
  t.truthy(node, 'the node is registered');
  const labels = node.metadata!.labels!;
  t.is(labels['kubernetes.io/os'], 'linux');
  t.truthy(labels['kubernetes.io/arch']);
  t.is(labels['beta.kubernetes.io/os'], 'linux');
  t.is(labels['topology.kubernetes.io/zone'], 'z1');
  t.is(labels['kubernetes.io/hostname'], 'custom-host', '--node-labels override the default, as upstream');
  t.deepEqual(node.spec!.taints, [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }]);
  const status = node.status!;
  t.deepEqual(status.addresses, [
    { type: 'InternalIP', address: '192.0.2.10' },
    { type: 'Hostname', address: 'host1' },
  ]);
  t.deepEqual(status.capacity, { pods: '110', cpu: '4', memory: '8Gi' });
  t.is(
    status.allocatable!.memory,
    `${8 * 1024 * 1024 - 100 * 1024}Ki`,
    'memory less the 100Mi eviction threshold',
  );
  t.is(status.allocatable!.cpu, '4');
  t.is(status.nodeInfo!.containerRuntimeVersion, 'nodelet-fake://0.1.0');
  t.regex(status.nodeInfo!.kubeletVersion!, /^v1\.\d+\.\d+/);
  t.is(status.nodeInfo!.operatingSystem, 'linux');
  t.truthy(status.nodeInfo!.kernelVersion);
  t.deepEqual(
    status.conditions!.map((c) => [c.type, c.status, c.reason, c.message]),
    [
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
      ['PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
      ['Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'],
    ],
  );
  // Node events: Starting, then the conditions.
  const reasons = [...h.api.events.values()].map((e) => e.reason);
  t.true(reasons.includes('Starting'));
  t.true(reasons.includes('NodeReady'));
  t.true(reasons.includes('NodeHasSufficientMemory'));
  await h.kubelet.stop();
});

test('an existing Node is reconciled, not re-created: default labels fixed, user labels kept', async (t) => {
  const api = new FakeKubeApi();
  await api.createNode({
    metadata: { name: nodeName, labels: { 'kubernetes.io/os': 'windows', team: 'a' } },
    spec: { taints: [{ key: 'manual', effect: 'NoSchedule' }] },
  });
  const uid = api.nodes.get(nodeName)!.metadata!.uid;
  const h = await startCluster({ api });
  await h.clock.advance(1_000);
  const node = h.api.nodes.get(nodeName)!;
  t.is(node.metadata!.uid, uid, 'same object');
  t.is(node.metadata!.labels!['kubernetes.io/os'], 'linux');
  t.is(node.metadata!.labels!.team, 'a');
  t.deepEqual(node.spec!.taints, [{ key: 'manual', effect: 'NoSchedule' }]);
  t.is(node.status!.conditions!.find((c) => c.type === 'Ready')!.status, 'True');
  t.is(h.api.callsOf('create', 'node/').length, 2, "the test's create, then the kubelet's (AlreadyExists)");
  t.is(h.api.callsOf('patch', `node/${nodeName}`).filter((c) => !c.what.endsWith('/status')).length, 1);
  await h.kubelet.stop();
});

test('lease: created in kube-node-lease (40 s, held by the node, owned by the Node) and renewed every 10 s', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  const lease = h.api.leases.get(`${NodeLeaseNamespace}/${nodeName}`)!;
  t.truthy(lease);
  t.is(lease.spec!.holderIdentity, nodeName);
  t.is(lease.spec!.leaseDurationSeconds, 40);
  t.regex(String(lease.spec!.renewTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'MicroTime: six digits');
  await h.clock.advance(10_000);
  const renewed = h.api.leases.get(`${NodeLeaseNamespace}/${nodeName}`)!;
  t.deepEqual(renewed.metadata!.ownerReferences, [
    { apiVersion: 'v1', kind: 'Node', name: nodeName, uid: h.api.nodes.get(nodeName)!.metadata!.uid! },
  ]);
  const before = h.api.callsOf('update', 'lease/').length;
  await h.clock.advance(60_000);
  const renewals = h.api.callsOf('update', 'lease/').length - before;
  t.is(renewals, 6, 'one renewal per 10 s');
  const times = h.api
    .callsOf('update', 'lease/')
    .map((c) => Date.parse(String((c.body as any).spec.renewTime)));
  t.is(times.at(-1)! - times.at(-2)!, 10_000);
  await h.kubelet.stop();
});

test('lease: a conflict re-reads the lease; a deleted lease is created again', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  const { ApiError } = await import('@nodelet/client');
  h.api.failNext.set('update lease/', new ApiError(409, 'Conflict', 'the object has been modified'));
  await h.clock.advance(10_000);
  t.true(h.api.callsOf('get', 'lease/').length >= 2, 'read again after the conflict');
  const renewTime = Date.parse(
    String(h.api.leases.get(`${NodeLeaseNamespace}/${nodeName}`)!.spec!.renewTime),
  );
  t.true(h.clock.now() - renewTime < 10_000, 'renewed in the same period');
  h.api.leases.clear();
  await h.clock.advance(20_000);
  t.truthy(h.api.leases.get(`${NodeLeaseNamespace}/${nodeName}`), 'created again');
  await h.kubelet.stop();
});

test('node status: written when it changes (checked every 10 s), and at least every 5 min', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  const patches = () => h.api.callsOf('patch', `node/${nodeName}/status`).length;
  const start = patches();
  await h.clock.advance(60_000);
  t.is(patches(), start, 'unchanged: no write within 5 min');
  await h.clock.advance(250_000);
  t.is(patches(), start + 1, 'one write after the report period');

  // The runtime network goes down: Ready False within one update period.
  h.runtime.setCondition('NetworkReady', false, 'NetworkPluginNotReady', 'cni plugin not initialized');
  await h.clock.advance(10_000);
  const ready = () => h.api.nodes.get(nodeName)!.status!.conditions!.find((c) => c.type === 'Ready')!;
  t.is(ready().status, 'False');
  t.is(ready().reason, 'KubeletNotReady');
  t.is(
    ready().message,
    'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized',
  );
  t.true([...h.api.events.values()].some((e) => e.reason === 'NodeNotReady'));
  h.runtime.setCondition('NetworkReady', true);
  await h.clock.advance(10_000);
  t.is(ready().status, 'True');
  await h.kubelet.stop();
});

test('Ready condition: runtime down, runtime not ready, PLEG unhealthy, with upstream messages', (t) => {
  const now = Date.UTC(2026, 0, 1);
  const ready = (h: Parameters<typeof nodeConditions>[0]) =>
    nodeConditions(h, undefined, now).find((c) => c.type === 'Ready')!;
  const ok = { type: 'NetworkReady', status: true, reason: '', message: '' };
  t.is(ready({ pleg: { healthy: true, message: '' } }).message, 'container runtime is down');
  t.is(
    ready({
      runtime: [{ type: 'RuntimeReady', status: false, reason: 'R', message: 'm' }, ok],
      pleg: { healthy: true, message: '' },
    }).message,
    'container runtime not ready: RuntimeReady=false reason:R message:m',
  );
  const pleg = ready({
    runtime: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, ok],
    pleg: { healthy: false, message: 'pleg was last seen active 3m0s ago; threshold is 3m0s' },
  });
  t.is(pleg.status, 'False');
  t.is(pleg.message, 'PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s');
  // Transition times stay while the status does.
  const first = nodeConditions(
    {
      runtime: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, ok],
      pleg: { healthy: true, message: '' },
    },
    undefined,
    now,
  );
  const later = nodeConditions(
    {
      runtime: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, ok],
      pleg: { healthy: true, message: '' },
    },
    first,
    now + 60_000,
  );
  t.is(later[3]!.lastTransitionTime, first[3]!.lastTransitionTime);
  t.not(later[3]!.lastHeartbeatTime, first[3]!.lastHeartbeatTime);
});

test('registration retries with backoff while the API server is away; the node registers when it returns', async (t) => {
  const api = new FakeKubeApi();
  api.down = true;
  const h = await startCluster({ api });
  await h.clock.advance(30_000);
  const attempts = h.logs.find('Attempting to register node').length;
  // At 0, 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 13.3, 20.3, 27.3 s.
  t.is(attempts, 10, `100 ms doubling to 7 s: ${attempts} attempts in 30 s`);
  api.down = false;
  await h.clock.advance(8_000);
  t.truthy(api.nodes.get(nodeName));
  await h.kubelet.stop();
});

test('--node-labels and --register-with-taints syntax', (t) => {
  t.deepEqual(parseLabels('a=b, c/d=e,f='), { a: 'b', 'c/d': 'e', f: '' });
  t.throws(() => parseLabels('novalue'), { message: /invalid label "novalue": want key=value/ });
  t.deepEqual(parseTaints('k=v:NoSchedule,gpu:NoExecute'), [
    { key: 'k', value: 'v', effect: 'NoSchedule' },
    { key: 'gpu', effect: 'NoExecute' },
  ]);
  t.throws(() => parseTaints('k=v:Sometimes'), {
    message: /effect must be NoSchedule, PreferNoSchedule or NoExecute/,
  });
  t.throws(() => parseTaints('k=v'), { message: /want key\[=value\]:effect/ });
});

test('podCIDR: the kubelet hands its Node spec.podCIDRs to the runtime (UpdateRuntimeConfig), once; pods get IPs in it', async (t) => {
  const h = await startCluster();
  const calls: (string | undefined)[] = [];
  const update = h.runtime.updateRuntimeConfig.bind(h.runtime);
  h.runtime.updateRuntimeConfig = (req) => {
    calls.push(req.runtimeConfig?.networkConfig?.podCidr);
    return update(req);
  };
  await h.clock.advance(500);
  t.deepEqual(calls, [], 'no podCIDR yet: nothing to hand over');
  // The node IPAM controller sets both fields on the Node.
  await h.api.patchNode(nodeName, { spec: { podCIDR: '10.244.7.0/24', podCIDRs: ['10.244.7.0/24'] } });
  await h.clock.advance(2_000);
  t.deepEqual(
    calls,
    ['10.244.7.0/24'],
    'a new node reads its podCIDR early, before the first status sync (10 s)',
  );
  await h.clock.advance(30_000);
  t.is(calls.length, 1, 'an unchanged podCIDR is not sent again');
  await h.api.createPod(apiPod('in-range'));
  await h.clock.advanceUntil(() => !!h.api.pods.get('default/in-range')?.status?.podIP, {
    stepMs: 50,
    maxMs: 5_000,
  });
  t.regex(h.api.pods.get('default/in-range')!.status!.podIP!, /^10\.244\.7\.\d+$/);
  await h.kubelet.stop();
});

test('podCIDR: a Node that never gets one is read a few times (100 ms doubling), then only at status syncs', async (t) => {
  const h = await startCluster();
  await h.clock.advance(60_000);
  const reads = h.api.callsOf('get', `node/${nodeName}`).length;
  // 100 ms … 6.4 s (7 early reads), then the 10 s status syncs (6 in a minute).
  t.true(reads >= 6 && reads <= 14, `${reads} reads of the Node in a minute`);
  await h.kubelet.stop();
});

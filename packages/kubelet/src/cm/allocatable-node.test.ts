import test from 'ava';
import { apiPod, nodeName, startCluster, staticPod } from '../apiserver/test-harness.js';
import { parseEvictionThresholds } from './node-allocatable.js';

/**
 * Node allocatable through a joined kubelet (fake API, virtual time): the Node reports capacity less
 * systemReserved, kubeReserved and the hard eviction threshold; a pod that does not fit what is left is
 * OutOfmemory, whether the API server or a static manifest sent it.
 */
const reservation = {
  systemReserved: { cpu: '500m', memory: '1Gi' },
  kubeReserved: { memory: '512Mi' },
  evictionHard: parseEvictionThresholds({ 'memory.available': '200Mi' }, 'evictionHard'),
};

test('the Node’s allocatable is capacity less the reservations and the eviction threshold', async (t) => {
  const h = await startCluster({ kubelet: { reservation } });
  t.teardown(() => h.kubelet.stop());
  await h.clock.advance(1_000);
  const status = h.api.nodes.get(nodeName)!.status!;
  t.deepEqual(status.capacity, { pods: '110', cpu: '4', memory: '8Gi' });
  // 8Gi − 1Gi − 512Mi − 200Mi = 6456Mi.
  t.deepEqual(status.allocatable, { pods: '110', cpu: '3500m', memory: `${6456 * 1024}Ki` });
});

test('a pod that does not fit allocatable memory is OutOfmemory, from the API server and from a manifest', async (t) => {
  const h = await startCluster({ kubelet: { reservation } });
  t.teardown(() => h.kubelet.stop());
  await h.clock.advance(1_000);
  const big = {
    containers: [{ name: 'main', image: 'busybox:1.36', resources: { requests: { memory: '7Gi' } } }],
  };
  h.statics.set([staticPod('static-big', big)]);
  await h.api.createPod(apiPod('api-big', big));
  await h.clock.advance(2_000);
  const message = `Pod was rejected: Node didn't have enough resource: memory, requested: ${7 * 2 ** 30}, used: 0, capacity: ${6456 * 2 ** 20}`;
  const statusOf = (name: string) =>
    h.kubelet.podList().items.find((p) => p.metadata?.name?.startsWith(name))?.status;
  t.like(statusOf('static-big'), { phase: 'Failed', reason: 'OutOfmemory', message });
  t.like(h.api.pods.get(`default/api-big`)?.status, { phase: 'Failed', reason: 'OutOfmemory', message });
  t.is((await h.runtime.listPodSandbox({})).items.length, 0, 'neither ran');
});

test('a reservation above the node’s capacity stops the kubelet with upstream’s message', async (t) => {
  await t.throwsAsync(startCluster({ kubelet: { reservation: { systemReserved: { memory: '9Gi' } } } }), {
    message:
      /^invalid Node Allocatable configuration. Resource "memory" has a reservation of \d+Ki but capacity of 8Gi. Expected capacity >= reservation.$/,
  });
});

import test from 'ava';
import { nodeName, staticPod, startCluster } from './test-harness.js';

const mirrorOf = (h: Awaited<ReturnType<typeof startCluster>>) =>
  h.api.pods.get(`kube-system/etcd-${nodeName}`);

test('a static pod appears as a mirror pod: hash annotation, Node owner, status Running', async (t) => {
  const h = await startCluster();
  const pod = staticPod('etcd');
  h.statics.set([pod]);
  await h.clock.advanceUntil(() => mirrorOf(h)?.status?.phase === 'Running', { maxMs: 10_000 });
  const mirror = mirrorOf(h)!;
  t.is(mirror.metadata!.annotations!['kubernetes.io/config.mirror'], pod.metadata!.uid!);
  t.is(mirror.metadata!.annotations!['kubernetes.io/config.hash'], pod.metadata!.uid!);
  t.is(mirror.metadata!.annotations!['kubernetes.io/config.source'], 'file');
  const node = h.api.nodes.get(nodeName)!;
  t.deepEqual(mirror.metadata!.ownerReferences, [
    { apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.metadata!.uid!, controller: true },
  ]);
  t.not(mirror.metadata!.uid, pod.metadata!.uid, 'the API gives the mirror pod its own UID');
  t.is(mirror.spec!.nodeName, nodeName);
  t.truthy(mirror.status!.podIP);
  t.is(h.runtime.counts().running, 1, 'the mirror pod itself is not run');
  await h.kubelet.stop();
});

test('deleting a mirror pod does not stop the static pod; the mirror is created again', async (t) => {
  const h = await startCluster();
  h.statics.set([staticPod('etcd')]);
  await h.clock.advanceUntil(() => mirrorOf(h)?.status?.phase === 'Running', { maxMs: 10_000 });
  const first = mirrorOf(h)!.metadata!.uid;
  const created = h.runtime.counts().containers;
  await h.api.deletePod('kube-system', `etcd-${nodeName}`, {}); // as kubectl delete: graceful
  await h.clock.advanceUntil(() => !!mirrorOf(h) && mirrorOf(h)!.metadata!.uid !== first, { maxMs: 20_000 });
  t.falsy(mirrorOf(h)!.metadata!.deletionTimestamp);
  await h.clock.advance(5_000);
  t.is(h.runtime.counts().running, 1);
  t.is(h.runtime.counts().containers, created, 'no container was restarted');
  t.is(mirrorOf(h)!.status?.phase, 'Running', 'the new mirror gets the status');
  await h.kubelet.stop();
});

test('an edited manifest replaces the mirror; a removed manifest deletes it', async (t) => {
  const h = await startCluster();
  h.statics.set([staticPod('etcd')]);
  await h.clock.advanceUntil(() => !!mirrorOf(h), { maxMs: 10_000 });
  const edited = staticPod('etcd', { containers: [{ name: 'main', image: 'busybox:1.37' }] });
  h.statics.set([edited]);
  await h.clock.advanceUntil(
    () => mirrorOf(h)?.metadata?.annotations?.['kubernetes.io/config.mirror'] === edited.metadata!.uid,
    { maxMs: 20_000 },
  );
  t.is(mirrorOf(h)!.spec!.containers[0]!.image, 'busybox:1.37');
  h.statics.set([]);
  await h.clock.advanceUntil(() => !mirrorOf(h), { maxMs: 20_000 });
  t.pass();
  await h.kubelet.stop();
});

test('an orphaned mirror pod (no static pod any more) is removed at start', async (t) => {
  const h = await startCluster({ start: false });
  await h.api.createPod({
    metadata: {
      name: 'old-node1',
      namespace: 'kube-system',
      annotations: { 'kubernetes.io/config.mirror': 'abc' },
    },
    spec: { nodeName, containers: [{ name: 'main', image: 'busybox:1.36' }] },
  });
  await h.kubelet.start();
  await h.clock.advanceUntil(() => !h.api.pods.has('kube-system/old-node1'), { maxMs: 15_000 });
  t.is(h.runtime.counts().containers, 0, 'never run');
  await h.kubelet.stop();
});

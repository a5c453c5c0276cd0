import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { NodeletEvent } from '@nodelet/kernel';
import { makePod, startHarness } from '../test-harness.js';
import { volumeDir } from './paths.js';
import { MemoryPodObjects } from './test-volumes.js';

/**
 * The kubelet on the fake runtime under virtual time, with a pod of the Kubernetes docs' "Configure a
 * Pod to Use a ConfigMap" (volume form): it waits in ContainerCreating with FailedMount while the
 * ConfigMap is missing, starts by itself once it exists (no recreate), and the file follows an edit
 * of the ConfigMap within the sync period (the pod's periodic resync, 1 min).
 */
test('a configMap volume: FailedMount while the ConfigMap is missing, started once it exists, the file follows its edits', async (t) => {
  const objects = new MemoryPodObjects();
  const h = await startHarness({ objects });
  t.teardown(() => h.kubelet.stop());
  const events: string[] = [];
  h.bus.events$.subscribe((e: NodeletEvent) => {
    if (e.type === '[Kubelet] Pod Event' && e.reason === 'FailedMount') events.push(e.message);
  });
  const pod = makePod('configmap-pod', {
    containers: [
      {
        name: 'main',
        image: 'busybox:1.36',
        imagePullPolicy: 'IfNotPresent',
        volumeMounts: [{ name: 'config-volume', mountPath: '/etc/config' }],
      },
    ],
    volumes: [{ name: 'config-volume', configMap: { name: 'special-config' } }],
  });
  h.source.set([pod]);
  await h.clock.advance(25_000);
  const waiting = h.status('uid-configmap-pod').containerStatuses?.[0]?.state?.waiting;
  t.deepEqual(waiting, {
    reason: 'ContainerCreating',
    message: 'volume "config-volume": configmap "special-config" not found',
  });
  t.true(events.length >= 2, 'retried, each time reported');
  t.is(
    events[0],
    'MountVolume.SetUp failed for volume "config-volume" : configmap "special-config" not found',
  );

  objects.setConfigMap('default', 'special-config', { SPECIAL_LEVEL: 'very' });
  await h.clock.advance(11_000);
  const running = h.status('uid-configmap-pod').containerStatuses?.[0];
  t.truthy(running?.state?.running, 'started by a retry, the pod not recreated');
  const dir = volumeDir(
    h.kubelet.options.rootDir,
    'uid-configmap-pod',
    'kubernetes.io/configmap',
    'config-volume',
  );
  const { containers } = await h.runtime.listContainers({});
  const { status } = await h.runtime.containerStatus({ containerId: containers[0]!.id, verbose: false });
  // Read-only although the volumeMount does not say so: API data volumes are, upstream.
  t.like(status?.mounts[0], { containerPath: '/etc/config', hostPath: dir, readonly: true });
  t.is(readFileSync(join(dir, 'SPECIAL_LEVEL'), 'utf8'), 'very');

  objects.setConfigMap('default', 'special-config', { SPECIAL_LEVEL: 'extremely' });
  await h.clock.advance(61_000);
  t.is(readFileSync(join(dir, 'SPECIAL_LEVEL'), 'utf8'), 'extremely');
  t.is(containers.length, 1);
  t.is((await h.runtime.listContainers({})).containers.length, 1, 'the container was not replaced');
});

test('a downwardAPI volume’s labels file follows the pod’s labels (a pod update syncs at once)', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const pod = makePod('labelled', {
    volumes: [
      {
        name: 'podinfo',
        downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
      },
    ],
  });
  pod.metadata!.labels = { zone: 'a' };
  h.source.set([pod]);
  await h.clock.advance(2_000);
  const file = join(
    volumeDir(h.kubelet.options.rootDir, 'uid-labelled', 'kubernetes.io/downward-api', 'podinfo'),
    'labels',
  );
  t.is(readFileSync(file, 'utf8'), 'zone="a"');
  h.source.set([{ ...pod, metadata: { ...pod.metadata, labels: { zone: 'b' } } }]);
  await h.clock.advance(1_000);
  t.is(readFileSync(file, 'utf8'), 'zone="b"');
});

test('the pod’s volumes go with it; an orphaned pod directory goes at housekeeping', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const pod = makePod('scratchy', { volumes: [{ name: 'scratch', emptyDir: {} }] });
  h.source.set([pod]);
  await h.clock.advance(2_000);
  const root = h.kubelet.options.rootDir;
  t.true(existsSync(join(root, 'pods', 'uid-scratchy')));
  mkdirSync(join(root, 'pods', 'left-by-a-crash', 'volumes'), { recursive: true });
  await h.clock.advance(3_000);
  t.false(existsSync(join(root, 'pods', 'left-by-a-crash')));
  t.true(existsSync(join(root, 'pods', 'uid-scratchy')), 'a running pod keeps its directory');
  h.source.set([]);
  await h.clock.advance(40_000);
  t.false(existsSync(join(root, 'pods', 'uid-scratchy')));
});

import test from 'ava';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pod } from '@nodelet/api';
import { makePod, startHarness } from './test-harness.js';
import { emptyDirPath } from './volume/paths.js';

// The eviction manager in a kubelet on the fake runtime and the virtual clock: simulated usage (the
// runtime-fake.nodelet.dev/ behaviour annotations and the simulated node's own usage) drives the whole
// chain — pressure condition, ranking, the evicted pod's status and event, admission, node-level reclaim.

const B = 'runtime-fake.nodelet.dev/main';
const Mi = 2 ** 20;

const withResources = (pod: Pod, requests: Record<string, string>, limits?: Record<string, string>): Pod => {
  pod.spec!.containers[0]!.resources = { requests, ...(limits ? { limits } : {}) };
  return pod;
};

test('memory: a Burstable pod whose memory grows is evicted; MemoryPressure until the transition period passed; BestEffort refused meanwhile', async (t) => {
  const h = await startHarness({
    eviction: { eviction: { evictionHard: { 'memory.available': '500Mi' } } },
    runtimeConfig: { node: { memory: '2Gi' } },
  });
  const events: { reason: string; type: string; message: string; pod: string }[] = [];
  h.bus.subscribe('[Kubelet] Pod Event', (e) =>
    events.push({ reason: e.reason, type: e.eventType, message: e.message, pod: e.podName }),
  );
  const guaranteed = withResources(
    makePod('guaranteed', {}, { [B]: 'memory=400Mi' }),
    { memory: '500Mi', cpu: '100m' },
    { memory: '500Mi', cpu: '100m' },
  );
  // 200Mi, then 50Mi more every second: the node's 2Gi less 500Mi is crossed after about 19 s.
  const leaky = withResources(makePod('leaky', {}, { [B]: 'memory=200Mi,memoryGrowth=50Mi' }), {
    memory: '100Mi',
  });
  h.source.set([guaranteed, leaky]);
  await h.clock.advance(10_000);
  t.is(h.status('uid-leaky').phase, 'Running');
  t.deepEqual(h.kubelet.evictionManager!.nodeConditions(), []);

  await h.clock.advance(10_000);
  t.deepEqual(h.kubelet.evictionManager!.nodeConditions(), ['MemoryPressure']);
  await h.clock.advance(2_000); // the 1 s grace period of a hard eviction
  const evicted = h.status('uid-leaky');
  t.is(evicted.phase, 'Failed');
  t.is(evicted.reason, 'Evicted');
  t.regex(
    evicted.message!,
    /^The node was low on resource: memory\. Threshold quantity: 500Mi, available: \d+(?:Mi)?\. Container main was using \d+(?:Mi)?, request is 100Mi, has larger consumption of memory\. $/,
  );
  const disruption = evicted.conditions?.find((c) => c.type === 'DisruptionTarget');
  t.like(disruption, { status: 'True', reason: 'TerminationByKubelet', message: evicted.message });
  t.truthy(evicted.containerStatuses![0]!.state?.terminated, 'its container was stopped');
  t.deepEqual(
    events.filter((e) => e.reason === 'Evicted').map((e) => [e.pod, e.type, e.message]),
    [['leaky', 'Warning', evicted.message]],
  );
  t.is(h.status('uid-guaranteed').phase, 'Running', 'a Guaranteed pod within its requests keeps running');

  // Relieved, but the condition stays for the transition period (5 min): a BestEffort pod is refused.
  h.source.set([guaranteed, leaky, makePod('best-effort', {})]);
  await h.clock.advance(1_000);
  const refused = h.status('uid-best-effort');
  t.is(refused.phase, 'Failed');
  t.is(refused.reason, 'Evicted');
  t.is(refused.message, 'Pod was rejected: The node had condition: [MemoryPressure]. ', 'upstream rejectPod');
  const burstable = withResources(makePod('burstable', {}), { memory: '10Mi' });
  h.source.set([guaranteed, leaky, makePod('best-effort', {}), burstable]);
  await h.clock.advance(1_000);
  t.is(h.status('uid-burstable').phase, 'Running', 'a Burstable pod is admitted under memory pressure');

  await h.clock.advance(4 * 60_000 + 40_000);
  t.deepEqual(h.kubelet.evictionManager!.nodeConditions(), ['MemoryPressure']);
  await h.clock.advance(20_000);
  t.deepEqual(h.kubelet.evictionManager!.nodeConditions(), [], 'gone after the transition period');
  t.is(h.status('uid-guaranteed').phase, 'Running');
  t.is(h.status('uid-leaky').phase, 'Failed', 'an evicted pod stays Failed');
  // Deleted in its source, it is terminated still Failed/Evicted, then forgotten.
  h.source.set([guaranteed, makePod('best-effort', {}), burstable]);
  const statuses: string[] = [];
  h.bus.subscribe('[Status] Pod Status Changed', (e) => {
    if (e.podUid === 'uid-leaky') statuses.push(`${e.status.phase}/${e.status.reason}`);
  });
  await h.clock.advance(5_000);
  t.true(
    statuses.every((s) => s === 'Failed/Evicted'),
    statuses.join(' '),
  );
  t.falsy(h.kubelet.podList().items.find((p) => p.metadata?.uid === 'uid-leaky'));
  await h.kubelet.stop();
});

test('disk: unused images are reclaimed first; then the pod writing the most to its emptyDir is evicted', async (t) => {
  const h = await startHarness({
    eviction: { eviction: { evictionHard: { 'nodefs.available': '1Gi' } }, imageGC: { minAgeMs: 0 } },
    runtimeConfig: {
      node: { disk: '10Gi' },
      preloadedImages: [
        'registry.k8s.io/pause:3.9',
        'docker.io/library/busybox:latest',
        'docker.io/library/nginx:1.27',
      ],
    },
  });
  const scratch = (name: string) =>
    makePod(name, {
      volumes: [{ name: 'scratch', emptyDir: {} }],
      containers: [{ name: 'main', image: 'busybox:latest', imagePullPolicy: 'IfNotPresent' }],
    });
  h.source.set([scratch('writes-little'), scratch('writes-most')]);
  await h.clock.advance(2_000);
  t.is(h.status('uid-writes-most').phase, 'Running');
  for (const [name, bytes] of [
    ['writes-little', 1 * Mi],
    ['writes-most', 3 * Mi],
  ] as const) {
    const dir = emptyDirPath(h.kubelet.options.rootDir, `uid-${name}`, 'scratch');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'data'), Buffer.alloc(bytes));
  }
  const nginxSize = Number(
    (
      await h.runtime.imageStatus({
        image: { image: 'docker.io/library/nginx:1.27' } as never,
        verbose: false,
      })
    ).image!.size,
  );
  // The node's own use leaves 1Gi less a little more than nginx is: removing the unused nginx image is enough.
  const imageBytes = (await h.runtime.listImages({})).images.reduce((s, i) => s + Number(i.size), 0);
  const fill = (free: number) =>
    h.runtime.node.setUsage({ diskBytes: h.runtime.node.diskCapacityBytes - free - imageBytes });
  fill(2 ** 30 - nginxSize + 1000);
  await h.clock.advance(10_000);
  const tags = (await h.runtime.listImages({})).images.flatMap((i) => i.repoTags);
  t.false(tags.includes('docker.io/library/nginx:1.27'), 'the unused image was removed');
  t.true(tags.includes('docker.io/library/busybox:latest'), 'the image in use stays');
  t.true(tags.includes('registry.k8s.io/pause:3.9'), 'the pinned sandbox image stays');
  t.is(h.status('uid-writes-most').phase, 'Running', 'no pod evicted: node-level reclaim was enough');
  t.deepEqual(h.kubelet.evictionManager!.nodeConditions(), ['DiskPressure']);

  fill(512 * Mi); // nothing left to reclaim: a pod goes
  await h.clock.advance(12_000);
  const evicted = h.status('uid-writes-most');
  t.is(evicted.phase, 'Failed');
  t.is(evicted.reason, 'Evicted');
  t.regex(
    evicted.message!,
    /^The node was low on resource: ephemeral-storage\. Threshold quantity: 1Gi, available: \d+\. /,
  );
  t.is(h.status('uid-writes-little').phase, 'Running');
  const scratchOf = (name: string) => emptyDirPath(h.kubelet.options.rootDir, `uid-${name}`, 'scratch');
  t.false(existsSync(scratchOf('writes-most')), "the evicted pod's emptyDir is gone while the pod is known");
  t.true(existsSync(join(scratchOf('writes-little'), 'data')));
  await h.kubelet.stop();
});

test('local storage limits: an emptyDir over its sizeLimit is evicted with no pressure at all; the pod within its limit stays', async (t) => {
  const h = await startHarness({
    eviction: { eviction: { evictionHard: { 'nodefs.available': '1Gi' } } },
    runtimeConfig: { node: { disk: '100Gi' } },
  });
  const scratch = (name: string, sizeLimit: string) =>
    makePod(name, {
      volumes: [{ name: 'scratch', emptyDir: { sizeLimit } }],
      containers: [{ name: 'main', image: 'busybox:latest', imagePullPolicy: 'IfNotPresent' }],
    });
  h.source.set([scratch('within', '4Mi'), scratch('over', '1Mi')]);
  await h.clock.advance(2_000);
  for (const name of ['within', 'over']) {
    const dir = emptyDirPath(h.kubelet.options.rootDir, `uid-${name}`, 'scratch');
    writeFileSync(join(dir, 'data'), Buffer.alloc(2 * Mi));
  }
  await h.clock.advance(12_000);
  t.deepEqual(h.kubelet.evictionManager!.nodeConditions(), []);
  const over = h.status('uid-over');
  t.is(over.phase, 'Failed');
  t.is(over.reason, 'Evicted');
  t.is(over.message, 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ');
  t.is(h.status('uid-within').phase, 'Running');
  await h.kubelet.stop();
});

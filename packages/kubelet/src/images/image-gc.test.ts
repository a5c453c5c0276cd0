import test from 'ava';
import { ContainerConfig, PodSandboxConfig } from '@nodelet/cri';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import {
  ImageGarbageCollector,
  type ImageGCPolicy,
  sandboxImageOf,
  validateImageGCPolicy,
} from './image-gc.js';

// Image garbage collection on the fake runtime and the virtual clock (upstream image_gc_manager_test.go:
// TestFreeSpaceImagesInUseContainersAreIgnored, TestFreeSpaceRemoveByLeastRecentlyUsed,
// TestGarbageCollectBelowLowThreshold/…ImageNotOldEnough, TestGarbageCollectNotEnoughFreed).

const min = 60_000;
const PAUSE = 'registry.k8s.io/pause:3.9';

async function setup(policy: Partial<ImageGCPolicy> = {}) {
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const runtime = new FakeRuntime({
    clock,
    logger,
    config: { pullLatencyMs: 0, writeLogs: false, preloadedImages: [PAUSE] },
  });
  const events: [string, string][] = [];
  const removed: string[] = [];
  const remove = runtime.removeImage.bind(runtime);
  runtime.removeImage = async (req) => {
    const tag = (await runtime.imageStatus({ image: req.image!, verbose: false })).image?.repoTags[0];
    removed.push(tag ?? req.image!.image);
    return remove(req);
  };
  const gc = new ImageGarbageCollector(
    {
      runtime,
      images: runtime,
      stats: runtime.statsProvider(),
      clock,
      logger,
      nodeEvent: (reason, message) => events.push([reason, message]),
    },
    { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 2 * min, maxAgeMs: 0, ...policy },
  );
  const pull = async (...refs: string[]) => {
    for (const ref of refs) await runtime.pullImage({ image: { image: ref } as never });
  };
  const sizeOf = async (ref: string) =>
    Number((await runtime.imageStatus({ image: { image: ref } as never, verbose: false })).image!.size);
  let n = 0;
  /** A container of `image`, left running or exited. */
  const container = async (image: string, state: 'running' | 'exited' | 'removed') => {
    const name = `pod${++n}`;
    const sandboxConfig = PodSandboxConfig.fromPartial({
      metadata: { name, namespace: 'default', uid: `uid-${name}`, attempt: 0 },
      labels: { 'io.kubernetes.pod.uid': `uid-${name}` },
    });
    const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig, runtimeHandler: '' });
    const config = ContainerConfig.fromPartial({ metadata: { name: 'main', attempt: 0 }, image: { image } });
    const { containerId } = await runtime.createContainer({ podSandboxId, config, sandboxConfig });
    await runtime.startContainer({ containerId });
    if (state !== 'running') await runtime.stopContainer({ containerId, timeout: 0n });
    if (state === 'removed') await runtime.removeContainer({ containerId });
  };
  /** Sets the node's own disk use so that collecting must free `bytes` (available = (100 − low)% − bytes). */
  const mustFree = async (bytes: number) => {
    const cap = runtime.node.diskCapacityBytes;
    const low = gc.policy.lowThresholdPercent;
    const available = Math.trunc((cap * (100 - low)) / 100) - bytes;
    const { images } = await runtime.listImages({});
    const imageBytes = images.reduce((s, i) => s + Number(i.size), 0);
    runtime.node.setUsage({ diskBytes: cap - available - imageBytes });
  };
  return { clock, runtime, gc, events, removed, pull, sizeOf, container, mustFree };
}

test('least recently used first, until enough is freed; images in use (running or exited) and pinned ones stay', async (t) => {
  const h = await setup({ highThresholdPercent: 81 });
  await h.pull(
    'docker.io/library/busybox:1',
    'docker.io/library/a:1',
    'docker.io/library/b:1',
    'docker.io/library/c:1',
    'docker.io/library/d:1',
  );
  await h.gc.detectImages();
  await h.clock.advance(10 * min);
  await h.container('docker.io/library/a:1', 'removed');
  await h.gc.detectImages(); // a used at 10 min
  await h.clock.advance(10 * min);
  await h.container('docker.io/library/c:1', 'removed');
  await h.gc.detectImages(); // c used at 20 min
  await h.container('docker.io/library/b:1', 'running');
  await h.container('docker.io/library/d:1', 'exited');
  await h.clock.advance(10 * min);
  // busybox (never used) then a (used at 10 min) must go; c (used at 20 min) is not needed.
  await h.mustFree((await h.sizeOf('docker.io/library/busybox:1')) + 1);
  await h.gc.garbageCollect();
  t.deepEqual(h.removed, ['docker.io/library/busybox:1', 'docker.io/library/a:1']);
  t.deepEqual(h.events, []);
  const left = (await h.runtime.listImages({})).images.map((i) => i.repoTags[0]).sort();
  t.deepEqual(left, ['docker.io/library/b:1', 'docker.io/library/c:1', 'docker.io/library/d:1', PAUSE]);
});

test('below the high threshold nothing is removed', async (t) => {
  const h = await setup();
  await h.pull('docker.io/library/busybox:1');
  await h.clock.advance(10 * min);
  await h.gc.garbageCollect();
  t.deepEqual(h.removed, []);
});

test('an image newer than imageMinimumGCAge stays; not freeing enough is a FreeDiskSpaceFailed event', async (t) => {
  const h = await setup({ highThresholdPercent: 81 });
  await h.pull('docker.io/library/busybox:1');
  await h.gc.detectImages();
  await h.clock.advance(1 * min);
  await h.mustFree(1000);
  const err = await t.throwsAsync(() => h.gc.garbageCollect());
  t.deepEqual(h.removed, []);
  t.is(
    err!.message,
    'Failed to garbage collect required amount of images. Attempted to free 1000 bytes, but only found 0 bytes eligible to free.',
  );
  t.deepEqual(h.events, [['FreeDiskSpaceFailed', err!.message]]);
  await h.clock.advance(2 * min);
  await h.gc.garbageCollect();
  t.deepEqual(h.removed, ['docker.io/library/busybox:1'], 'old enough now');
});

test('the periodic pass: a second failure in a row is also an ImageGCFailed event', async (t) => {
  const h = await setup({ highThresholdPercent: 81 });
  await h.mustFree(10 ** 12);
  h.gc.start(5 * min);
  await h.clock.advance(5 * min);
  t.deepEqual(
    h.events.map(([r]) => r),
    ['FreeDiskSpaceFailed'],
  );
  await h.clock.advance(5 * min);
  t.deepEqual(
    h.events.map(([r]) => r),
    ['FreeDiskSpaceFailed', 'FreeDiskSpaceFailed', 'ImageGCFailed'],
  );
  t.regex(
    h.events[2]![1],
    /^Failed to garbage collect required amount of images\. Attempted to free \d+ bytes, but only found 0 bytes eligible to free\.$/,
  );
  h.gc.stop();
});

test('imageMaximumGCAge: an image unused that long goes, whatever the usage', async (t) => {
  const h = await setup({ maxAgeMs: 10 * min });
  await h.pull('docker.io/library/busybox:1', 'docker.io/library/a:1');
  await h.container('docker.io/library/a:1', 'running');
  await h.gc.detectImages();
  await h.clock.advance(11 * min);
  await h.gc.garbageCollect();
  t.deepEqual(h.removed, ['docker.io/library/busybox:1']);
});

test('deleteUnusedImages (eviction reclaim) removes every unused image old enough', async (t) => {
  const h = await setup();
  await h.pull('docker.io/library/busybox:1', 'docker.io/library/a:1');
  await h.container('docker.io/library/a:1', 'exited');
  await h.gc.detectImages();
  await h.clock.advance(3 * min);
  await h.gc.deleteUnusedImages();
  t.deepEqual(h.removed, ['docker.io/library/busybox:1']);
});

test('images there at start count as detected long ago: reclaim takes them at once; one seen later waits its minimum age', async (t) => {
  const h = await setup();
  await h.pull('docker.io/library/busybox:1');
  await h.clock.advance(10 * min);
  h.gc.start(5 * min);
  await h.clock.advance(0);
  await h.pull('docker.io/library/a:1');
  await h.gc.deleteUnusedImages();
  t.deepEqual(h.removed, ['docker.io/library/busybox:1']);
  h.gc.stop();
});

test("the runtime's sandbox image (containerd's verbose status) is never removed, pinned or not", async (t) => {
  const h = await setup();
  await h.pull('registry.k8s.io/pause:3.10', 'docker.io/library/busybox:1');
  const status = h.runtime.status.bind(h.runtime);
  h.runtime.status = async (req) => ({
    ...(await status(req)),
    info: { config: JSON.stringify({ sandboxImage: 'registry.k8s.io/pause:3.10' }) },
  });
  await h.gc.detectImages();
  await h.clock.advance(3 * min);
  await h.gc.deleteUnusedImages();
  t.deepEqual(h.removed, ['docker.io/library/busybox:1']);
});

test('sandboxImageOf: the config of a verbose status, else nothing', (t) => {
  t.is(
    sandboxImageOf({ config: '{"sandboxImage":"registry.k8s.io/pause:3.9"}' }),
    'registry.k8s.io/pause:3.9',
  );
  t.is(sandboxImageOf({}), undefined);
  t.is(sandboxImageOf({ config: 'not json' }), undefined);
});

test('validateImageGCPolicy names the field', (t) => {
  const ok = { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 2 * min, maxAgeMs: 0 };
  t.throws(() => validateImageGCPolicy({ ...ok, highThresholdPercent: 101 }), {
    message: /imageGCHighThresholdPercent/,
  });
  t.throws(() => validateImageGCPolicy({ ...ok, lowThresholdPercent: 90 }), {
    message: /imageGCLowThresholdPercent/,
  });
  t.throws(() => validateImageGCPolicy({ ...ok, maxAgeMs: min }), { message: /imageMaximumGCAge/ });
});

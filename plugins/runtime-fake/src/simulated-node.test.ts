import test from 'ava';
import { createContainer, runPod, setup } from './fixtures.js';
import { parseBehavior } from './behavior.js';

// The simulated node and the growing usage behaviours: what the kubelet's eviction manager reads
// through `stats.provider`, on the virtual clock.

const Mi = 2 ** 20;
const Gi = 2 ** 30;

test('memoryGrowth and diskGrowth parse as quantities per second; a bad one names its key', (t) => {
  t.deepEqual(parseBehavior('memory=100Mi,memoryGrowth=10Mi,diskGrowth=1Gi'), {
    memoryBytes: 100 * Mi,
    memoryGrowthBytes: 10 * Mi,
    diskGrowthBytes: Gi,
  });
  t.throws(() => parseBehavior('memoryGrowth=fast'), {
    message: /"memoryGrowth" takes a quantity such as 100Mi or 1G, not "fast"/,
  });
});

test('a growing container: working set grows while it runs and is gone once it exits; its writable layer stays', async (t) => {
  const { clock, runtime } = setup({ node: { memory: '2Gi', disk: '10Gi' } });
  const sb = await runPod(runtime, 'leaky', {
    annotations: { 'runtime-fake.nodelet.dev/main': 'memory=100Mi,memoryGrowth=10Mi,diskGrowth=1Mi' },
  });
  const id = await createContainer(runtime, sb, 'main');
  await runtime.startContainer({ containerId: id });
  const stats = runtime.statsProvider();
  await clock.advance(1_000);
  const before = (await stats.snapshot()).pods[0]!.memory!.workingSetBytes!;
  t.true(before >= 100 * Mi && before <= 110 * Mi, String(before));
  await clock.advance(5_000);
  let snap = await stats.snapshot();
  t.is(snap.pods[0]!.memory!.workingSetBytes, before + 50 * Mi, '10Mi more every second');
  t.is(snap.node.memory!.availableBytes, 2 * Gi - before - 50 * Mi);
  const layer = snap.pods[0]!.containers[0]!.rootfs!.usedBytes!;
  t.true(layer >= 6 * Mi - 2 ** 12 && layer <= 6 * Mi, String(layer));
  await runtime.stopContainer({ containerId: id, timeout: 0n });
  await clock.advance(5_000);
  snap = await stats.snapshot();
  t.is(snap.node.memory!.workingSetBytes, 0, 'an exited container uses no memory');
  const images = Number((await runtime.imageFsInfo()).imageFilesystems[0]!.usedBytes!.value);
  t.is(snap.node.fs!.usedBytes, images + layer, 'its writable layer stays on the disk until removed');
  t.deepEqual(snap.node.runtime!.imageFs, snap.node.fs, 'one disk: nodefs and imagefs alike');
});

test("the node's own usage: set from the configuration or at run time, with capacity, inodes and pids", async (t) => {
  const { runtime } = setup({
    node: {
      memory: '4Gi',
      disk: '20Gi',
      inodes: 1000,
      pids: 500,
      usage: { memoryBytes: '1Gi', processes: 100 },
    },
  });
  const stats = runtime.statsProvider();
  let snap = await stats.snapshot();
  t.is(snap.node.memory!.availableBytes, 3 * Gi);
  t.like(snap.node.rlimit, { maxpid: 500, curproc: 100 });
  runtime.node.setUsage({ diskBytes: '15Gi', inodes: 700 });
  snap = await stats.snapshot();
  const images = Number((await runtime.imageFsInfo()).imageFilesystems[0]!.usedBytes!.value);
  t.like(snap.node.fs, { capacityBytes: 20 * Gi, availableBytes: 5 * Gi - images, inodes: 1000 });
  t.is(snap.node.fs!.inodesFree, 1000 - 700 - 2 * 100, 'two preloaded images, 100 inodes each');
  t.throws(() => runtime.node.setUsage({ diskBytes: 'lots' }), {
    message: /node\.usage\.diskBytes must be a quantity >= 0, not "lots"/,
  });
  t.throws(() => runtime.node.setUsage({ swap: 1 } as never), { message: /unknown node usage field "swap"/ });
});

import test from 'ava';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { nodeName, startCluster } from './test-harness.js';

// The eviction manager's pressure conditions in the registered Node's status, with upstream's reasons
// and messages, and the node's own events — a joined kubelet on the fake runtime and a fake API server,
// on the virtual clock.

test('MemoryPressure reaches the Node status and leaves it after the transition period; an image GC failure is a Node event', async (t) => {
  const clock = new VirtualClock();
  const runtime = new FakeRuntime({
    clock,
    logger: createLogger({ sink: new MemorySink().sink }),
    config: { pullLatencyMs: 0, node: { memory: '4Gi' } },
  });
  const h = await startCluster({
    clock,
    runtime,
    stats: true,
    kubelet: {
      eviction: { evictionHard: { 'memory.available': '1Gi' } },
      imageGC: { highThresholdPercent: 1, lowThresholdPercent: 0 },
    },
  });
  const condition = async (type: string) =>
    (await h.api.getNode(nodeName)).status?.conditions?.find((c) => c.type === type);
  await clock.advance(15_000);
  t.like(await condition('MemoryPressure'), { status: 'False', reason: 'KubeletHasSufficientMemory' });

  runtime.node.setUsage({ memoryBytes: '3500Mi' }); // the node's own daemons: 500Mi left
  await clock.advance(11_000);
  t.like(await condition('MemoryPressure'), {
    status: 'True',
    reason: 'KubeletHasInsufficientMemory',
    message: 'kubelet has insufficient memory available',
  });
  t.like(await condition('DiskPressure'), { status: 'False', reason: 'KubeletHasNoDiskPressure' });

  runtime.node.setUsage({ memoryBytes: 0 });
  await clock.advance(4 * 60_000);
  t.is((await condition('MemoryPressure'))?.status, 'True', 'kept within the transition period');
  await clock.advance(70_000);
  t.like(await condition('MemoryPressure'), { status: 'False', reason: 'KubeletHasSufficientMemory' });

  // Image GC wants the disk empty (low threshold 0%): it cannot free the node's own use nor the
  // pinned pause image, and says so on the Node.
  await clock.advance(5 * 60_000);
  const events = [...h.api.events.values()].filter((e) => e.involvedObject?.kind === 'Node');
  const gc = events.find((e) => e.reason === 'FreeDiskSpaceFailed');
  t.truthy(gc, JSON.stringify(events.map((e) => e.reason)));
  t.is(gc!.type, 'Warning');
  t.regex(
    gc!.message!,
    /^Failed to garbage collect required amount of images\. Attempted to free \d+ bytes, but only found \d+ bytes eligible to free\.$/,
  );
  t.truthy(
    events.find((e) => e.reason === 'NodeHasInsufficientMemory'),
    'the condition change was an event too',
  );
  await h.kubelet.stop();
});

import test from 'ava';
import type { Pod } from '@nodelet/api';
import type { PodStats, StatsProvider, StatsSnapshot } from '@nodelet/cri';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { EvictionManager } from './eviction-manager.js';
import { evictionConfig, type EvictionSettings } from './thresholds.js';
import { Gi, Mi, pod, stats } from './test-pods.js';

// Upstream's eviction_manager_test.go scenarios (TestMemoryPressure, TestDiskPressureNodeFs,
// TestMinReclaim, TestNodeReclaimFuncs, TestPIDPressure) on the virtual clock: the manager is stepped by
// its own 10 s loop while the test changes what the stats say.

class FakeStats implements StatsProvider {
  memoryAvailable = 2 * Gi;
  memoryWorkingSet = Gi;
  diskAvailable = 16 * Gi;
  diskCapacity = 100 * Gi;
  pids = { maxpid: 1000, curproc: 10 };
  pods: PodStats[] = [];
  async snapshot(): Promise<StatsSnapshot> {
    const time = '';
    const fs = {
      time,
      availableBytes: this.diskAvailable,
      capacityBytes: this.diskCapacity,
      inodesFree: 1e6,
      inodes: 2e6,
    };
    return {
      node: {
        nodeName: 'node1',
        startTime: time,
        memory: { time, availableBytes: this.memoryAvailable, workingSetBytes: this.memoryWorkingSet },
        fs,
        runtime: { imageFs: fs },
        rlimit: { time, ...this.pids },
      },
      pods: this.pods,
      containerIdentities: new Map(),
    };
  }
}

interface Evicted {
  name: string;
  grace: number;
  message: string;
}

function setup(
  settings: EvictionSettings,
  pods: [Pod, Parameters<typeof stats>[1]][],
  options: { podIsFinished?: (pod: Pod) => boolean; dedicatedImageFs?: boolean } = {},
) {
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const fake = new FakeStats();
  fake.pods = pods.map(([p, u]) => stats(p, u));
  let active = pods.map(([p]) => p);
  const evicted: Evicted[] = [];
  const conditions: string[][] = [];
  const reclaimed: string[] = [];
  const nodeEvents: string[] = [];
  const manager = new EvictionManager(
    {
      stats: fake,
      clock,
      logger: createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() }),
      activePods: () => active,
      evictPod: async (p, grace, message) => {
        evicted.push({ name: p.metadata!.name!, grace, message });
        active = active.filter((x) => x !== p); // stopped, Failed: no longer active
        return true;
      },
      conditionsChanged: (c) => conditions.push([...c]),
      ...(options.podIsFinished ? { podIsFinished: options.podIsFinished } : {}),
      nodeEvent: (reason, message) => nodeEvents.push(`${reason}: ${message}`),
      reclaim: {
        deleteAllUnusedContainers: async () => void reclaimed.push('containers'),
        deleteUnusedImages: async () => {
          reclaimed.push('images');
          fake.diskAvailable += freedByImages;
        },
      },
      ...(options.dedicatedImageFs !== undefined
        ? { hasDedicatedImageFs: async () => options.dedicatedImageFs! }
        : {}),
    },
    evictionConfig(settings),
  );
  let freedByImages = 0;
  manager.start();
  return {
    clock,
    fake,
    manager,
    evicted,
    conditions,
    reclaimed,
    logs,
    nodeEvents,
    setFreedByImages: (n: number) => (freedByImages = n),
    stop: () => manager.stop(),
  };
}

const memoryPods: [Pod, Parameters<typeof stats>[1]][] = [
  [
    pod('guaranteed', { requests: { memory: '1Gi', cpu: '1' }, limits: { memory: '1Gi', cpu: '1' } }),
    { memory: 500 * Mi },
  ],
  [pod('burstable', { requests: { memory: '100Mi' }, grace: 30 }), { memory: 400 * Mi }],
  [pod('best-effort', { grace: 5 }), { memory: 300 * Mi }],
];

test('memory: soft pressure waits its grace period, kills with min(pod grace, max); the condition stays for the transition period', async (t) => {
  const h = setup(
    {
      evictionHard: { 'memory.available': '1Gi' },
      evictionSoft: { 'memory.available': '2Gi' },
      evictionSoftGracePeriod: { 'memory.available': 120_000 },
      evictionMaxPodGracePeriod: 5,
      evictionPressureTransitionPeriodMs: 300_000,
    },
    memoryPods,
  );
  await h.clock.advance(10_000);
  t.deepEqual(h.manager.nodeConditions(), []);
  t.true(h.manager.admit(pod('new-best-effort')).admit);

  h.fake.memoryAvailable = 1500 * Mi; // soft threshold met
  await h.clock.advance(10_000);
  t.deepEqual(
    h.manager.nodeConditions(),
    ['MemoryPressure'],
    'the condition is raised within the grace period',
  );
  t.deepEqual(h.evicted, [], 'no eviction within the grace period');
  t.deepEqual(h.manager.admit(pod('new-best-effort')), {
    admit: false,
    reason: 'Evicted',
    message: 'The node had condition: [MemoryPressure]. ',
  });
  t.true(h.manager.admit(pod('new-burstable', { requests: { memory: '1Mi' } })).admit);

  await h.clock.advance(120_000);
  t.is(h.evicted.length, 1, 'one pod per synchronize');
  t.is(h.evicted[0]!.name, 'burstable', 'exceeds its request by the most');
  t.is(h.evicted[0]!.grace, 5, 'min(pod grace 30, evictionMaxPodGracePeriod 5)');
  t.is(
    h.evicted[0]!.message,
    'The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. Container main was using 400Mi, request is 100Mi, has larger consumption of memory. ',
  );

  h.fake.memoryAvailable = 3 * Gi; // relieved
  await h.clock.advance(10_000);
  const evictedBefore = h.evicted.length;
  t.deepEqual(h.manager.nodeConditions(), ['MemoryPressure'], 'kept through the transition period');
  await h.clock.advance(280_000);
  t.deepEqual(h.manager.nodeConditions(), ['MemoryPressure']);
  await h.clock.advance(20_000);
  t.deepEqual(h.manager.nodeConditions(), [], 'gone once the transition period passed');
  t.is(h.evicted.length, evictedBefore, 'nothing evicted while relieved');
  t.deepEqual(h.conditions, [['MemoryPressure'], []]);
  h.stop();
});

test('memory: a hard threshold evicts at the next synchronize with a 1 s grace period, the BestEffort pod before a Guaranteed one', async (t) => {
  const h = setup({ evictionHard: { 'memory.available': '1Gi' } }, [
    memoryPods[0]!,
    [pod('best-effort', { grace: 30 }), { memory: 10 * Mi }],
  ]);
  h.fake.memoryAvailable = 500 * Mi;
  await h.clock.advance(10_000);
  t.deepEqual(
    h.evicted.map((e) => [e.name, e.grace]),
    [['best-effort', 1]],
  );
  await h.clock.advance(10_000);
  t.deepEqual(
    h.evicted.map((e) => e.name),
    ['best-effort', 'guaranteed'],
    'still under pressure: the next one',
  );
  h.stop();
});

test('after an eviction the next synchronize waits until the pod is finished, at most 30 s: no second pod for the same pressure meanwhile', async (t) => {
  const finished = new Set<string>();
  const h = setup(
    { evictionHard: { 'memory.available': '1Gi' } },
    [memoryPods[0]!, [pod('best-effort', { grace: 30 }), { memory: 10 * Mi }]],
    { podIsFinished: (p) => finished.has(p.metadata!.name!) },
  );
  h.fake.memoryAvailable = 500 * Mi;
  await h.clock.advance(10_000);
  t.deepEqual(
    h.evicted.map((e) => e.name),
    ['best-effort'],
  );
  await h.clock.advance(20_000);
  t.deepEqual(
    h.evicted.map((e) => e.name),
    ['best-effort'],
    'its containers are still stopping: the stats may not show what it frees yet',
  );
  finished.add('best-effort');
  await h.clock.advance(1_000);
  t.is(h.logs.find('pods successfully cleaned up').length, 1);
  await h.clock.advance(10_000);
  t.deepEqual(
    h.evicted.map((e) => e.name),
    ['best-effort', 'guaranteed'],
    'finished, and still under pressure: the next one',
  );
  await h.clock.advance(30_000);
  t.is(h.logs.find('timed out waiting for pods to be cleaned up').length, 1, 'one that never finishes');
  h.stop();
});

test('minimum reclaim: a met threshold stays met until the minimum reclaim is free too', async (t) => {
  const h = setup(
    { evictionHard: { 'memory.available': '1Gi' }, evictionMinimumReclaim: { 'memory.available': '500Mi' } },
    memoryPods,
  );
  h.fake.memoryAvailable = 500 * Mi;
  await h.clock.advance(10_000);
  t.is(h.evicted.length, 1);
  h.fake.memoryAvailable = 1200 * Mi; // above the threshold, below threshold + minimum reclaim
  await h.clock.advance(10_000);
  t.is(h.evicted.length, 2, 'evicts again: 1.2Gi < 1Gi + 500Mi');
  h.fake.memoryAvailable = 2 * Gi;
  await h.clock.advance(10_000);
  t.is(h.evicted.length, 2, 'reclaimed enough');
  h.stop();
});

test('disk: node-level reclaim first (dead containers, unused images); a pod only when that is not enough', async (t) => {
  const h = setup({ evictionHard: { 'nodefs.available': '10Gi' } }, [
    [pod('small-writer'), { rootfs: 100 * Mi }],
    [pod('big-writer', { volumes: ['scratch'] }), { volumes: { scratch: 5 * Gi } }],
  ]);
  h.fake.diskAvailable = 8 * Gi;
  h.setFreedByImages(4 * Gi);
  await h.clock.advance(10_000);
  t.deepEqual(h.reclaimed, ['containers', 'images']);
  t.deepEqual(h.nodeEvents, ['EvictionThresholdMet: Attempting to reclaim ephemeral-storage']);
  t.deepEqual(h.evicted, [], 'images freed enough');
  t.deepEqual(h.manager.nodeConditions(), ['DiskPressure']);
  h.fake.diskAvailable = 5 * Gi;
  h.setFreedByImages(0);
  await h.clock.advance(10_000);
  t.deepEqual(
    h.evicted.map((e) => e.name),
    ['big-writer'],
  );
  t.regex(
    h.evicted[0]!.message,
    /^The node was low on resource: ephemeral-storage\. Threshold quantity: 10Gi, available: 5Gi\. /,
  );
  t.deepEqual(h.manager.admit(pod('burstable', { requests: { memory: '1Mi' } })), {
    admit: false,
    reason: 'Evicted',
    message: 'The node had condition: [DiskPressure]. ',
  });
  h.stop();
});

test('disk: with an image file system of its own, nodefs pressure reclaims no images and ranks by logs and volumes only', async (t) => {
  const h = setup(
    { evictionHard: { 'nodefs.available': '10Gi' } },
    [
      [pod('big-layer'), { rootfs: 4 * Gi }],
      [pod('volume-writer', { volumes: ['scratch'] }), { volumes: { scratch: Gi } }],
    ],
    { dedicatedImageFs: true },
  );
  h.fake.diskAvailable = 8 * Gi;
  h.setFreedByImages(4 * Gi);
  await h.clock.advance(10_000);
  t.deepEqual(h.reclaimed, [], 'images live elsewhere: removing them frees nothing here');
  t.deepEqual(
    h.evicted.map((e) => e.name),
    ['volume-writer'],
    'its writable layer is on the image file system',
  );
  h.stop();
});

test('disk: on one file system the writable layer counts for nodefs too', async (t) => {
  const h = setup({ evictionHard: { 'nodefs.available': '10Gi' } }, [
    [pod('big-layer'), { rootfs: 4 * Gi }],
    [pod('volume-writer', { volumes: ['scratch'] }), { volumes: { scratch: Gi } }],
  ]);
  h.fake.diskAvailable = 8 * Gi;
  await h.clock.advance(10_000);
  t.deepEqual(h.reclaimed, ['containers', 'images']);
  t.deepEqual(
    h.evicted.map((e) => e.name),
    ['big-layer'],
  );
  h.stop();
});

test('local storage limits: a pod over its ephemeral-storage limit goes without any pressure, with 1 s', async (t) => {
  const h = setup({ evictionHard: { 'nodefs.available': '1Gi' } }, [
    [pod('within', { limits: { 'ephemeral-storage': '1Gi' }, grace: 30 }), { rootfs: 100 * Mi }],
    [pod('over', { limits: { 'ephemeral-storage': '100Mi' }, grace: 30 }), { rootfs: 200 * Mi }],
  ]);
  await h.clock.advance(10_000);
  t.deepEqual(h.manager.nodeConditions(), [], 'no pressure');
  t.deepEqual(h.evicted, [
    {
      name: 'over',
      grace: 1,
      message: 'Pod ephemeral local storage usage exceeds the total limit of containers 100Mi. ',
    },
  ]);
  t.deepEqual(h.reclaimed, []);
  h.stop();
});

test('disk: a percentage threshold of the capacity', async (t) => {
  const h = setup({ evictionHard: { 'nodefs.available': '10%' } }, [[pod('writer'), { rootfs: Gi }]]);
  h.fake.diskAvailable = 11 * Gi;
  await h.clock.advance(10_000);
  t.deepEqual(h.manager.nodeConditions(), []);
  h.fake.diskAvailable = 9 * Gi;
  await h.clock.advance(10_000);
  t.deepEqual(
    h.evicted.map((e) => e.name),
    ['writer'],
  );
  // 10% is a float32 (0.100000001…), as upstream keeps it: 10737418400 bytes, printed as upstream does.
  t.regex(h.evicted[0]!.message, /Threshold quantity: 10737418400, available: 9Gi\./);
  h.stop();
});

test('PID pressure: PIDPressure, the lowest priority pod with the most processes goes', async (t) => {
  const h = setup({ evictionHard: { 'pid.available': '100' } }, [
    [pod('few'), { processes: 5 }],
    [pod('many'), { processes: 800 }],
  ]);
  h.fake.pids = { maxpid: 1000, curproc: 950 };
  await h.clock.advance(10_000);
  t.deepEqual(h.manager.nodeConditions(), ['PIDPressure']);
  t.deepEqual(
    h.evicted.map((e) => e.name),
    ['many'],
  );
  t.is(h.evicted[0]!.message, 'The node was low on resource: pids. Threshold quantity: 100, available: 50. ');
  h.stop();
});

test('a critical pod is never evicted; admission takes critical pods under any pressure', async (t) => {
  const critical = pod('critical', { priority: 2_000_000_000 });
  const h = setup({ evictionHard: { 'memory.available': '1Gi' } }, [[critical, { memory: 2 * Gi }]]);
  h.fake.memoryAvailable = 100 * Mi;
  await h.clock.advance(10_000);
  t.deepEqual(h.evicted, []);
  t.true(h.manager.admit(pod('another', { priority: 2_000_001_000 })).admit);
  t.true(
    h.manager.admit({
      ...pod('tolerates'),
      spec: {
        ...pod('tolerates').spec!,
        tolerations: [
          { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
        ],
      },
    }).admit,
    'a BestEffort pod that tolerates the memory-pressure taint',
  );
  h.stop();
});

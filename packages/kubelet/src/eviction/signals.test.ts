import test from 'ava';
import type { Summary } from '@nodelet/cri';
import {
  byEvictionPriority,
  nodeConditionsLastObservedAt,
  nodeConditionsObservedSince,
  nodeConditionsOf,
  observe,
  thresholdsFirstObservedAt,
  thresholdsMet,
  thresholdsMetGracePeriod,
} from './signals.js';
import type { Threshold } from './thresholds.js';

// Upstream's helpers_test.go cases for signal observations, thresholdsMet (with and without minimum
// reclaim), grace periods, node conditions and the transition period, as data.

const Mi = 2 ** 20;
const Gi = 2 ** 30;
const hard = (signal: string, quantity: number, minReclaim?: number): Threshold => ({
  signal,
  value: { quantity },
  gracePeriodMs: 0,
  ...(minReclaim !== undefined ? { minReclaim: { quantity: minReclaim } } : {}),
});

test('observe: memory.available is available of available + working set; fs, inodes and pids', (t) => {
  const summary: Summary = {
    node: {
      nodeName: 'n',
      startTime: '',
      memory: { time: '', availableBytes: 500 * Mi, workingSetBytes: 1500 * Mi },
      fs: { time: '', availableBytes: 2 * Gi, capacityBytes: 10 * Gi, inodesFree: 100, inodes: 1000 },
      runtime: {
        imageFs: { time: '', availableBytes: 3 * Gi, capacityBytes: 20 * Gi, inodesFree: 200, inodes: 2000 },
      },
      rlimit: { time: '', maxpid: 32768, curproc: 768 },
    },
    pods: [],
  };
  t.deepEqual(Object.fromEntries(observe(summary)), {
    'memory.available': { available: 500 * Mi, capacity: 2000 * Mi },
    'nodefs.available': { available: 2 * Gi, capacity: 10 * Gi },
    'nodefs.inodesFree': { available: 100, capacity: 1000 },
    'imagefs.available': { available: 3 * Gi, capacity: 20 * Gi },
    'imagefs.inodesFree': { available: 200, capacity: 2000 },
    'pid.available': { available: 32000, capacity: 32768 },
  });
});

test('observe: a signal without numbers is not observed', (t) => {
  t.deepEqual([...observe({ node: { nodeName: 'n', startTime: '' }, pods: [] }).keys()], []);
});

const memory = (available: number) => new Map([['memory.available', { available, capacity: 3 * Gi }]]);

const metCases: [
  name: string,
  threshold: Threshold,
  available: number,
  enforceMinReclaim: boolean,
  met: boolean,
][] = [
  ['threshold not met', hard('memory.available', 500 * Mi), 2 * Gi, false, false],
  ['threshold met', hard('memory.available', 500 * Mi), 200 * Mi, false, true],
  ['at the threshold is not met (less than)', hard('memory.available', 500 * Mi), 500 * Mi, false, false],
  [
    'threshold met, minimum reclaim not enforced',
    hard('memory.available', Gi, 500 * Mi),
    1200 * Mi,
    false,
    false,
  ],
  ['threshold met, minimum reclaim enforced', hard('memory.available', Gi, 500 * Mi), 1200 * Mi, true, true],
  ['minimum reclaim satisfied', hard('memory.available', Gi, 500 * Mi), 2 * Gi, true, false],
];
for (const [name, threshold, available, enforce, met] of metCases) {
  test(`thresholdsMet: ${name}`, (t) => {
    t.is(thresholdsMet([threshold], memory(available), enforce).length, met ? 1 : 0);
  });
}

test('thresholdsMet: a percentage of the observed capacity', (t) => {
  const tenPercent: Threshold = { signal: 'memory.available', value: { percentage: 0.1 }, gracePeriodMs: 0 };
  t.is(thresholdsMet([tenPercent], memory(300 * Mi), false).length, 1); // 10% of 3Gi is 307.2Mi
  t.is(thresholdsMet([tenPercent], memory(310 * Mi), false).length, 0);
});

test('thresholdsMetGracePeriod: hard at once, soft once met for its grace period', (t) => {
  const soft: Threshold = { ...hard('memory.available', Gi), gracePeriodMs: 60_000 };
  const h = hard('memory.available', 500 * Mi);
  const now = 1_000_000;
  t.deepEqual(thresholdsMetGracePeriod(new Map([[h, now]]), now), [h]);
  t.deepEqual(thresholdsMetGracePeriod(new Map([[soft, now - 30_000]]), now), []);
  t.deepEqual(thresholdsMetGracePeriod(new Map([[soft, now - 60_000]]), now), [soft]);
});

test('thresholdsFirstObservedAt keeps the first time a threshold was met', (t) => {
  const a = hard('memory.available', Gi);
  const b = hard('nodefs.available', Gi);
  const first = thresholdsFirstObservedAt([a], new Map(), 10);
  const second = thresholdsFirstObservedAt([a, b], first, 20);
  t.deepEqual(
    [...second],
    [
      [a, 10],
      [b, 20],
    ],
  );
  t.deepEqual([...thresholdsFirstObservedAt([b], second, 30)], [[b, 20]]);
});

test('nodeConditionsOf: each condition once, from the signals', (t) => {
  t.deepEqual(
    nodeConditionsOf([
      hard('memory.available', 1),
      hard('nodefs.available', 1),
      hard('imagefs.inodesFree', 1),
      hard('pid.available', 1),
    ]),
    ['MemoryPressure', 'DiskPressure', 'PIDPressure'],
  );
});

test('nodeConditionsObservedSince: a condition stays for the transition period after it was last seen', (t) => {
  const now = 10 * 60_000;
  const seen = nodeConditionsLastObservedAt(
    ['MemoryPressure'],
    new Map([['DiskPressure', now - 3 * 60_000]]),
    now - 30_000,
  );
  t.deepEqual(nodeConditionsObservedSince(seen, 60_000, now), ['MemoryPressure']);
  t.deepEqual(nodeConditionsObservedSince(seen, 5 * 60_000, now).sort(), ['DiskPressure', 'MemoryPressure']);
  t.deepEqual(nodeConditionsObservedSince(seen, 30_000, now), []);
});

test('byEvictionPriority: memory first', (t) => {
  const disk = hard('nodefs.available', 1);
  const pid = hard('pid.available', 1);
  const mem = hard('memory.available', 1);
  t.is(byEvictionPriority([disk, pid, mem])[0], mem);
});

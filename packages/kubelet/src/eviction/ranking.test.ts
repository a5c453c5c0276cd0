import test from 'ava';
import type { Pod } from '@nodelet/api';
import type { PodStats } from '@nodelet/cri';
import { rankDiskPressure, rankFuncFor, rankMemoryPressure, rankPIDPressure } from './ranking.js';
import { Gi, Mi, names, pod, stats } from './test-pods.js';

// Upstream's ranking tests (helpers_test.go: TestOrderedByExceedsRequestMemory, TestOrderedByPriority,
// TestOrderedbyMemory, TestRankMemoryPressure-style mixes, TestOrderedbyDisk, TestOrderedByPriorityProcess)
// as data: pods with requests and priorities, their usage, and the order they are evicted in.

type Case = [name: string, pods: [Pod, Parameters<typeof stats>[1] | undefined][], want: string[]];
const statsOf = (rows: Case[1]) => {
  const m = new Map<string, PodStats>();
  for (const [p, usage] of rows) if (usage) m.set(p.metadata!.uid!, stats(p, usage));
  return (p: Pod) => m.get(p.metadata!.uid!);
};

const memoryCases: Case[] = [
  [
    'exceeds its memory request first',
    [
      [pod('below-requests', { requests: { memory: '500Mi' } }), { memory: 200 * Mi }],
      [pod('above-requests', { requests: { memory: '100Mi' } }), { memory: 200 * Mi }],
    ],
    ['above-requests', 'below-requests'],
  ],
  [
    'lower priority first',
    [
      [pod('high', { priority: 1000 }), { memory: 10 * Mi }],
      [pod('low', { priority: 1 }), { memory: 10 * Mi }],
      [pod('none'), { memory: 10 * Mi }],
    ],
    ['none', 'low', 'high'],
  ],
  [
    'the most usage above request first',
    [
      [pod('best-effort-high'), { memory: 500 * Mi }],
      [pod('best-effort-low'), { memory: 300 * Mi }],
      [pod('burstable-high', { requests: { memory: '100Mi' } }), { memory: 800 * Mi }],
      [pod('burstable-low', { requests: { memory: '100Mi' } }), { memory: 300 * Mi }],
      [pod('guaranteed-high', { requests: { memory: '1Gi' }, limits: { memory: '1Gi' } }), { memory: Gi }],
    ],
    ['burstable-high', 'best-effort-high', 'best-effort-low', 'burstable-low', 'guaranteed-high'],
  ],
  [
    'exceeding requests beats priority, priority beats usage',
    [
      [pod('low-prio-within', { priority: 1, requests: { memory: '1Gi' } }), { memory: 10 * Mi }],
      [pod('high-prio-over', { priority: 100, requests: { memory: '10Mi' } }), { memory: 20 * Mi }],
      [pod('low-prio-over-little', { priority: 1, requests: { memory: '10Mi' } }), { memory: 11 * Mi }],
      [pod('high-prio-within', { priority: 100, requests: { memory: '1Gi' } }), { memory: 900 * Mi }],
    ],
    ['low-prio-over-little', 'high-prio-over', 'low-prio-within', 'high-prio-within'],
  ],
  [
    'a pod without stats first',
    [
      [pod('measured'), { memory: 800 * Mi }],
      [pod('unmeasured'), undefined],
    ],
    ['unmeasured', 'measured'],
  ],
];
for (const [name, rows, want] of memoryCases) {
  test(`rankMemoryPressure: ${name}`, (t) => {
    t.deepEqual(
      names(
        rankMemoryPressure(
          rows.map(([p]) => p),
          statsOf(rows),
        ),
      ),
      want,
    );
  });
}

const diskCases: Case[] = [
  [
    'exceeds its ephemeral-storage request first, then priority, then usage above request',
    [
      [pod('within', { requests: { 'ephemeral-storage': '1Gi' } }), { rootfs: 500 * Mi }],
      [pod('over-low', { requests: { 'ephemeral-storage': '10Mi' } }), { rootfs: 50 * Mi }],
      [pod('over-high'), { rootfs: 100 * Mi, logs: 100 * Mi }],
      [pod('over-prio', { priority: 10 }), { rootfs: 900 * Mi }],
    ],
    ['over-high', 'over-low', 'over-prio', 'within'],
  ],
  [
    'the emptyDir a pod writes counts',
    [
      [pod('writes-little', { volumes: ['scratch'] }), { volumes: { scratch: 10 * Mi } }],
      [pod('writes-most', { volumes: ['scratch'] }), { volumes: { scratch: 300 * Mi } }],
      [pod('writable-layer'), { rootfs: 200 * Mi }],
    ],
    ['writes-most', 'writable-layer', 'writes-little'],
  ],
];
for (const [name, rows, want] of diskCases) {
  test(`rankDiskPressure (one file system): ${name}`, (t) => {
    const rank = rankDiskPressure(['root', 'logs', 'localVolumes'], 'ephemeral-storage');
    t.deepEqual(
      names(
        rank(
          rows.map(([p]) => p),
          statsOf(rows),
        ),
      ),
      want,
    );
  });
}

test('rankFuncFor: with a dedicated image file system, nodefs leaves out the writable layers', (t) => {
  const rows: Case[1] = [
    [pod('layer'), { rootfs: 900 * Mi }],
    [pod('logs'), { logs: 100 * Mi }],
  ];
  const pods = rows.map(([p]) => p);
  t.deepEqual(names(rankFuncFor('nodefs.available', true)!(pods, statsOf(rows))), ['logs', 'layer']);
  t.deepEqual(names(rankFuncFor('imagefs.available', true)!(pods, statsOf(rows))), ['layer', 'logs']);
  t.deepEqual(names(rankFuncFor('nodefs.available', false)!(pods, statsOf(rows))), ['layer', 'logs']);
});

test('rankPIDPressure: lower priority first, then the most processes', (t) => {
  const rows: Case[1] = [
    [pod('few'), { processes: 3 }],
    [pod('many'), { processes: 300 }],
    [pod('many-important', { priority: 100 }), { processes: 3000 }],
  ];
  t.deepEqual(
    names(
      rankPIDPressure(
        rows.map(([p]) => p),
        statsOf(rows),
      ),
    ),
    ['many', 'few', 'many-important'],
  );
});

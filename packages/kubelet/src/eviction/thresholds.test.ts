import test from 'ava';
import { evictionConfig, type EvictionSettings, thresholdQuantity } from './thresholds.js';

// Upstream's TestParseThresholdConfig (pkg/kubelet/eviction/helpers_test.go) as data: each case is the
// configuration and either the thresholds (signal, value, grace, minimum reclaim) or the error.

const Mi = 2 ** 20;
const Gi = 2 ** 30;
type Row = [signal: string, value: string, graceMs?: number, minReclaim?: string];
const show = (settings: EvictionSettings): Row[] =>
  evictionConfig(settings).thresholds.map((t) => {
    const v = (x: { quantity?: number; percentage?: number }) =>
      x.quantity !== undefined ? String(x.quantity) : `${Math.round(x.percentage! * 1e4) / 100}%`;
    const row: Row = [t.signal, v(t.value)];
    if (t.gracePeriodMs || t.minReclaim) row.push(t.gracePeriodMs);
    if (t.minReclaim) row.push(v(t.minReclaim));
    return row;
  });

const valid: [name: string, settings: EvictionSettings, want: Row[]][] = [
  ['no values', { evictionHard: {} }, []],
  [
    'upstream defaults when evictionHard is not set',
    {},
    [
      ['memory.available', String(100 * Mi)],
      ['nodefs.available', '10%'],
      ['nodefs.inodesFree', '5%'],
      ['imagefs.available', '15%'],
      ['imagefs.inodesFree', '5%'],
    ],
  ],
  [
    'all memory eviction values',
    {
      evictionHard: { 'memory.available': '150Mi' },
      evictionSoft: { 'memory.available': '300Mi' },
      evictionSoftGracePeriod: { 'memory.available': 30_000 },
      evictionMinimumReclaim: { 'memory.available': '0' },
    },
    [
      ['memory.available', String(150 * Mi), 0, '0'],
      ['memory.available', String(300 * Mi), 30_000, '0'],
    ],
  ],
  [
    'all memory eviction values in percentages',
    {
      evictionHard: { 'memory.available': '10%' },
      evictionSoft: { 'memory.available': '30%' },
      evictionSoftGracePeriod: { 'memory.available': 30_000 },
      evictionMinimumReclaim: { 'memory.available': '5%' },
    },
    [
      ['memory.available', '10%', 0, '5%'],
      ['memory.available', '30%', 30_000, '5%'],
    ],
  ],
  [
    'disk eviction values',
    {
      evictionHard: { 'imagefs.available': '150Mi', 'nodefs.available': '100Mi' },
      evictionSoft: { 'imagefs.available': '300Mi', 'nodefs.available': '200Mi' },
      evictionSoftGracePeriod: { 'imagefs.available': 30_000, 'nodefs.available': 30_000 },
      evictionMinimumReclaim: { 'imagefs.available': '2Gi', 'nodefs.available': '1Gi' },
    },
    [
      ['imagefs.available', String(150 * Mi), 0, String(2 * Gi)],
      ['nodefs.available', String(100 * Mi), 0, String(Gi)],
      ['imagefs.available', String(300 * Mi), 30_000, String(2 * Gi)],
      ['nodefs.available', String(200 * Mi), 30_000, String(Gi)],
    ],
  ],
  [
    'inode eviction values',
    {
      evictionHard: { 'imagefs.inodesFree': '150Mi', 'nodefs.inodesFree': '100Mi' },
      evictionSoft: { 'imagefs.inodesFree': '300Mi', 'nodefs.inodesFree': '200Mi' },
      evictionSoftGracePeriod: { 'imagefs.inodesFree': 30_000, 'nodefs.inodesFree': 30_000 },
    },
    [
      ['imagefs.inodesFree', String(150 * Mi)],
      ['nodefs.inodesFree', String(100 * Mi)],
      ['imagefs.inodesFree', String(300 * Mi), 30_000],
      ['nodefs.inodesFree', String(200 * Mi), 30_000],
    ],
  ],
  ['pid.available', { evictionHard: { 'pid.available': '100' } }, [['pid.available', '100']]],
  [
    '0% and 100% set no threshold',
    { evictionHard: { 'memory.available': '0%', 'nodefs.available': '100%' } },
    [],
  ],
];

for (const [name, settings, want] of valid) {
  test(`evictionConfig: ${name}`, (t) => {
    t.deepEqual(show(settings), want);
  });
}

const invalid: [name: string, settings: EvictionSettings, error: RegExp][] = [
  [
    'invalid-signal',
    { evictionHard: { 'mem.available': '150Mi' } },
    /field "evictionHard": unknown eviction signal "mem.available"/,
  ],
  [
    'hard-signal-negative',
    { evictionHard: { 'memory.available': '-150Mi' } },
    /evictionHard.memory.available.*must be positive/,
  ],
  [
    'soft-signal-negative',
    { evictionSoft: { 'memory.available': '-150Mi' } },
    /evictionSoft.memory.available.*must be positive/,
  ],
  [
    'hard-signal-not-a-quantity',
    { evictionHard: { 'memory.available': 'lots' } },
    /"lots" is neither a quantity nor a percentage/,
  ],
  [
    'soft-no-grace-period',
    { evictionSoft: { 'memory.available': '150Mi' } },
    /grace period must be specified for the soft eviction threshold memory.available/,
  ],
  [
    'hard-signal-percentage-greater-than-100%',
    { evictionHard: { 'memory.available': '150%' } },
    /must be <= 100%/,
  ],
  [
    'soft-signal-percentage-negative',
    { evictionSoft: { 'memory.available': '-15%' }, evictionSoftGracePeriod: { 'memory.available': 1000 } },
    /must be >= 0%/,
  ],
  [
    'neg-percentage-min-reclaim',
    { evictionMinimumReclaim: { 'memory.available': '-15%' } },
    /evictionMinimumReclaim.memory.available.*must be positive/,
  ],
  [
    'neg-size-min-reclaim',
    { evictionMinimumReclaim: { 'memory.available': '-300Mi' } },
    /negative eviction minimum reclaim/,
  ],
  [
    'grace period of an unknown signal',
    { evictionSoftGracePeriod: { 'memory.free': 1000 } },
    /field "evictionSoftGracePeriod": unknown eviction signal "memory.free"/,
  ],
];

for (const [name, settings, error] of invalid) {
  test(`evictionConfig refuses ${name}, naming the field`, (t) => {
    t.throws(() => evictionConfig(settings), { message: error });
  });
}

test('evictionConfig: the transition period defaults to 5 minutes, the max pod grace period to 0', (t) => {
  const c = evictionConfig({});
  t.is(c.pressureTransitionPeriodMs, 300_000);
  t.is(c.maxPodGracePeriodSeconds, 0);
});

test('thresholdQuantity: a percentage of the capacity, truncated; a quantity as is', (t) => {
  t.is(thresholdQuantity({ percentage: Math.fround(0.1) }, 1000), 100);
  t.is(
    thresholdQuantity({ percentage: Math.fround(0.15) }, 10 * Gi),
    Math.trunc(10 * Gi * Math.fround(0.15)),
  );
  t.is(thresholdQuantity({ quantity: 500 * Mi }, 10 * Gi), 500 * Mi);
});

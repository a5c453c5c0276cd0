import test from 'ava';
import { milliCpu, quantityValue } from '@nodelet/api';
import {
  allocatableReservation,
  nodeAllocatable,
  parseEvictionThresholds,
  validateNodeAllocatable,
} from './node-allocatable.js';

// Cases of upstream's node_container_manager_linux_test.go (TestNodeAllocatableReservationForScheduling,
// TestNodeAllocatableInputValidation) as data: kube and system reservations, a memory.available (or
// nodefs.available) hard threshold as a quantity or 5 %, capacity → the reservation.
const list = (cpu: string, memory: string) => ({
  ...(cpu ? { cpu } : {}),
  ...(memory ? { memory } : {}),
});
const five = Math.fround(0.05);
const memoryCases: [
  kube: object,
  system: object,
  capacity: object,
  threshold: object | undefined,
  expected: object,
][] = [
  [list('100m', '100Mi'), list('50m', '50Mi'), list('10', '10Gi'), undefined, list('150m', '150Mi')],
  [
    list('100m', '100Mi'),
    list('50m', '50Mi'),
    list('10', '10Gi'),
    { quantity: 100 * 2 ** 20 },
    list('150m', '250Mi'),
  ],
  [
    list('100m', '100Mi'),
    list('50m', '50Mi'),
    list('10', '10Gi'),
    { percentage: five },
    list('150m', '694157320'),
  ],
  [{}, {}, list('10', '10Gi'), undefined, {}],
  [list('', '100Mi'), list('50m', '50Mi'), list('10', '10Gi'), undefined, list('50m', '150Mi')],
  [list('50m', '100Mi'), list('', '50Mi'), list('10', '10Gi'), undefined, list('50m', '150Mi')],
  [list('', '100Mi'), list('', '50Mi'), list('10', ''), undefined, list('', '')],
];

const asUnits = (m: Record<string, string>) =>
  Object.fromEntries(Object.entries(m).map(([k, v]) => [k, k === 'cpu' ? milliCpu(v) : quantityValue(v)]));

memoryCases.forEach(([kube, system, capacity, threshold, expected], i) => {
  test(`reservation, upstream case ${i + 1}`, (t) => {
    const evictionHard = threshold ? [{ signal: 'memory.available', ...threshold }] : [];
    const got = allocatableReservation(capacity as Record<string, string>, {
      kubeReserved: kube as Record<string, string>,
      systemReserved: system as Record<string, string>,
      evictionHard,
    });
    t.deepEqual(Object.fromEntries(got), asUnits(expected as Record<string, string>));
  });
});

test('ephemeral-storage: nodefs.available is reserved from it (upstream cases)', (t) => {
  const capacity = { 'ephemeral-storage': '10Gi' };
  const reserve = (kube: string, threshold?: object) =>
    allocatableReservation(capacity, {
      kubeReserved: { 'ephemeral-storage': kube },
      evictionHard: threshold ? [{ signal: 'nodefs.available', ...threshold }] : [],
    }).get('ephemeral-storage');
  t.is(reserve('100Mi'), 100 * 2 ** 20);
  t.is(reserve('100Mi', { quantity: 100 * 2 ** 20 }), 200 * 2 ** 20);
  t.is(reserve('150Mi', { percentage: five }), 694157320);
});

test('a reservation above capacity is refused, as upstream’s validation', (t) => {
  t.throws(
    () =>
      validateNodeAllocatable(list('10', '11Gi'), {
        kubeReserved: list('5', '10Gi'),
        systemReserved: list('5', '10Gi'),
        evictionHard: [{ signal: 'memory.available', quantity: 2 * 2 ** 30 }],
      }),
    {
      message:
        /^invalid Node Allocatable configuration. Resource "memory" has a reservation of 23068672Ki but capacity of 11Gi. Expected capacity >= reservation.$/,
    },
  );
  t.notThrows(() => validateNodeAllocatable(list('10', '10Gi'), { kubeReserved: list('100m', '100Mi') }));
});

test('allocatable: capacity less the reservation, in upstream’s units', (t) => {
  t.deepEqual(
    nodeAllocatable(
      { cpu: '2', memory: '16384Mi', pods: '110', 'ephemeral-storage': '10Gi' },
      {
        systemReserved: { cpu: '100m', memory: '256Mi' },
        kubeReserved: { cpu: '150m' },
        evictionHard: parseEvictionThresholds(
          { 'memory.available': '100Mi', 'nodefs.available': '10%' },
          'evictionHard',
        ),
      },
    ),
    // 10 % as upstream's float32: 10Gi × 0.100000001… = 1073741840 bytes held back.
    { cpu: '1750m', memory: '16412672Ki', pods: '110', 'ephemeral-storage': '9663676400' },
  );
});

test('evictionHard: percentages, quantities, and a clear error for a bad signal or value', (t) => {
  t.deepEqual(
    parseEvictionThresholds({ 'memory.available': '1Gi', 'nodefs.available': '10%' }, 'evictionHard'),
    [
      { signal: 'memory.available', quantity: 2 ** 30 },
      { signal: 'nodefs.available', percentage: Math.fround(0.1) },
    ],
  );
  t.throws(() => parseEvictionThresholds({ 'memory.free': '1Gi' }, 'evictionHard'), {
    message: /field "evictionHard": unknown eviction signal "memory.free"/,
  });
  t.throws(() => parseEvictionThresholds({ 'memory.available': 'lots' }, 'evictionHard'), {
    message: 'field "evictionHard.memory.available": "lots" is neither a quantity nor a percentage',
  });
});

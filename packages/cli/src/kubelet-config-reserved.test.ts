import test from 'ava';
import { MemorySink } from '@nodelet/kernel';
import { kubeletConfigSetup } from './test-kubelet-config.js';

// KubeletConfiguration systemReserved, kubeReserved, evictionHard, seccompDefault and
// allowedUnsafeSysctls reach the kubelet; bad values are refused naming the file and field.

const setupOf = kubeletConfigSetup;

test('reservations and thresholds are used, not reported as unsupported', (t) => {
  const sink = new MemorySink();
  const { setup } = setupOf(
    t,
    [
      'systemReserved: {cpu: 500m, memory: 1Gi}',
      'kubeReserved: {memory: 512Mi, ephemeral-storage: 1Gi}',
      'evictionHard: {memory.available: 200Mi, nodefs.available: "5%"}',
      'seccompDefault: true',
      'allowedUnsafeSysctls: ["net.core.*"]',
      '',
    ].join('\n'),
    sink,
  );
  t.like(setup().kubelet, {
    reservation: {
      systemReserved: { cpu: '500m', memory: '1Gi' },
      kubeReserved: { memory: '512Mi', 'ephemeral-storage': '1Gi' },
      evictionHard: [
        { signal: 'memory.available', quantity: 200 * 2 ** 20 },
        { signal: 'nodefs.available', percentage: Math.fround(0.05) },
      ],
    },
    seccompDefault: true,
    allowedUnsafeSysctls: ['net.core.*'],
  });
  t.deepEqual(sink.find('not supported by nodelet yet'), []);
});

test('without them: no reservation, upstream’s default thresholds apply in the kubelet', (t) => {
  const { setup } = setupOf(t, '');
  t.is(setup().kubelet.reservation, undefined);
});

test('bad values are refused naming the file and the field', (t) => {
  const cases: [string, RegExp][] = [
    ['systemReserved: {gpu: "1"}', /kubelet\.yaml: field "systemReserved": "gpu" cannot be reserved/],
    [
      'kubeReserved: {memory: lots}',
      /kubelet\.yaml: field "kubeReserved.memory": "lots" is not a non-negative quantity/,
    ],
    [
      'evictionHard: {memory.free: 1Gi}',
      /kubelet\.yaml: field "evictionHard": unknown eviction signal "memory.free"/,
    ],
    [
      'evictionHard: {nodefs.available: "150%"}',
      /kubelet\.yaml: field "evictionHard.nodefs.available": 150% is more than 100%/,
    ],
    ['systemReserved: [cpu]', /kubelet\.yaml: field "systemReserved" must be a mapping of names to strings/],
  ];
  for (const [fields, message] of cases) {
    const { setup } = setupOf(t, `${fields}\n`);
    t.throws(setup, { message }, fields);
  }
});

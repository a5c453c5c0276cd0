import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { createLogger, MemorySink } from '@nodelet/kernel';
import { resolveKubeletSetup } from './kubelet-setup.js';
import { kubeletConfigSetup } from './test-kubelet-config.js';

// KubeletConfiguration eviction and image garbage collection fields reach the kubelet; bad values are
// refused naming the file and the field.

test('eviction thresholds, grace periods and image GC settings are used, not reported as unsupported', (t) => {
  const sink = new MemorySink();
  const { setup } = kubeletConfigSetup(
    t,
    [
      'evictionHard: {memory.available: 500Mi}',
      'evictionSoft: {memory.available: 1Gi, nodefs.available: "15%"}',
      'evictionSoftGracePeriod: {memory.available: 1m30s, nodefs.available: 2m}',
      'evictionMinimumReclaim: {memory.available: 100Mi}',
      'evictionMaxPodGracePeriod: 20',
      'evictionPressureTransitionPeriod: 30s',
      'imageGCHighThresholdPercent: 90',
      'imageGCLowThresholdPercent: 70',
      'imageMinimumGCAge: 5m',
      'imageMaximumGCAge: 24h',
      '',
    ].join('\n'),
    sink,
  );
  t.like(setup().kubelet, {
    eviction: {
      evictionHard: { 'memory.available': '500Mi' },
      evictionSoft: { 'memory.available': '1Gi', 'nodefs.available': '15%' },
      evictionSoftGracePeriod: { 'memory.available': 90_000, 'nodefs.available': 120_000 },
      evictionMinimumReclaim: { 'memory.available': '100Mi' },
      evictionMaxPodGracePeriod: 20,
      evictionPressureTransitionPeriodMs: 30_000,
    },
    imageGC: { highThresholdPercent: 90, lowThresholdPercent: 70, minAgeMs: 300_000, maxAgeMs: 86_400_000 },
  });
  t.deepEqual(sink.find('not supported by nodelet yet'), []);
});

test('bad eviction and image GC values are refused naming the file and the field', (t) => {
  const cases: [string, RegExp][] = [
    [
      'evictionSoft: {memory.available: 1Gi}',
      /kubelet\.yaml: field "evictionSoftGracePeriod": grace period must be specified for the soft eviction threshold memory\.available/,
    ],
    [
      'evictionSoft: {memory.free: 1Gi}\nevictionSoftGracePeriod: {memory.free: 1m}',
      /kubelet\.yaml: field "evictionSoft": unknown eviction signal "memory\.free"/,
    ],
    [
      'evictionSoftGracePeriod: {memory.available: soon}',
      /field "evictionSoftGracePeriod\.memory\.available": "soon" is not a duration/,
    ],
    [
      'evictionMinimumReclaim: {memory.available: "-1Gi"}',
      /field "evictionMinimumReclaim\.memory\.available": negative/,
    ],
    ['evictionMaxPodGracePeriod: -1', /field "evictionMaxPodGracePeriod" must be an integer/],
    ['evictionPressureTransitionPeriod: 5', /field "evictionPressureTransitionPeriod"/],
    [
      'imageGCHighThresholdPercent: 101',
      /field "imageGCHighThresholdPercent" must be an integer from 0 to 100/,
    ],
    [
      'imageGCHighThresholdPercent: 50\nimageGCLowThresholdPercent: 60',
      /kubelet\.yaml: field "imageGCLowThresholdPercent" \(60\) must not be above "imageGCHighThresholdPercent" \(50\)/,
    ],
    [
      'imageMaximumGCAge: 1m',
      /kubelet\.yaml: field "imageMaximumGCAge" must be 0 or above "imageMinimumGCAge"/,
    ],
  ];
  for (const [fields, message] of cases) {
    const { setup } = kubeletConfigSetup(t, `${fields}\n`);
    t.throws(setup, { message }, fields);
  }
});

test('kubelet.evictionMonitoringPeriod of a NodeletConfiguration sets how often thresholds are checked', (t) => {
  const { dir, setup } = kubeletConfigSetup(t, 'evictionHard: {memory.available: 500Mi}\n');
  t.is(setup().kubelet.evictionMonitoringPeriodMs, undefined, "unset: the kubelet's 10 s");
  const nodelet = join(dir, 'nodelet.yaml');
  const env = { cwd: dir, hostname: 'node', isRoot: false, homeDir: '/home/ada', ipv4: [] };
  const resolveWith = (period: string) => {
    writeFileSync(
      nodelet,
      `apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nkubelet:\n  kubeletConfig: ./kubelet.yaml\n  evictionMonitoringPeriod: ${period}\n`,
    );
    return resolveKubeletSetup(
      { config: nodelet },
      { ...env, logger: createLogger({ sink: new MemorySink().sink }) },
    );
  };
  t.like(resolveWith('500ms').kubelet, {
    evictionMonitoringPeriodMs: 500,
    eviction: { evictionHard: { 'memory.available': '500Mi' } },
  });
  for (const bad of ['soon', '0s', '"-1s"']) {
    t.throws(() => resolveWith(bad), {
      message: new RegExp(
        `^${nodelet}: field "kubelet\\.evictionMonitoringPeriod" must be a positive duration such as 10s or 500ms, got "`,
      ),
    });
  }
});

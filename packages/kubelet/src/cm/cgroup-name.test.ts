import test from 'ava';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeRuntimeKubelet } from '../test-harness.js';
import {
  cgroupParentName,
  expandSlice,
  podCgroupName,
  rootName,
  toCgroupfs,
  toSystemd,
} from './cgroup-name.js';

// Cgroup names in either driver's form, with upstream's cases as data (cgroup_manager_linux_test.go,
// libcontainer's ExpandSlice), and the systemd driver refused where systemd is not running.

const systemdCases: [string[], string][] = [
  [[], '/'],
  [['system'], '/system.slice'],
  [['system', 'Burstable'], '/system.slice/system-Burstable.slice'],
  [['Burstable', 'pod-123'], '/Burstable.slice/Burstable-pod_123.slice'],
  [['test', 'a', 'b'], '/test.slice/test-a.slice/test-a-b.slice'],
  [['test', 'a', 'b', 'Burstable'], '/test.slice/test-a.slice/test-a-b.slice/test-a-b-Burstable.slice'],
  [['Burstable'], '/Burstable.slice'],
  [
    ['BestEffort', 'pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d'],
    '/BestEffort.slice/BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice',
  ],
  [['kubepods'], '/kubepods.slice'],
  // Empty components are dropped (TestCgroupNameWithEmptyPartToSystemd).
  [['Burstable', ''], '/Burstable.slice'],
  [['', 'Burstable', 'pod-123'], '/Burstable.slice/Burstable-pod_123.slice'],
  [
    ['BestEffort', '', 'pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d', ''],
    '/BestEffort.slice/BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice',
  ],
  [['kubepods', ''], '/kubepods.slice'],
];
for (const [name, want] of systemdCases) {
  test(`systemd name of [${name.join(', ')}] is ${want}`, (t) => {
    t.is(toSystemd(name), want);
  });
}

test('cgroupfs names: / for the root, components joined', (t) => {
  t.is(toCgroupfs([]), '/');
  t.is(toCgroupfs(['Burstable']), '/Burstable');
  t.deepEqual(rootName('/a/'), ['a']);
});

test('a pod’s cgroup parent per driver, with a cgroup root: the root is the first slice level', (t) => {
  const pod = {
    metadata: { name: 'p', uid: '6c1a4e95-6bb6-11e6-bc26-28d2444e470d' },
    spec: { containers: [{ name: 'c', resources: { requests: { cpu: '100m' } } }] },
  };
  const name = podCgroupName(rootName('/nodelet'), pod);
  t.is(
    cgroupParentName('cgroupfs', name),
    '/nodelet/kubepods/burstable/pod6c1a4e95-6bb6-11e6-bc26-28d2444e470d',
  );
  t.is(
    cgroupParentName('systemd', name),
    '/nodelet.slice/nodelet-kubepods.slice/nodelet-kubepods-burstable.slice/nodelet-kubepods-burstable-pod6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice',
  );
});

const slices: [string, string][] = [
  ['-.slice', '/'],
  ['system.slice', '/system.slice'],
  ['kubepods.slice', '/kubepods.slice'],
  ['kubepods-besteffort.slice', '/kubepods.slice/kubepods-besteffort.slice'],
  [
    'kubepods-besteffort-podabc.slice',
    '/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podabc.slice',
  ],
  ['system-child-grandchild.slice', '/system.slice/system-child.slice/system-child-grandchild.slice'],
];
test('ExpandSlice: a slice under its parents', (t) => {
  for (const [slice, path] of slices) t.is(expandSlice(slice), path, slice);
});

test('ExpandSlice: not a slice — wrong suffix, a path separator, an empty level', (t) => {
  for (const bad of [
    'system.scope',
    'systemd.slice/child.slice',
    'systemd--child.slice',
    '-a.slice',
    'a-.slice',
    '.slice',
    'slice',
  ]) {
    t.throws(() => expandSlice(bad), { message: `invalid slice name: ${bad}` }, bad);
  }
});

test('cgroupDriver systemd where systemd is not running: the kubelet does not start, and says what to set', async (t) => {
  if (existsSync('/run/systemd/system')) return t.pass('systemd runs here');
  const mountPoint = join(tmpdir(), `nodelet-no-systemd-${process.pid}`);
  const kubelet = fakeRuntimeKubelet(t, {
    cgroups: { driver: 'systemd', root: '/', enforceNodeAllocatable: [], mountPoint },
  });
  await t.throwsAsync(kubelet.start(), {
    message:
      'cgroupDriver is "systemd" but systemd is not the init system here (no /run/systemd/system): set cgroupDriver: cgroupfs, and the container runtime to cgroupfs too',
  });
  t.false(existsSync(mountPoint), 'no cgroup made');
});

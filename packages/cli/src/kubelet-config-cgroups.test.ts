import test from 'ava';
import { MemorySink } from '@nodelet/kernel';
import { kubeletConfigSetup } from './test-kubelet-config.js';

// KubeletConfiguration cgroupsPerQOS, cgroupDriver, cgroupRoot, enforceNodeAllocatable, podPidsLimit,
// cpuCFSQuota and qosReserved reach the kubelet of a real runtime; simulated nodes get no cgroups; bad
// values are refused naming the file and the field.

const containerd = { runtime: 'containerd' };

test('on a real runtime the pod cgroups are on by default, as upstream: cgroupfs, root /, enforcing pods', (t) => {
  const { setup } = kubeletConfigSetup(t, '', new MemorySink(), containerd);
  t.deepEqual(setup().kubelet.cgroups, { driver: 'cgroupfs', root: '/', enforceNodeAllocatable: ['pods'] });
});

test('the cgroup fields are used, not reported as unsupported; the fake runtime has no cgroups', (t) => {
  const sink = new MemorySink();
  const fields = [
    'cgroupDriver: cgroupfs',
    'cgroupRoot: /nodelet',
    'enforceNodeAllocatable: [none]',
    'podPidsLimit: 1024',
    'cpuCFSQuota: false',
    'qosReserved: {memory: 50%}',
    '',
  ].join('\n');
  t.deepEqual(kubeletConfigSetup(t, fields, sink, containerd).setup().kubelet.cgroups, {
    driver: 'cgroupfs',
    root: '/nodelet',
    enforceNodeAllocatable: [],
    podPidsLimit: 1024,
    cpuCFSQuota: false,
    qosReserved: { memory: 50 },
  });
  t.deepEqual(sink.find('not supported by nodelet yet'), []);
  t.is(kubeletConfigSetup(t, fields).setup().kubelet.cgroups, undefined, 'simulated pods have no cgroups');
  t.is(kubeletConfigSetup(t, 'cgroupsPerQOS: false\n', sink, containerd).setup().kubelet.cgroups, undefined);
  t.deepEqual(sink.find('qosReserved limits the QoS cgroups'), [], 'said only when it cannot apply');
  kubeletConfigSetup(t, 'cgroupsPerQOS: false\nqosReserved: {memory: 50%}\n', sink, containerd).setup();
  t.is(sink.find('qosReserved limits the QoS cgroups: it has no effect without cgroupsPerQOS').length, 1);
});

test('bad cgroup settings are refused naming the file and the field', (t) => {
  const cases: [string, RegExp][] = [
    ['cgroupDriver: systemd-ish', /kubelet\.yaml: field "cgroupDriver" must be cgroupfs or systemd/],
    ['cgroupRoot: nodelet', /kubelet\.yaml: field "cgroupRoot" must be an absolute cgroup path/],
    ['enforceNodeAllocatable: [pods, none]', /field "enforceNodeAllocatable": "none" cannot be combined/],
    ['enforceNodeAllocatable: [system-reserved]', /"system-reserved" needs systemReservedCgroup/],
    ['enforceNodeAllocatable: [memory]', /unknown option "memory"/],
    ['podPidsLimit: -5', /field "podPidsLimit" must be an integer from -1/],
    ['qosReserved: {memory: 150%}', /field "qosReserved.memory": percentage must be between 0 and 100/],
    ['qosReserved: {cpu: 50%}', /field "qosReserved": cannot reserve "cpu" resource/],
  ];
  for (const [fields, message] of cases) {
    const { setup } = kubeletConfigSetup(t, `${fields}\n`, new MemorySink(), containerd);
    t.throws(setup, { message }, fields);
  }
});

test('oomScoreAdj: upstream’s -999 on a real runtime; a simulated node sets it only when given; out of range refused', (t) => {
  t.is(kubeletConfigSetup(t, '', new MemorySink(), containerd).setup().kubelet.oomScoreAdj, -999);
  t.is(kubeletConfigSetup(t, '').setup().kubelet.oomScoreAdj, undefined);
  t.is(kubeletConfigSetup(t, 'oomScoreAdj: -500\n').setup().kubelet.oomScoreAdj, -500);
  const sink = new MemorySink();
  kubeletConfigSetup(t, 'oomScoreAdj: 0\n', sink, containerd).setup();
  t.deepEqual(sink.find('not supported by nodelet yet'), []);
  const { setup } = kubeletConfigSetup(t, 'oomScoreAdj: 1001\n', new MemorySink(), containerd);
  t.throws(setup, { message: /kubelet\.yaml: field "oomScoreAdj" must be an integer from -1000 to 1000/ });
});

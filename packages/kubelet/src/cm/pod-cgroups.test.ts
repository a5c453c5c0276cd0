import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import type { Container, Pod } from '@nodelet/api';
import { createLogger, MemorySink } from '@nodelet/kernel';
import { CgroupFs } from './cgroup-fs.js';
import { cgroupParentName, podCgroupName, rootName } from './cgroup-name.js';
import { ContainerManager } from './container-manager.js';
import { resourceConfigForPod, sharesToWeight } from './pod-resource-config.js';

// The pod cgroup hierarchy: names per driver, each QoS class's limits (upstream's ResourceConfigForPod
// cases as data), and what lands in a cgroup file system of either layout (a directory stands in for it).

type Resources = Container['resources'];
const pod = (uid: string, containers: Resources[], extra: Partial<NonNullable<Pod['spec']>> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: uid, namespace: 'default', uid },
  spec: {
    containers: containers.map((resources, i) => ({ name: `c${i}`, image: 'busybox', resources })),
    ...extra,
  },
});

const guaranteed = pod('g', [
  { requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '500m', memory: '128Mi' } },
]);
const burstable = pod('b', [{ requests: { cpu: '100m', memory: '64Mi' } }]);
const bestEffort = pod('e', [{}]);

test('pod cgroup names: Guaranteed under kubepods, the others under their QoS cgroup; cgroupfs and systemd forms', (t) => {
  const root = rootName('/');
  t.is(cgroupParentName('cgroupfs', podCgroupName(root, guaranteed)), '/kubepods/podg');
  t.is(cgroupParentName('cgroupfs', podCgroupName(root, burstable)), '/kubepods/burstable/podb');
  t.is(
    cgroupParentName('cgroupfs', podCgroupName(rootName('/nodelet/'), bestEffort)),
    '/nodelet/kubepods/besteffort/pode',
  );
  const uid = pod('6b8f-42aa', [{ requests: { cpu: '1' } }]);
  t.is(
    cgroupParentName('systemd', podCgroupName(root, uid)),
    '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6b8f_42aa.slice',
  );
});

const cases: {
  name: string;
  pod: Pod;
  options?: Parameters<typeof resourceConfigForPod>[1];
  want: object;
}[] = [
  {
    name: 'Guaranteed: shares, quota, period and memory from its limits',
    pod: guaranteed,
    want: { cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000, memory: 128 * 2 ** 20 },
  },
  { name: 'Burstable without limits: shares only', pod: burstable, want: { cpuShares: 102 } },
  {
    name: 'Burstable with every container limited: quota and memory too',
    pod: pod('bl', [
      { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '100Mi' } },
      { requests: { cpu: '100m' }, limits: { cpu: '300m', memory: '28Mi' } },
    ]),
    want: { cpuShares: 204, cpuQuota: 50_000, cpuPeriod: 100_000, memory: 128 * 2 ** 20 },
  },
  {
    name: 'Burstable with one container unlimited: no quota, no memory limit',
    pod: pod('bu', [
      { requests: { cpu: '100m' }, limits: { cpu: '200m', memory: '100Mi' } },
      { requests: { cpu: '50m' } },
    ]),
    want: { cpuShares: 153 },
  },
  { name: 'BestEffort: the minimum shares', pod: bestEffort, want: { cpuShares: 2 } },
  {
    name: 'an init container larger than the app containers sets the requests; the overhead adds to them',
    pod: pod('init', [{ requests: { cpu: '100m' } }], {
      initContainers: [{ name: 'i', image: 'busybox', resources: { requests: { cpu: '1' } } }],
      overhead: { cpu: '250m' },
    }),
    want: { cpuShares: 1280 },
  },
  {
    name: 'cpuCFSQuota false: no quota (-1); podPidsLimit: pids.max',
    pod: guaranteed,
    options: { enforceCpuLimits: false, podPidsLimit: 1024 },
    want: { cpuShares: 512, cpuQuota: -1, cpuPeriod: 100_000, memory: 128 * 2 ** 20, pidsLimit: 1024 },
  },
];
for (const c of cases) {
  test(`pod cgroup limits: ${c.name}`, (t) => {
    t.deepEqual(resourceConfigForPod(c.pod, c.options), c.want);
  });
}

test('cpu.weight from shares as runc converts them: 2 → 1, 1024 → 39, 262144 → 10000', (t) => {
  t.deepEqual([2, 512, 1024, 262_144].map(sharesToWeight), [1, 20, 39, 10_000]);
});

function fakeMount(t: { teardown(fn: () => void): void }, layout: 'v1' | 'v2'): string {
  const dir = mkdtempSync(join(tmpdir(), `nodelet-cgroup-${layout}-`));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  if (layout === 'v2') writeFileSync(join(dir, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
  else for (const c of ['cpu', 'cpuacct', 'memory', 'pids', 'devices', 'unified']) mkdirSync(join(dir, c));
  return dir;
}
const read = (...parts: string[]) => readFileSync(join(...parts), 'utf8');

/** Each file under the mount holds the value written. */
function expectFiles(t: ExecutionContext, mount: string, files: Record<string, string>): void {
  for (const [file, value] of Object.entries(files)) t.is(read(mount, file), value, file);
}

test('cgroup v1: a pod cgroup gets its limits in the cpu, memory and pids hierarchies; removal takes what the runtime added', async (t) => {
  const mount = fakeMount(t, 'v1');
  const fs = new CgroupFs(mount);
  t.is(fs.layout, 'v1');
  const limits = { cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000, memory: 2 ** 27, pidsLimit: 100 };
  await fs.create('/kubepods/podg', limits);
  expectFiles(t, mount, {
    'cpu/kubepods/podg/cpu.shares': '512',
    'cpu/kubepods/podg/cpu.cfs_quota_us': '50000',
    'cpu/kubepods/podg/cpu.cfs_period_us': '100000',
    'memory/kubepods/podg/memory.limit_in_bytes': '134217728',
    'pids/kubepods/podg/pids.max': '100',
  });
  t.true(fs.exists('/kubepods/podg'));
  // What the runtime made for a container, in hierarchies the kubelet does not set limits in.
  for (const h of ['devices', 'unified'])
    mkdirSync(join(mount, h, 'kubepods/podg/0123abcd'), { recursive: true });
  await fs.remove('/kubepods/podg');
  for (const h of ['cpu', 'memory', 'pids', 'devices', 'unified'])
    t.false(existsSync(join(mount, h, 'kubepods/podg')), h);
  t.true(existsSync(join(mount, 'cpu/kubepods')), 'the parent stays');
});

test('cgroup v2: the controllers are enabled on the way down; cpu.weight, cpu.max, memory.max, pids.max', async (t) => {
  const mount = fakeMount(t, 'v2');
  const fs = new CgroupFs(mount);
  t.is(fs.layout, 'v2');
  await fs.create('/kubepods', {});
  writeFileSync(join(mount, 'kubepods/cgroup.controllers'), 'cpu memory pids\n');
  const limits = { cpuShares: 1024, cpuQuota: 20_000, cpuPeriod: 100_000, memory: 2 ** 20, pidsLimit: 50 };
  await fs.create('/kubepods/burstable/podb', limits);
  expectFiles(t, mount, {
    'cgroup.subtree_control': '+cpu +memory +pids',
    'kubepods/cgroup.subtree_control': '+cpu +memory +pids',
    'kubepods/burstable/podb/cpu.weight': '39',
    'kubepods/burstable/podb/cpu.max': '20000 100000',
    'kubepods/burstable/podb/memory.max': '1048576',
    'kubepods/burstable/podb/pids.max': '50',
  });
  await fs.update('/kubepods/burstable/podb', { cpuQuota: -1, cpuPeriod: 100_000 });
  t.is(read(mount, 'kubepods/burstable/podb/cpu.max'), 'max 100000');
  await fs.remove('/kubepods/burstable/podb');
  t.false(existsSync(join(mount, 'kubepods/burstable/podb')));
});

test('container manager: kubepods limited to capacity less the reservations (not the eviction threshold); the Burstable shares follow its pods', async (t) => {
  const mount = fakeMount(t, 'v1');
  const cm = new ContainerManager(
    {
      driver: 'cgroupfs',
      root: '/',
      enforceNodeAllocatable: ['pods'],
      podPidsLimit: 4096,
      mountPoint: mount,
    },
    {
      logger: createLogger({ sink: new MemorySink().sink }),
      capacity: { cpu: '4', memory: '8Gi', pods: '110' },
      reservation: { systemReserved: { cpu: '500m', memory: '1Gi' }, kubeReserved: { memory: '512Mi' } },
    },
  );
  await cm.start();
  t.is(read(mount, 'memory/kubepods/memory.limit_in_bytes'), String((8 * 1024 - 1024 - 512) * 2 ** 20));
  t.is(read(mount, 'cpu/kubepods/cpu.shares'), String(Math.floor((3500 * 1024) / 1000)));
  t.is(read(mount, 'cpu/kubepods/besteffort/cpu.shares'), '2');
  t.is(read(mount, 'cpu/kubepods/burstable/cpu.shares'), '2');

  await cm.ensure(burstable);
  await cm.ensure(pod('b2', [{ requests: { cpu: '400m' } }]));
  t.is(read(mount, 'cpu/kubepods/burstable/cpu.shares'), '512', '100m + 400m');
  t.is(read(mount, 'pids/kubepods/burstable/podb/pids.max'), '4096');
  t.is(cm.cgroupParent(burstable), '/kubepods/burstable/podb');
  await cm.remove(burstable);
  t.false(existsSync(join(mount, 'cpu/kubepods/burstable/podb')));
  t.is(read(mount, 'cpu/kubepods/burstable/cpu.shares'), '409', '400m left');
});

test('container manager: without enforceNodeAllocatable pods, kubepods has no memory limit; systemd without systemd is refused', async (t) => {
  const mount = fakeMount(t, 'v1');
  const logger = createLogger({ sink: new MemorySink().sink });
  const capacity = { cpu: '2', memory: '1Gi' };
  await new ContainerManager(
    { driver: 'cgroupfs', root: '/', enforceNodeAllocatable: [], mountPoint: mount },
    { logger, capacity },
  ).start();
  t.false(existsSync(join(mount, 'memory/kubepods/memory.limit_in_bytes')));
  if (!existsSync('/run/systemd/system')) {
    const systemd = new ContainerManager(
      { driver: 'systemd', root: '/', enforceNodeAllocatable: [], mountPoint: mount },
      { logger, capacity },
    );
    await t.throwsAsync(systemd.start(), {
      message:
        /cgroupDriver is "systemd" but systemd is not the init system here.*set cgroupDriver: cgroupfs/,
    });
  }
});

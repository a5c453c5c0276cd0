import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { CgroupFs, detectCgroupLayout } from './cgroup-fs.js';
import { type CgroupMode, cgroupModeFromMountinfo, detectCgroupMode } from './cgroup-mode.js';
import { sharesToWeight } from './pod-resource-config.js';

/**
 * cgroup v2: which mode a host is in (from its mount table; from the files where the root is not a
 * mount point), and the v2 files the kubelet writes, with upstream's values, on a directory standing in
 * for a v2 hierarchy.
 *
 * A real v2 run of cpu.weight, cpu.max, memory.max and pids.max is not possible on a hybrid host like
 * the one these tests were written on: the kernel has one v2 hierarchy, and a controller bound to a v1
 * one (cpu, memory, pids here) cannot be enabled in it — a cgroup2 file system mounted afresh, even in a
 * mount namespace of its own, is that same hierarchy and offers only the controllers v1 left (hugetlb).
 * What runs for real here is the kubelet refusing that hierarchy with a clear error. On a v2 host the
 * containerd test (cgroups-containerd.test.ts) checks the v2 files of a running pod.
 */

const hybrid = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`;
const unified = `22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/root rw
25 23 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`;
const legacy = `30 22 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:10 - cgroup cgroup rw,cpu,cpuacct
34 30 0:31 / /sys/fs/cgroup/memory rw,nosuid shared:13 - cgroup cgroup rw,memory
`;
// A container's own view: its cgroup namespace's root, read-only.
const container = `612 611 0:31 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate
`;

const modes: [string, string, string, CgroupMode | undefined][] = [
  ['a hybrid host (v1 controllers, an empty unified hierarchy)', hybrid, '/sys/fs/cgroup', 'hybrid'],
  ['a unified host', unified, '/sys/fs/cgroup', 'v2'],
  ['a legacy host', legacy, '/sys/fs/cgroup', 'v1'],
  ['a container on a unified host', container, '/sys/fs/cgroup', 'v2'],
  ['a trailing slash', unified, '/sys/fs/cgroup/', 'v2'],
  [
    'cgroup2 mounted over the tmpfs later: the last mount wins',
    `${hybrid}41 22 0:40 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n`,
    '/sys/fs/cgroup',
    'v2',
  ],
  [
    'a mount point with a space (escaped \\040)',
    '50 22 0:41 / /srv/my\\040cgroup rw - cgroup2 cgroup2 rw\n',
    '/srv/my cgroup',
    'v2',
  ],
  ['nothing mounted there', unified, '/srv/cgroup', undefined],
];
for (const [name, mountinfo, mountPoint, want] of modes) {
  test(`cgroup mode from the mount table: ${name}`, (t) => {
    t.is(cgroupModeFromMountinfo(mountinfo, mountPoint), want);
  });
}

function tree(t: { teardown(fn: () => void): void }, files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-cgroup-v2-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), content);
  }
  return dir;
}

test('cgroup mode where the root is not a mount point: cgroup.controllers at the root is v2, under unified/ hybrid', (t) => {
  t.is(detectCgroupMode(tree(t, { 'cgroup.controllers': 'cpu memory pids\n' }), ''), 'v2');
  t.is(
    detectCgroupMode(tree(t, { 'unified/cgroup.controllers': '\n', 'cpu/cpu.shares': '1024' }), ''),
    'hybrid',
  );
  t.is(detectCgroupMode(tree(t, { 'cpu/cpu.shares': '1024' }), ''), 'v1');
  t.is(
    detectCgroupLayout(tree(t, { 'unified/cgroup.controllers': '\n' })),
    'v1',
    'a hybrid host writes v1 files',
  );
});

// Upstream's TestCpuSharesToCPUWeight (pkg/kubelet/cm), and 1024, the shares of one cpu.
const weights: [number, number][] = [
  [2, 1],
  [3, 1],
  [4, 1],
  [28, 1],
  [29, 2],
  [245, 10],
  [1024, 39],
  [262_144, 10_000],
];

test('cgroup v2 files with upstream’s values: cpu.weight = 1 + (shares − 2) × 9999 / 262142, cpu.max "quota period", memory.max, pids.max', async (t) => {
  t.deepEqual(
    weights.map(([shares]) => sharesToWeight(shares)),
    weights.map(([, weight]) => weight),
  );
  const root = tree(t, { 'cgroup.controllers': 'cpuset cpu io memory pids\n' });
  const fs = new CgroupFs(root);
  t.is(fs.layout, 'v2');
  const read = (path: string, file: string) => readFileSync(join(root, path, file), 'utf8');
  for (const [shares, weight] of weights) {
    await fs.create(`/kubepods/w${shares}`, { cpuShares: shares });
    t.is(read(`kubepods/w${shares}`, 'cpu.weight'), String(weight), `${shares} shares`);
  }
  await fs.create('/kubepods/podg', {
    cpuQuota: 50_000,
    cpuPeriod: 100_000,
    memory: 128 * 2 ** 20,
    pidsLimit: 1024,
  });
  t.is(read('kubepods/podg', 'cpu.max'), '50000 100000', '500m');
  t.is(read('kubepods/podg', 'memory.max'), String(128 * 2 ** 20));
  t.is(read('kubepods/podg', 'pids.max'), '1024');
  await fs.update('/kubepods/podg', { cpuQuota: -1, cpuPeriod: 100_000 });
  t.is(read('kubepods/podg', 'cpu.max'), 'max 100000', 'no quota (cpuCFSQuota false)');
  t.is(read('', 'cgroup.subtree_control'), '+cpu +memory +pids', 'enabled for the children');
});

test('a v2 hierarchy without the cpu, memory and pids controllers is refused, naming what is missing; nothing is made', async (t) => {
  const root = tree(t, { 'cgroup.controllers': 'hugetlb\n' });
  await t.throwsAsync(new CgroupFs(root).create('/kubepods', { cpuShares: 1024 }), {
    message: `the cgroup v2 hierarchy at ${root} does not offer the cpu, memory, pids controllers the kubelet sets limits with (it offers: hugetlb)`,
  });
  t.false(existsSync(join(root, 'kubepods')));
});

const MOUNT = '/sys/fs/cgroup';
const isRoot = process.getuid?.() === 0;
test('this host’s unified hierarchy, for real: on a hybrid host it offers none of the kubelet’s controllers and is refused', async (t) => {
  const mode = detectCgroupMode(MOUNT);
  t.log(`cgroups at ${MOUNT}: ${mode}`);
  if (mode !== 'hybrid' || !isRoot) return t.pass('not a hybrid host, or not root: nothing to try here');
  const unifiedRoot = join(MOUNT, 'unified');
  const offered = readFileSync(join(unifiedRoot, 'cgroup.controllers'), 'utf8').trim();
  t.log(`${unifiedRoot} offers: ${offered || 'none'}`);
  if (['cpu', 'memory', 'pids'].every((c) => offered.split(/\s+/).includes(c)))
    return t.pass('this hybrid host offers them in v2');
  const path = `/nodelet-test-v2-${process.pid}`;
  t.teardown(() => {
    if (existsSync(join(unifiedRoot, path))) rmdirSync(join(unifiedRoot, path)); // a cgroup goes by rmdir
  });
  await t.throwsAsync(new CgroupFs(unifiedRoot, 'v2').create(path, { cpuShares: 1024, memory: 2 ** 26 }), {
    message: new RegExp(`^the cgroup v2 hierarchy at ${unifiedRoot} does not offer the `),
  });
  t.false(existsSync(join(unifiedRoot, path)), 'no cgroup made');
});

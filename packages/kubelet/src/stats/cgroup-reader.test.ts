// cgroup v1 and v2 readers on fixture directories and on this host's own cgroups.
import test from 'ava';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupLocation, parseNetDev, readCgroupUsage, readMemTotal, readNetDev } from './cgroup-reader.js';

async function fixture(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'cgroup-'));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

test('v2: cpu from usage_usec, working set = memory.current - inactive_file', async (t) => {
  const root = await fixture({
    'pod/cpu.stat': 'usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n',
    'pod/memory.current': '209715200\n',
    'pod/memory.stat': 'anon 104857600\nfile 94371840\ninactive_file 52428800\npgfault 1200\npgmajfault 3\n',
  });
  const usage = await readCgroupUsage(cgroupLocation(2, root, '/pod'));
  t.deepEqual(usage, {
    cpuUsageNs: 2_500_000_000,
    memoryUsageBytes: 209_715_200,
    memoryWorkingSetBytes: 157_286_400,
    memoryRssBytes: 104_857_600,
    memoryCacheBytes: 94_371_840,
    pageFaults: 1200,
    majorPageFaults: 3,
  });
  await rm(root, { recursive: true });
});

test('v1: cpuacct.usage and the total_* fields of memory.stat', async (t) => {
  const root = await fixture({
    'cpuacct/kubepods/pod1/cpuacct.usage': '123456789\n',
    'memory/kubepods/pod1/memory.usage_in_bytes': '1000\n',
    'memory/kubepods/pod1/memory.stat':
      'cache 1\nrss 2\ntotal_cache 600\ntotal_rss 300\ntotal_inactive_file 1200\ntotal_pgfault 7\ntotal_pgmajfault 1\n',
  });
  const usage = await readCgroupUsage(cgroupLocation(1, root, '/kubepods/pod1'));
  t.is(usage.cpuUsageNs, 123_456_789);
  t.is(usage.memoryUsageBytes, 1000);
  t.is(usage.memoryWorkingSetBytes, 0, 'never below zero');
  t.is(usage.memoryRssBytes, 300);
  t.is(usage.memoryCacheBytes, 600);
  t.is(usage.pageFaults, 7);
  await rm(root, { recursive: true });
});

test('missing files leave fields undefined', async (t) => {
  const usage = await readCgroupUsage({ version: 2, dir: '/nonexistent/cgroup' });
  t.is(usage.cpuUsageNs, undefined);
  t.is(usage.memoryWorkingSetBytes, undefined);
});

const hostV1 = existsSync('/sys/fs/cgroup/cpuacct/cpuacct.usage');
const hostV2 = existsSync('/sys/fs/cgroup/unified/cpu.stat') || existsSync('/sys/fs/cgroup/cpu.stat');
const skipOrFail = (t: { fail(m: string): void; log(m: string): void; pass(): void }, what: string) => {
  if (process.env.CI === 'true') t.fail(`${what} is needed (CI=true)`);
  else {
    t.log(`skipped: ${what} not found on this host`);
    t.pass();
  }
};

test('this host: the root cgroup (v1) has CPU time that grows', async (t) => {
  if (!hostV1) return skipOrFail(t, 'cgroup v1 cpuacct');
  const location = cgroupLocation(1, '/sys/fs/cgroup', '/');
  const before = (await readCgroupUsage(location)).cpuUsageNs!;
  const end = Date.now() + 50;
  while (Date.now() < end); // burn some CPU
  const after = (await readCgroupUsage(location)).cpuUsageNs!;
  t.true(before > 0);
  t.true(after > before);
});

test('this host: the root cgroup (v2) reports cumulative CPU', async (t) => {
  if (!hostV2) return skipOrFail(t, 'cgroup v2 cpu.stat');
  const dir = existsSync('/sys/fs/cgroup/unified/cpu.stat') ? '/sys/fs/cgroup/unified' : '/sys/fs/cgroup';
  const usage = await readCgroupUsage({ version: 2, dir });
  t.true((usage.cpuUsageNs ?? 0) > 0);
});

test('/proc/<pid>/net/dev: interfaces without loopback; this process has a netns to read', async (t) => {
  const text = [
    'Inter-|   Receive                                                |  Transmit',
    ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
    '    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0',
    '  eth0:    5000      10    2    0    0     0          0         0     3000       8    1    0    0     0       0          0',
  ].join('\n');
  t.deepEqual(parseNetDev(text), [{ name: 'eth0', rxBytes: 5000, rxErrors: 2, txBytes: 3000, txErrors: 1 }]);
  t.true(Array.isArray(await readNetDev(process.pid)));
  t.true(((await readMemTotal()) ?? 0) > 0);
});

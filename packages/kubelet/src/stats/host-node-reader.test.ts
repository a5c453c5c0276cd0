// memory.available of a real node from fixture cgroup and /proc trees, as upstream computes it: capacity
// (MemTotal) less the root cgroup's working set (usage less inactive file pages) — on a hybrid host from
// the v1 memory controller, on a v2 host from the root's memory.stat (it has no memory.current).
import test from 'ava';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { observe, thresholdsMet } from '../eviction/signals.js';
import { evictionConfig } from '../eviction/thresholds.js';
import { hostNodeReader } from './host-node-reader.js';
import { hostStatsProvider } from './host-stats-provider.js';

const GiB = 2 ** 30;
const meminfo = `MemTotal:        8388608 kB\nMemFree:         1048576 kB\nMemAvailable:    5242880 kB\n`;

function tree(t: { teardown(f: () => void): void }, files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'nodelet-host-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

/** A hybrid host: v1 controllers, and a unified tree whose numbers must not be used for memory. */
const hybrid = {
  'proc/meminfo': meminfo,
  'cgroup/cpuacct/cpuacct.usage': '5000000000\n',
  'cgroup/memory/memory.usage_in_bytes': `${3 * GiB}\n`,
  'cgroup/memory/memory.stat': [
    `cache ${GiB}`,
    `inactive_file ${GiB / 4}`,
    `total_cache ${2 * GiB}`,
    `total_rss ${GiB}`,
    `total_inactive_file ${GiB}`,
    `total_active_file ${GiB / 2}`,
    '',
  ].join('\n'),
  'cgroup/unified/cpu.stat': 'usage_usec 1\n',
  'cgroup/unified/memory.stat': `anon 1\nfile 1\ninactive_file 0\n`,
};

test('hybrid host: the v1 root working set is usage_in_bytes - total_inactive_file; capacity is MemTotal', async (t) => {
  const root = tree(t, hybrid);
  const node = await hostNodeReader(join(root, 'cgroup'), join(root, 'proc'))();
  t.like(node, {
    cpuUsageNs: 5_000_000_000,
    memoryUsageBytes: 3 * GiB,
    memoryWorkingSetBytes: 2 * GiB,
    memoryRssBytes: GiB,
    memoryCapacityBytes: 8 * GiB,
  });
});

test('v2 host: the root has no memory.current; usage is anon + file of its memory.stat', async (t) => {
  const root = tree(t, {
    'proc/meminfo': meminfo,
    'cgroup/cpu.stat': 'usage_usec 7000000\n',
    'cgroup/memory.stat': `anon ${GiB}\nfile ${2 * GiB}\ninactive_file ${1.5 * GiB}\npgfault 10\n`,
  });
  const node = await hostNodeReader(join(root, 'cgroup'), join(root, 'proc'))();
  t.like(node, {
    cpuUsageNs: 7_000_000_000,
    memoryUsageBytes: 3 * GiB,
    memoryWorkingSetBytes: 1.5 * GiB,
    memoryCapacityBytes: 8 * GiB,
  });
});

test('memory.available of the summary (upstream makeSignalObservations) meets a threshold above it', async (t) => {
  const root = tree(t, hybrid);
  const clock = new VirtualClock();
  const runtime = new FakeRuntime({
    clock,
    logger: createLogger({ sink: new MemorySink().sink }),
    config: {} as never,
  });
  const provider = hostStatsProvider(runtime, runtime, {
    nodeName: 'host',
    clock,
    rootDir: root,
    cgroupRoot: join(root, 'cgroup'),
    procRoot: join(root, 'proc'),
  });
  const observations = observe(await provider.snapshot());
  t.deepEqual(observations.get('memory.available'), { available: 6 * GiB, capacity: 8 * GiB });
  const met = (value: string) =>
    thresholdsMet(
      evictionConfig({ evictionHard: { 'memory.available': value } }).thresholds,
      observations,
      false,
    );
  t.is(met('6Gi').length, 0, 'exactly the threshold: not below it');
  t.is(met('6145Mi').length, 1);
  t.is(met('80%').length, 1, '80% of 8Gi is above 6Gi');
});

import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { createCriClient } from '@nodelet/cri';
import { createLogger, EventBus, MemorySink, RealClock } from '@nodelet/kernel';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { Kubelet } from '../kubelet.js';
import { removeOwnPods } from '../test-containerd.js';
import { TestSource } from '../test-harness.js';
import { CgroupFs, detectCgroupLayout } from './cgroup-fs.js';

/**
 * The pod cgroups on this host's cgroup file system with containerd and runc: a Burstable pod's
 * container runs inside `<cgroupRoot>/kubepods/burstable/pod<uid>/`, whose cpu shares (or weight),
 * CFS quota, memory limit and pids.max are the ones upstream computes; kubepods is limited to the
 * node's memory less systemReserved; the pod's cgroup is gone once the pod is. The kubelet runs under a
 * cgroup root of the test's own, so kubelets of other tests on this host are not disturbed. Skipped
 * (one line) without containerd, failed in CI.
 */
const containerd = await requireContainerd(test);
const MOUNT = '/sys/fs/cgroup';
const BUSYBOX = 'nodelet.test/busybox:1';

async function poll<T>(what: string, probe: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The pids of processes anywhere under a cgroup directory. */
function pidsUnder(dir: string): number[] {
  if (!existsSync(dir)) return [];
  const own = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  const children = readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory());
  return [...own, ...children.flatMap((d) => pidsUnder(join(dir, d.name)))];
}

if (containerd) {
  test('containerd: a Burstable pod runs in kubepods/burstable/pod<uid> with upstream’s cpu, memory and pids limits; kubepods holds allocatable memory; the cgroup goes with the pod', async (t) => {
    t.timeout(180_000);
    const layout = detectCgroupLayout(MOUNT);
    const cgroupRoot = `/nodelet-test-${process.pid}`;
    const dir = mkdtempSync(join(tmpdir(), 'nodelet-cgroups-'));
    t.teardown(async () => {
      await new CgroupFs(MOUNT).remove(cgroupRoot).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    });
    const client = createCriClient(containerd.endpoint, { timeoutMs: 60_000 });
    t.teardown(() => client.close());
    const clock = new RealClock();
    const logger = createLogger({ sink: new MemorySink().sink });
    const source = new TestSource();
    const kubelet = new Kubelet(
      { runtime: client.runtime, images: client.image, bus: new EventBus(clock, logger), clock, logger },
      {
        nodeName: `cgroups-test-${process.pid}`,
        hostIP: '127.0.0.1',
        rootDir: join(dir, 'root'),
        podLogsDir: join(dir, 'logs'),
        sources: [source],
        reservation: { systemReserved: { memory: '1Gi' } },
        cgroups: {
          driver: 'cgroupfs',
          root: cgroupRoot,
          enforceNodeAllocatable: ['pods'],
          podPidsLimit: 256,
        },
      },
    );
    const uid = `cgroups-${process.pid}-${Date.now()}`;
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'burstable', namespace: 'default', uid },
      spec: {
        hostNetwork: true,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'app',
            image: BUSYBOX,
            imagePullPolicy: 'IfNotPresent',
            command: ['sleep', '3600'],
            resources: { requests: { cpu: '250m', memory: '32Mi' }, limits: { cpu: '500m', memory: '64Mi' } },
          },
        ],
      },
    };
    await kubelet.start();
    t.teardown(async () => {
      await removeOwnPods(kubelet, source, client, [uid]);
      await kubelet.stop();
    });
    const at = (controller: string, ...path: string[]) =>
      layout === 'v2' ? join(MOUNT, cgroupRoot, ...path) : join(MOUNT, controller, cgroupRoot, ...path);
    const read = (controller: string, file: string, ...path: string[]) =>
      readFileSync(join(at(controller, ...path), file), 'utf8').trim();

    // kubepods: the host's memory (as node status has it, whole KiB) less systemReserved, to a page.
    const allocatable = Math.floor(totalmem() / 1024) * 1024 - 2 ** 30;
    const kubepodsLimit = Number(
      read('memory', layout === 'v2' ? 'memory.max' : 'memory.limit_in_bytes', 'kubepods'),
    );
    t.true(
      Math.abs(kubepodsLimit - allocatable) < 4096,
      `kubepods memory ${kubepodsLimit}, allocatable ${allocatable}`,
    );

    source.set([pod]);
    const podPath = ['kubepods', 'burstable', `pod${uid}`];
    const pids = await poll('the container to run in the pod cgroup', () => {
      const found = pidsUnder(at(layout === 'v2' ? '' : 'cpu', ...podPath)).filter((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep\0'),
      );
      return found.length > 0 ? found : undefined;
    });
    t.log(`sleep runs as pid ${pids[0]} in ${join(cgroupRoot, ...podPath)} (cgroup ${layout})`);
    if (layout === 'v2') {
      t.is(read('', 'cpu.weight', ...podPath), '10', '250m → 256 shares → weight 10');
      t.is(read('', 'cpu.max', ...podPath), '50000 100000');
      t.is(read('', 'memory.max', ...podPath), String(64 * 2 ** 20));
    } else {
      t.is(read('cpu', 'cpu.shares', ...podPath), '256', '250m');
      t.is(read('cpu', 'cpu.cfs_quota_us', ...podPath), '50000', '500m of 100 ms');
      t.is(read('memory', 'memory.limit_in_bytes', ...podPath), String(64 * 2 ** 20));
      // The memory cgroup of the process is inside the pod's too.
      const memoryLine = readFileSync(`/proc/${pids[0]}/cgroup`, 'utf8')
        .split('\n')
        .find((l) => /:memory:/.test(l));
      t.true(memoryLine?.includes(join(cgroupRoot, ...podPath)), memoryLine);
    }
    t.is(read('pids', 'pids.max', ...podPath), '256');

    source.set([]);
    await poll('the pod cgroup to be removed', () =>
      existsSync(at('memory', ...podPath)) ? undefined : true,
    );
    t.true(existsSync(at('memory', 'kubepods', 'burstable')), 'the QoS cgroup stays');
    for (const hierarchy of readdirSync(MOUNT)) {
      t.false(existsSync(join(MOUNT, hierarchy, cgroupRoot, ...podPath)), `nothing left in ${hierarchy}`);
    }
  });
}

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { until } from '../test-containerd.js';
import { detectCgroupLayout } from './cgroup-fs.js';
import { CGROUP_MOUNT, commandPidsUnder, sleepPod, startCgroupsKubelet } from './test-cgroups-containerd.js';

/**
 * The pod cgroups on this host's cgroup file system with containerd and runc: a Burstable pod's
 * container runs inside `<cgroupRoot>/kubepods/burstable/pod<uid>/`, whose cpu shares (or weight),
 * CFS quota, memory limit and pids.max are the ones upstream computes; kubepods is limited to the
 * node's memory less systemReserved; the pod's cgroup is gone once the pod is. The kubelet runs under a
 * cgroup root of the test's own, so kubelets of other tests on this host are not disturbed. Skipped
 * (one line) without containerd, failed in CI.
 */
const containerd = await requireContainerd(test);
const MOUNT = CGROUP_MOUNT;

if (containerd) {
  test('containerd: a Burstable pod runs in kubepods/burstable/pod<uid> with upstream’s cpu, memory and pids limits; kubepods holds allocatable memory; the cgroup goes with the pod', async (t) => {
    t.timeout(180_000);
    const layout = detectCgroupLayout(MOUNT);
    const uid = `cgroups-${process.pid}-${Date.now()}`;
    const pod = sleepPod('burstable', uid, {
      requests: { cpu: '250m', memory: '32Mi' },
      limits: { cpu: '500m', memory: '64Mi' },
    });
    const { source, cgroupRoot } = await startCgroupsKubelet(
      t,
      containerd.endpoint,
      'cgroups',
      { driver: 'cgroupfs', enforceNodeAllocatable: ['pods'], podPidsLimit: 256 },
      [uid],
      { reservation: { systemReserved: { memory: '1Gi' } } },
    );
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
    const pids = await until(
      'the container to run in the pod cgroup',
      () => {
        const found = commandPidsUnder(at(layout === 'v2' ? '' : 'cpu', ...podPath), 'sleep');
        return found.length > 0 ? found : undefined;
      },
      60_000,
    );
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
    // Removal goes through the hierarchies one by one: wait for the last of them.
    const left = () =>
      readdirSync(MOUNT).filter((hierarchy) => existsSync(join(MOUNT, hierarchy, cgroupRoot, ...podPath)));
    await until('the pod cgroup to be removed', () => (left().length === 0 ? true : undefined), 60_000).catch(
      () => undefined,
    );
    t.deepEqual(left(), [], 'nothing left in any hierarchy');
    t.true(existsSync(at('memory', 'kubepods', 'burstable')), 'the QoS cgroup stays');
  });
}

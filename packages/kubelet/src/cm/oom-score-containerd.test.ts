import { readdirSync, readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Container } from '@nodelet/api';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { oomScoreAdj } from '../resources.js';
import { until } from '../test-containerd.js';
import { CGROUP_MOUNT, commandPidsUnder, sleepPod, startCgroupsKubelet } from './test-cgroups-containerd.js';

/**
 * oom_score_adj on this host's containerd and runc. The kubelet asks CRI for upstream's values —
 * Guaranteed -997, BestEffort 1000, Burstable 1000 − 1000 × request / memory capacity — and sets its
 * own to `oomScoreAdj` (-999) at start.
 *
 * Lowering a score needs CAP_SYS_RESOURCE. Where a process lacks it (this host's containers of tests do),
 * runc alone fails to start a container asking for a negative score ("nsexec: failed to update
 * /proc/self/oom_score_adj: Permission denied", seen with `runc run` here); containerd's CRI with
 * `restrict_oom_score_adj = true` (this host's configuration) raises any score below its own to its
 * own instead, so the Guaranteed pod starts, its process at containerd's score. The kubelet's own
 * refusal is one warning; nothing else is reported, as nothing else fails.
 *
 * With `restrict_oom_score_adj = false` on such a host (tried once with a containerd of its own) no pod
 * starts at all, BestEffort ones included: the sandbox asks for -998. CRI's error does not name the
 * cause ("runc create failed: unable to start container process: can't get final child's PID from
 * pipe: EOF"); the kubelet logs "CreatePodSandbox failed" at each retry (every 10 s), the pods stay
 * ContainerCreating, and the kubelet runs on — as upstream, which reports each attempt as an event.
 */
const containerd = await requireContainerd(test);

const hasSysResource = (pid: number | 'self'): boolean => {
  const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return capEff !== null && ((BigInt(`0x${capEff[1]}`) >> 24n) & 1n) === 1n;
};
const score = (pid: number | 'self') => Number(readFileSync(`/proc/${pid}/oom_score_adj`, 'utf8'));

/** containerd's own score: what it lowers containers to at most with restrict_oom_score_adj. */
function containerdScore(): number | undefined {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'containerd') return score(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

if (containerd) {
  test('containerd: Guaranteed, Burstable and BestEffort pods start with the oom_score_adj the runtime allows; a refused kubelet score is one warning', async (t) => {
    t.timeout(180_000);
    const stamp = `${process.pid}-${Date.now()}`;
    const pod = (qos: string, resources: Container['resources']) =>
      sleepPod(qos, `oom-${qos}-${stamp}`, resources);
    const quantity = { cpu: '100m', memory: '32Mi' };
    const pods = {
      guaranteed: pod('guaranteed', { requests: quantity, limits: quantity }),
      burstable: pod('burstable', { requests: { memory: '64Mi' } }),
      besteffort: pod('besteffort', {}),
    };
    const { kubelet, source, sink, cgroupRoot } = await startCgroupsKubelet(
      t,
      containerd.endpoint,
      'oom',
      { driver: 'cgroupfs', enforceNodeAllocatable: [] },
      Object.values(pods).map((p) => p.metadata!.uid!),
      { oomScoreAdj: -999 },
    );
    source.set(Object.values(pods));

    const ownWarnings = sink.find('oomScoreAdj');
    if (hasSysResource('self')) t.is(score('self'), -999, 'the kubelet lowered its own score');
    else t.is(ownWarnings.length, 1, 'the kubelet says once that its own score stays');

    const floor = containerdScore();
    const appScore = async (qos: keyof typeof pods, parent: string[]) => {
      const dir = join(CGROUP_MOUNT, 'cpu', cgroupRoot, ...parent, `pod${pods[qos].metadata!.uid}`);
      // The app's sleep is the one started last: the sandbox of this busybox pause image sleeps too.
      const running = await until(
        `the ${qos} container to run`,
        () => {
          const status = kubelet.podList().items.find((p) => p.metadata?.name === qos)?.status;
          return status?.containerStatuses?.[0]?.state?.running ? true : undefined;
        },
        90_000,
      );
      t.true(running);
      const app = commandPidsUnder(dir, 'sleep').sort((a, b) => score(b) - score(a) || b - a)[0]!;
      return score(app);
    };
    const guaranteed = await appScore('guaranteed', ['kubepods']);
    const burstable = await appScore('burstable', ['kubepods', 'burstable']);
    const besteffort = await appScore('besteffort', ['kubepods', 'besteffort']);
    t.log(
      `containerd's own score ${floor}; Guaranteed ${guaranteed}, Burstable ${burstable}, BestEffort ${besteffort}`,
    );

    // -997 where containerd may lower scores; else containerd's own (restrict_oom_score_adj).
    t.true(
      guaranteed === -997 || (floor !== undefined && guaranteed === Math.max(-997, floor)),
      `Guaranteed at ${guaranteed}`,
    );
    const memoryRequest = pods.burstable.spec!.containers[0]!;
    t.is(burstable, oomScoreAdj(pods.burstable, memoryRequest, totalmem()), 'upstream’s Burstable formula');
    t.is(besteffort, 1000);
    t.deepEqual(
      sink.records.filter((l) => l.level === 'error'),
      [],
      'no pod failed to start',
    );
  });
}

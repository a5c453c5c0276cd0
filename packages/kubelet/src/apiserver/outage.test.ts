import test from 'ava';
import { canonicalJson } from '@nodelet/api';
import { apiPod, startCluster, staticPod, type ClusterHarness } from './test-harness.js';
import { mergedStatus } from './status-sync.js';
import { mergePatch } from '@nodelet/client';

const B = 'runtime-fake.nodelet.dev/';

/** Counts CreateContainer calls (a recreated container is one more). */
function countCreates(h: ClusterHarness): () => number {
  let n = 0;
  const create = h.runtime.createContainer.bind(h.runtime);
  h.runtime.createContainer = async (req) => {
    n++;
    return create(req);
  };
  return () => n;
}

/** Whether every API pod's status is what the kubelet reports. */
function statusesMatch(h: ClusterHarness): boolean {
  const local = new Map(h.kubelet.podList().items.map((p) => [p.metadata!.uid!, p.status!]));
  for (const pod of h.api.pods.values()) {
    const ours = local.get(pod.metadata!.uid!);
    if (!ours) continue;
    const merged = mergePatch(pod.status ?? {}, mergedStatus(pod.status, ours));
    if (canonicalJson(merged) !== canonicalJson(pod.status ?? {})) return false;
  }
  return true;
}

async function twentyPods(h: ClusterHarness): Promise<void> {
  await h.clock.advance(1_000);
  for (let i = 0; i < 15; i++) await h.api.createPod(apiPod(`web-${i}`));
  // Five jobs finish during the outage: their statuses must catch up afterwards.
  for (let i = 0; i < 5; i++) {
    await h.api.createPod(
      apiPod(`job-${i}`, { restartPolicy: 'Never' }, { [`${B}main`]: 'exitAfter=60s,exitCode=0' }),
    );
  }
  await h.clock.advanceUntil(
    () =>
      [...h.api.pods.values()].filter(
        (p) => /^(web|job)-/.test(p.metadata!.name!) && p.status?.phase === 'Running',
      ).length === 20,
    { maxMs: 10_000 },
  );
}

test('API outage of 2 min with 20 pods: nothing restarted or lost, statuses correct within 10 s after', async (t) => {
  const h = await startCluster();
  h.statics.set([staticPod('etcd')]);
  await twentyPods(h);
  const creates = countCreates(h);
  const running = h.runtime.counts().running;
  t.is(running, 21);

  h.api.down = true;
  await h.clock.advance(120_000);
  t.is(creates(), 0, 'no container restarted during the outage');
  t.is(h.runtime.counts().running, 16, 'the 15 web pods and the static pod run; the 5 jobs finished');
  const syncer = h.kubelet.nodeAgent!.syncer!;
  t.true(syncer.pending <= 21, `bounded: ${syncer.pending} statuses waiting, at most one per pod`);
  t.true(h.kubelet.nodeAgent!.recorder!.queued <= 1000);
  t.true(h.logs.find('Failed to list pods').length + h.logs.find('Watch of pods failed').length > 0);

  h.api.down = false;
  const ms = await h.clock.advanceUntil(
    () =>
      statusesMatch(h) &&
      [...h.api.pods.values()].filter((p) => p.status?.phase === 'Succeeded').length === 5,
    { stepMs: 100, maxMs: 10_000 },
  );
  t.log(`caught up ${ms} ms after the API returned`);
  t.true(ms <= 10_000);
  t.is(creates(), 0);
  // The node is Ready and its lease renewed again.
  await h.clock.advance(10_000);
  const lease = h.api.leases.get('kube-node-lease/node1')!;
  t.true(h.clock.now() - Date.parse(String(lease.spec!.renewTime)) <= 10_000);
  await h.kubelet.stop();
});

test('kubelet restart with 20 pods: 0 containers recreated, statuses correct within 5 s', async (t) => {
  const h = await startCluster();
  await twentyPods(h);
  const creates = countCreates(h);
  await h.restart();
  const ms = await h.clock.advanceUntil(() => statusesMatch(h) && h.kubelet.podList().items.length === 20, {
    stepMs: 100,
    maxMs: 5_000,
  });
  t.true(ms <= 5_000, `statuses correct ${ms} ms after the restart`);
  await h.clock.advance(30_000);
  t.is(creates(), 0, 'every container adopted');
  t.is(h.runtime.counts().running, 20);
  await h.kubelet.stop();
});

test('kubelet restart while the API server is away: running pods are adopted, not removed', async (t) => {
  const h = await startCluster();
  await twentyPods(h);
  const creates = countCreates(h);
  h.api.down = true;
  await h.restart();
  await h.clock.advance(30_000); // housekeeping runs every 2 s; it must not treat API pods as orphans
  t.is(h.runtime.counts().running, 20);
  h.api.down = false;
  await h.clock.advance(40_000);
  t.is(h.runtime.counts().running, 15, 'the jobs finished at 60 s; the rest still runs');
  t.true(statusesMatch(h));
  t.is(creates(), 0);
  await h.kubelet.stop();
});

test('a pod deleted while the kubelet was down is cleaned up at start', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  await h.api.createPod(apiPod('gone'));
  await h.api.createPod(apiPod('kept'));
  await h.clock.advanceUntil(() => h.runtime.counts().running === 2, { maxMs: 5_000 });
  await h.kubelet.stop();
  await h.api.deletePod('default', 'gone', { gracePeriodSeconds: 0 });
  await h.restart();
  await h.clock.advanceUntil(() => h.runtime.counts().containers === 1, { maxMs: 10_000 });
  t.is(h.runtime.counts().running, 1);
  await h.kubelet.stop();
});

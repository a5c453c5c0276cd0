import test from 'ava';
import { podCells, type Pod } from '@nodelet/api';
import { apiPod, startCluster } from './test-harness.js';

const B = 'runtime-fake.nodelet.dev/';

/**
 * What `kubectl get pods -w` shows while a pod is deleted: STATUS Terminating while its containers shut
 * down; then, as upstream's kubelet does since 1.27 for a deleted pod, one terminal status (Succeeded when
 * every container exited 0 — "Completed" — else Failed, the container's reason, e.g. "Error" for 143)
 * just before the pod is gone.
 */
async function deletionSeen(script: string) {
  const h = await startCluster();
  await h.clock.advance(1_000);
  await h.api.createPod(apiPod('web', {}, { [`${B}main`]: script }));
  await h.clock.advanceUntil(() => h.api.pods.get('default/web')?.status?.phase === 'Running', {
    maxMs: 5_000,
  });
  // Watch as kubectl get -w does: one STATUS per change.
  const seen: string[] = [];
  let last: Pod | undefined;
  const watch = h.api.watchPods('', '0', (event) => {
    if (event.type !== 'MODIFIED' && event.type !== 'DELETED') return;
    last = event.object as Pod;
    const status = `${event.type} ${podCells(last, h.clock.now()).status}`;
    if (seen.at(-1) !== status) seen.push(status);
  });
  await h.api.deletePod('default', 'web', { gracePeriodSeconds: 30 });
  await h.clock.advanceUntil(() => !h.api.pods.has('default/web'), { stepMs: 100, maxMs: 60_000 });
  watch.stop();
  await h.kubelet.stop();
  return { seen, last: last! };
}

test('a deleted pod shows Terminating while it shuts down, then Error (exit 143, phase Failed), then is gone', async (t) => {
  const { seen, last } = await deletionSeen('stopDelay=3s');
  t.deepEqual(seen, ['MODIFIED Terminating', 'MODIFIED Error', 'DELETED Error']);
  t.is(last.status?.phase, 'Failed');
  t.like(last.status?.containerStatuses?.[0]?.state?.terminated, { exitCode: 143, reason: 'Error' });
});

test('a deleted pod whose container exits 0 on SIGTERM shows Terminating, then Completed (phase Succeeded)', async (t) => {
  const { seen, last } = await deletionSeen('stopDelay=3s,stopExitCode=0');
  t.deepEqual(seen, ['MODIFIED Terminating', 'MODIFIED Completed', 'DELETED Completed']);
  t.is(last.status?.phase, 'Succeeded');
});

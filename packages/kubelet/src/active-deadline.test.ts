import test from 'ava';
import { makePod, recordStarts, startHarness } from './test-harness.js';

// spec.activeDeadlineSeconds on the kernel's virtual clock, as upstream's kubelet keeps it: counted from
// the pod's startTime; past it the containers are stopped and never started again, the pod is Failed
// with reason DeadlineExceeded, and one Normal event says so.

const B = 'runtime-fake.nodelet.dev/';
const message = 'Pod was active on the node longer than the specified deadline';

test('past activeDeadlineSeconds the pod is Failed (DeadlineExceeded), its container stopped and not restarted', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  const events: { type: string; reason: string; message: string }[] = [];
  h.bus.subscribe('[Kubelet] Pod Event', (e) => {
    if (e.podUid === 'uid-deadline') events.push({ type: e.eventType, reason: e.reason, message: e.message });
  });
  h.source.set([makePod('deadline', { activeDeadlineSeconds: 30 })]);
  await h.clock.advance(29_000);
  t.is(h.status('uid-deadline').phase, 'Running');
  await h.clock.advance(2_000);
  const status = h.status('uid-deadline');
  t.is(status.phase, 'Failed');
  t.is(status.reason, 'DeadlineExceeded');
  t.is(status.message, message);
  t.truthy(status.containerStatuses![0]!.state?.terminated, JSON.stringify(status.containerStatuses));
  await h.clock.advance(300_000);
  t.is(starts.length, 1, 'never started again');
  t.is(h.status('uid-deadline').phase, 'Failed');
  t.deepEqual(
    events.filter((e) => e.reason === 'DeadlineExceeded'),
    [{ type: 'Normal', reason: 'DeadlineExceeded', message }],
  );
  await h.kubelet.stop();
});

test('a pod that finished before its deadline keeps its phase', async (t) => {
  const h = await startHarness();
  h.source.set([
    makePod(
      'quick',
      { restartPolicy: 'Never', activeDeadlineSeconds: 10 },
      { [`${B}main`]: 'exitAfter=2s,exitCode=0' },
    ),
  ]);
  await h.clock.advance(60_000);
  const status = h.status('uid-quick');
  t.is(status.phase, 'Succeeded');
  t.is(status.reason, undefined);
  await h.kubelet.stop();
});

import test from 'ava';
import { CriLabels } from '@nodelet/cri';
import { makePod, recordStarts, startHarness } from './test-harness.js';

const B = 'runtime-fake.nodelet.dev/';

async function containersOf(h: Awaited<ReturnType<typeof startHarness>>, uid: string) {
  const { containers } = await h.runtime.listContainers({});
  return containers.filter((c) => c.labels[CriLabels.PodUID] === uid);
}

test('a crash-looping container leaves at most one dead container per pass; restart count and last state survive', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  h.source.set([makePod('crash', {}, { [`${B}main`]: 'exitAfter=0s,exitCode=1' })]);
  // Starts at 0, 1, 11, 31, 71, 151, 311 s; garbage collection every minute from 60 s.
  let most = 0;
  for (let s = 0; s < 400; s += 5) {
    await h.clock.advance(5_000);
    if (s >= 60) most = Math.max(most, (await containersOf(h, 'uid-crash')).length);
  }
  t.is(starts.length, 7);
  t.true(most <= 3, `at most the newest, one dead and one that died since the last pass: ${most}`);
  await h.clock.advance(60_000);
  const left = await containersOf(h, 'uid-crash');
  t.true(left.length <= 2, `after a pass: the newest and at most one dead (${left.length})`);
  const main = h.status('uid-crash').containerStatuses![0]!;
  t.is(main.restartCount, starts.length - 1);
  t.is(main.lastState?.terminated?.exitCode, 1);
  await h.kubelet.stop();
});

test('the period and policy are the kubelet options', async (t) => {
  const h = await startHarness({ containerGC: { periodMs: 10_000, maxPerPodContainer: 0 } });
  t.deepEqual(h.kubelet.containerGC.policy, { minAgeMs: 0, maxPerPodContainer: 0, maxContainers: -1 });
  h.source.set([makePod('crash', {}, { [`${B}main`]: 'exitAfter=0s,exitCode=1' })]);
  await h.clock.advance(25_000); // starts at 0, 1, 11 s; a pass at 10 and 20 s
  const left = await containersOf(h, 'uid-crash');
  t.is(left.length, 1, 'only the newest: its restart count needs it');
  t.is(h.status('uid-crash').containerStatuses![0]!.restartCount, 2);
  await h.kubelet.stop();
});

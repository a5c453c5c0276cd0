// Upstream's TestSandboxGC and TestPodLogDirectoryGC (kuberuntime_gc_test.go) as data, on the fake
// runtime under virtual time: sandboxes with states, ages and pods → which remain; pod log directories.
import test from 'ava';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { c, type GCContainer, type GCSandbox, type PodStates, sb, world } from './test-container-gc.js';

const sandboxCases: {
  description: string;
  sandboxes: GCSandbox[];
  containers?: GCContainer[];
  pods: PodStates;
  remain: number[];
  evictTerminatedPods?: boolean;
}[] = [
  {
    description: 'a not-ready sandbox without containers of a deleted pod goes',
    sandboxes: [sb('deleted', 0, false)],
    pods: { deleted: ['deleted'], terminated: [] },
    remain: [],
  },
  {
    description: 'a ready sandbox of a deleted pod stays',
    sandboxes: [sb('deleted', 0, true)],
    pods: { deleted: ['deleted'], terminated: [] },
    remain: [0],
  },
  {
    description: 'the sandboxes of existing pods stay',
    sandboxes: [sb('foo1', 0, true), sb('foo2', 0, false)],
    pods: { deleted: [], terminated: [] },
    remain: [0, 1],
  },
  {
    description: 'an older exited sandbox without containers of an existing pod goes',
    sandboxes: [sb('foo1', 1, false, 1), sb('foo1', 0, false, 0)],
    pods: { deleted: [], terminated: [] },
    remain: [0],
  },
  {
    description: 'an older exited sandbox with containers stays',
    sandboxes: [sb('foo1', 1, false, 1), sb('foo1', 0, false, 0)],
    containers: [{ ...c('foo1', 'bar1', 0, 2), sandboxAttempt: 0 }],
    pods: { deleted: [], terminated: [] },
    remain: [0, 1],
  },
  {
    description: 'under disk pressure the not-ready sandboxes of terminated pods go',
    sandboxes: [sb('foo1', 0, true), sb('foo2', 0, false)],
    pods: { deleted: [], terminated: ['foo1', 'foo2'] },
    remain: [0],
    evictTerminatedPods: true,
  },
  {
    description: 'a sandbox with containers stays',
    sandboxes: [sb('foo1', 0, false)],
    containers: [c('foo1', 'bar1', 0, 1)],
    pods: { deleted: [], terminated: [] },
    remain: [0],
  },
  {
    description: 'several pods and sandboxes at once',
    sandboxes: [
      sb('foo1', 1, true, 1),
      sb('foo1', 0, false, 0),
      sb('foo2', 1, false, 1),
      sb('foo2', 0, false, 0),
      sb('deleted', 0, false, 0),
    ],
    containers: [{ ...c('foo2', 'bar3', 0, 2), sandboxAttempt: 1 }],
    pods: { deleted: ['deleted'], terminated: ['deleted'] },
    remain: [0, 2],
  },
];

for (const tc of sandboxCases) {
  test(`sandbox GC: ${tc.description}`, async (t) => {
    const w = await world(tc.pods);
    const { sandboxIds } = await w.populate(tc.sandboxes, tc.containers ?? []);
    await w.gc.evictSandboxes(tc.evictTerminatedPods ?? false);
    t.deepEqual(await w.remainingSandboxes(sandboxIds), tc.remain);
  });
}

test('pod log directory GC: the directories of deleted pods go once every source is seen', async (t) => {
  const names = ['123', '456', '789', '012', 'name_namespace_321', 'name_namespace_654', 'test-ns_kept_kept'];
  const pods = { deleted: ['012', '789', '654', 'kept'], terminated: [] };
  const notReady = await world(pods, { allSourcesReady: false });
  for (const name of names) await mkdir(join(notReady.podLogsDir, name));
  await notReady.gc.garbageCollect();
  t.deepEqual(
    (await readdir(notReady.podLogsDir)).sort(),
    [...names].sort(),
    'nothing before every source is seen',
  );

  const w = await world(pods);
  for (const name of names) await mkdir(join(w.podLogsDir, name));
  // A deleted pod whose container the minimum age still keeps keeps its logs too.
  await w.populate([], [c('kept', 'app', 0, 'now')]);
  await w.gc.evictPodLogsDirectories(true);
  t.deepEqual((await readdir(w.podLogsDir)).sort(), [
    '123',
    '456',
    'name_namespace_321',
    'test-ns_kept_kept',
  ]);
});

test('one pass removes the dead containers, then their sandbox, then the log directory of a deleted pod', async (t) => {
  const w = await world({ deleted: ['gone'], terminated: ['gone'] });
  const { sandboxIds } = await w.populate(
    [sb('gone', 0, false)],
    [c('gone', 'app', 1, 1), c('gone', 'app', 0, 0)],
  );
  await mkdir(join(w.podLogsDir, 'test-ns_gone_gone', 'app'), { recursive: true });
  await w.gc.garbageCollect();
  t.deepEqual(await w.remainingSandboxes(sandboxIds), []);
  t.deepEqual((await w.runtime.listContainers({})).containers, []);
  t.deepEqual(await readdir(w.podLogsDir), []);
});

// Upstream's TestContainerGC (kuberuntime_gc_test.go) as data, on the fake runtime under virtual time:
// containers with states, ages and pods → which remain; the periodic pass and the disk-pressure pass.
import test from 'ava';
import { ContainerGarbageCollector } from './container-gc.js';
import type { ContainerGCPolicy } from './container-gc-policy.js';
import { attempts, c, type GCContainer, HOUR, sb, world } from './test-container-gc.js';

/** Upstream's default policy in its test: an hour's minimum age, two per container, six on the node. */
const testPolicy: ContainerGCPolicy = { minAgeMs: HOUR, maxPerPodContainer: 2, maxContainers: 6 };

const containerCases: {
  description: string;
  containers: GCContainer[];
  policy?: ContainerGCPolicy;
  remain: number[];
  evictTerminatedPods?: boolean;
  allSourcesReady?: boolean;
}[] = [
  {
    description: 'all containers are removed when the node-wide limit is 0',
    containers: [c('foo', 'bar', 0, 0)],
    policy: { minAgeMs: 60_000, maxPerPodContainer: 1, maxContainers: 0 },
    remain: [],
  },
  {
    description: 'the node-wide limit holds when there is no per-container limit',
    containers: attempts('foo', 'bar', 4),
    policy: { minAgeMs: 60_000, maxPerPodContainer: -1, maxContainers: 4 },
    remain: [0, 1, 2, 3],
  },
  {
    description: 'nothing is removed without either limit',
    containers: attempts('foo', 'bar', 2),
    policy: { minAgeMs: 60_000, maxPerPodContainer: -1, maxContainers: -1 },
    remain: [0, 1, 2],
  },
  {
    description: 'recently created containers are not removed',
    containers: [c('foo', 'bar', 2, 'now'), c('foo', 'bar', 1, 'now'), c('foo', 'bar', 0, 'now')],
    remain: [0, 1, 2],
  },
  {
    description: 'the oldest go when the per-container limit is exceeded',
    containers: attempts('foo', 'bar', 2),
    remain: [0, 1],
  },
  {
    description: 'running containers are not removed',
    containers: [c('foo', 'bar', 2, 2), c('foo', 'bar', 1, 1), c('foo', 'bar', 0, 0, 'running')],
    remain: [0, 1, 2],
  },
  {
    description: 'nothing is removed within the limits',
    containers: [c('foo', 'bar', 1, 1), c('foo', 'bar', 0, 0)],
    remain: [0, 1],
  },
  {
    description: 'the per-container limit applies per (pod UID, container name)',
    containers: [...attempts('foo', 'bar', 2), ...attempts('foo1', 'baz', 2), ...attempts('foo2', 'bar', 2)],
    remain: [0, 1, 3, 4, 6, 7],
  },
  {
    description: 'the node-wide limit keeps some of every pod',
    containers: ['foo', 'foo1', 'foo2', 'foo3', 'foo4'].flatMap((pod, i) => attempts(pod, `bar${i}`, 1)),
    remain: [0, 2, 4, 6, 8],
  },
  {
    description: 'the oldest go when the node-wide limit is still exceeded',
    containers: [
      ...attempts('foo', 'bar', 2).slice(0, 2),
      ...attempts('foo1', 'bar1', 2).slice(0, 2),
      c('foo2', 'bar2', 1, 1),
      c('foo3', 'bar3', 0, 0),
      c('foo4', 'bar4', 1, 1),
      c('foo5', 'bar5', 0, 0),
      c('foo6', 'bar6', 2, 2),
      c('foo7', 'bar7', 1, 1),
    ],
    remain: [0, 2, 4, 6, 8, 9],
  },
  {
    description: 'under disk pressure every dead container of a terminated pod goes',
    containers: [
      ...attempts('foo', 'bar', 2).slice(0, 2),
      ...attempts('foo1', 'bar1', 2).slice(0, 2),
      c('running', 'bar2', 1, 1),
      c('foo3', 'bar3', 0, 0, 'running'),
    ],
    remain: [4, 5],
    evictTerminatedPods: true,
  },
  {
    description: "a deleted pod's containers go, but not before the minimum age",
    containers: [
      c('foo', 'bar', 1, 1),
      c('foo', 'bar', 0, 0),
      c('deleted', 'bar1', 2, 'now'),
      c('deleted', 'bar1', 1, 1),
      c('deleted', 'bar1', 0, 0),
    ],
    remain: [0, 1, 2],
  },
  {
    description: "a deleted pod's containers stay until every source is seen",
    containers: [c('deleted', 'bar1', 0, 0)],
    remain: [0],
    evictTerminatedPods: true,
    allSourcesReady: false,
  },
  // Beyond upstream's table: what a pod that still runs needs.
  {
    description: 'the newest container of a pod that still runs stays, even when no dead one may',
    containers: [c('running', 'app', 2, 2), c('running', 'app', 1, 1), c('running', 'app', 0, 0)],
    policy: { minAgeMs: 0, maxPerPodContainer: 0, maxContainers: 0 },
    remain: [0],
  },
  {
    description: 'created (never started) containers count as dead',
    containers: [c('foo', 'bar', 1, 1, 'created'), c('foo', 'bar', 0, 0)],
    policy: { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 },
    remain: [0],
  },
];

for (const tc of containerCases) {
  test(`container GC: ${tc.description}`, async (t) => {
    const pods = new Set(tc.containers.map((x) => x.pod));
    const w = await world(
      { deleted: ['deleted'], terminated: [...pods].filter((p) => p !== 'running') },
      { allSourcesReady: tc.allSourcesReady ?? true, policy: tc.policy ?? testPolicy },
    );
    const { containerIds } = await w.populate([], tc.containers);
    await w.gc.evictContainers(tc.allSourcesReady ?? true, tc.evictTerminatedPods ?? false);
    t.deepEqual(await w.remainingContainers(containerIds), tc.remain);
  });
}

test('under disk pressure (deleteAllUnusedContainers): a terminated pod loses its dead containers and sandbox, a running pod keeps its newest', async (t) => {
  const w = await world({ deleted: [], terminated: ['done'] });
  const { containerIds, sandboxIds } = await w.populate(
    [sb('done', 0, false), sb('running', 0, true)],
    [...attempts('done', 'app', 1), ...attempts('running', 'app', 2)],
  );
  await w.gc.deleteAllUnusedContainers();
  t.deepEqual(await w.remainingContainers(containerIds), [2], "only the running pod's newest");
  t.deepEqual(await w.remainingSandboxes(sandboxIds), [1]);
});

test('the collector runs every period on the clock; another node’s containers are left alone', async (t) => {
  const w = await world(
    { deleted: [], terminated: ['foo', 'other'] },
    { policy: { minAgeMs: 0, maxPerPodContainer: 0, maxContainers: -1 } },
  );
  const { containerIds } = await w.populate(
    [],
    [c('foo', 'bar', 0, 0), { ...c('other', 'bar', 0, 0), node: 'node2' }],
  );
  w.gc.start(60_000);
  await w.clock.advance(59_000);
  t.deepEqual(await w.remainingContainers(containerIds), [0, 1], 'not before the period');
  await w.clock.advance(1_000);
  t.deepEqual(await w.remainingContainers(containerIds), [1], 'removed by the first pass');
  w.gc.stop();
});

test('a policy upstream refuses is refused, naming the field', (t) => {
  const deps = {} as ConstructorParameters<typeof ContainerGarbageCollector>[0];
  t.throws(
    () => new ContainerGarbageCollector(deps, { minAgeMs: -1, maxPerPodContainer: 1, maxContainers: -1 }),
    {
      message: /containerGC\.minAgeMs/,
    },
  );
  t.throws(
    () => new ContainerGarbageCollector(deps, { minAgeMs: 0, maxPerPodContainer: 1.5, maxContainers: -1 }),
    {
      message: /containerGC\.maxPerPodContainer/,
    },
  );
});

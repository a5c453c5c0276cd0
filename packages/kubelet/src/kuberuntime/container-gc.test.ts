// Upstream's TestContainerGC, TestSandboxGC and TestPodLogDirectoryGC (kuberuntime_gc_test.go) as data,
// on the fake runtime under virtual time: containers and sandboxes with states, ages and pods → which remain.
import test from 'ava';
import { mkdir, mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerConfig, CriLabels, PodSandboxConfig } from '@nodelet/cri';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { ContainerGarbageCollector } from './container-gc.js';
import type { ContainerGCPolicy } from './container-gc-policy.js';
import { NODE_NAME_LABEL } from './sandbox.js';

const SECOND = 1000;
const HOUR = 3_600_000;
/** "Now" in each case: containers created at second N are N s after the clock's start, long before. */
const NOW = 2 * HOUR;

type State = 'exited' | 'running' | 'created';
interface GCContainer {
  pod: string;
  name: string;
  attempt: number;
  /** Seconds after the start, or `now` (too young for a minimum age). */
  createdAt: number | 'now';
  state: State;
  sandboxAttempt?: number;
  /** The node whose kubelet made it (default node1, the collector's). */
  node?: string;
}
interface GCSandbox {
  pod: string;
  attempt: number;
  ready: boolean;
  createdAt: number;
}
interface PodStates {
  deleted: string[];
  terminated: string[];
}

const c = (
  pod: string,
  name: string,
  attempt: number,
  createdAt: number | 'now',
  state: State = 'exited',
) => ({
  pod,
  name,
  attempt,
  createdAt,
  state,
});

/** Exited containers of attempts `newest` … 0, each created at second = its attempt. */
const attempts = (pod: string, name: string, newest: number) =>
  Array.from({ length: newest + 1 }, (_, i) => c(pod, name, newest - i, newest - i));

async function world(
  pods: PodStates,
  options: { allSourcesReady?: boolean; policy?: ContainerGCPolicy } = {},
) {
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const runtime = new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0, writeLogs: false } });
  runtime.loadImage('test-image');
  const podLogsDir = await mkdtemp(join(tmpdir(), 'nodelet-gc-logs-'));
  const gc = new ContainerGarbageCollector(
    {
      runtime,
      removeContainer: async (containerId) => void (await runtime.removeContainer({ containerId })),
      clock,
      logger,
      nodeName: 'node1',
      podLogsDir,
      pods: {
        isDeleted: (uid) => pods.deleted.includes(uid),
        isTerminated: (uid) => pods.terminated.includes(uid),
      },
      allSourcesReady: () => options.allSourcesReady ?? true,
    },
    options.policy,
  );
  const sandboxIds = new Map<string, string>();
  const runSandbox = async (pod: string, attempt: number, node = 'node1') => {
    const { podSandboxId } = await runtime.runPodSandbox({
      config: PodSandboxConfig.fromPartial({
        metadata: { name: pod, namespace: 'test-ns', uid: pod, attempt },
        logDirectory: join(podLogsDir, `test-ns_${pod}_${pod}`),
        labels: {
          [CriLabels.PodName]: pod,
          [CriLabels.PodNamespace]: 'test-ns',
          [CriLabels.PodUID]: pod,
          [NODE_NAME_LABEL]: node,
        },
      }),
      runtimeHandler: '',
    });
    sandboxIds.set(`${node}/${pod}/${attempt}`, podSandboxId);
    return podSandboxId;
  };
  const at = (ms: number) => clock.advance(Math.max(0, ms - clock.elapsed()));

  /** Creates the sandboxes, then the containers, each at its time; returns their ids in table order. */
  async function populate(sandboxes: GCSandbox[], containers: GCContainer[]) {
    const byTime = <T extends { createdAt: number | 'now' }>(list: T[]) =>
      list
        .map((item, index) => ({ item, index, ms: item.createdAt === 'now' ? NOW : item.createdAt * SECOND }))
        .sort((a, b) => a.ms - b.ms);
    const sbIds: string[] = [];
    for (const { item, index, ms } of byTime(sandboxes)) {
      await at(ms);
      sbIds[index] = await runSandbox(item.pod, item.attempt);
    }
    const ids: string[] = [];
    for (const { item, index, ms } of byTime(containers)) {
      await at(ms);
      const key = `${item.node ?? 'node1'}/${item.pod}/${item.sandboxAttempt ?? 0}`;
      const podSandboxId =
        sandboxIds.get(key) ?? (await runSandbox(item.pod, item.sandboxAttempt ?? 0, item.node));
      const sandboxConfig = runtime.sandboxConfig(podSandboxId);
      const { containerId } = await runtime.createContainer({
        podSandboxId,
        sandboxConfig,
        config: ContainerConfig.fromPartial({
          metadata: { name: item.name, attempt: item.attempt },
          image: { image: 'test-image' },
          labels: { ...sandboxConfig.labels, [CriLabels.ContainerName]: item.name },
          logPath: `${item.name}/${item.attempt}.log`,
        }),
      });
      if (item.state !== 'created') await runtime.startContainer({ containerId });
      if (item.state === 'exited') runtime.killContainer(containerId, 0);
      ids[index] = containerId;
    }
    for (const [i, sb] of sandboxes.entries()) {
      if (!sb.ready) await runtime.stopPodSandbox({ podSandboxId: sbIds[i]! });
    }
    await at(NOW);
    return { containerIds: ids, sandboxIds: sbIds };
  }
  const remaining = async (ids: string[], list: () => Promise<string[]>) => {
    const left = new Set(await list());
    return ids.flatMap((id, i) => (left.has(id) ? [i] : []));
  };
  return {
    clock,
    runtime,
    gc,
    podLogsDir,
    populate,
    remainingContainers: (ids: string[]) =>
      remaining(ids, async () => (await runtime.listContainers({})).containers.map((x) => x.id)),
    remainingSandboxes: (ids: string[]) =>
      remaining(ids, async () => (await runtime.listPodSandbox({})).items.map((x) => x.id)),
  };
}

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

const sb = (pod: string, attempt: number, ready: boolean, createdAt = 0): GCSandbox => ({
  pod,
  attempt,
  ready,
  createdAt,
});

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

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { PodSandboxState, type RuntimeService } from '@nodelet/cri';
import { createLogger, EventBus, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { Kubelet } from './kubelet.js';
import { RuntimeCache } from './runtime-cache.js';
import type { RuntimeContainer } from './runtime-pod.js';
import { makePod, TestSource } from './test-harness.js';

/**
 * The runtime cache spares CRI calls that cannot tell the kubelet anything new; these tests count the
 * calls a kubelet makes to the (fake) runtime, as containerd would receive them. A CRI call costs
 * containerd milliseconds of CPU on a small node, and the kubelet's share of a pod start is the point.
 */
type Calls = Map<string, number>;

/** A kubelet on the fake runtime under virtual time whose CRI calls are counted, by method. */
function countingKubelet(clock = new VirtualClock(), fake?: FakeRuntime, housekeepingPeriodMs?: number) {
  const logger = createLogger({ sink: () => {} });
  const runtime = fake ?? new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0 } });
  runtime.loadImage('busybox:1.36'); // present, as on a node that runs it (IfNotPresent: no pull)
  const calls: Calls = new Map();
  /** The per-pod calls (not whole-runtime lists), in the order they were made. */
  const order: string[] = [];
  /** Hooks run before a call is made, by method (to interleave a relist with a sync). */
  const before = new Map<string, () => Promise<void>>();
  const counted = new Proxy(runtime, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return async (...args: unknown[]) => {
        // A List* call with a filter reads one pod; without, it is PLEG or housekeeping reading them all.
        // Version is of the runtime, not of a pod (the kubelet asks it at start, for container IDs).
        const filter = (args[0] as { filter?: { labelSelector?: object } } | undefined)?.filter;
        const key =
          (prop.startsWith('list') && !filter?.labelSelector) || prop === 'version' ? `${prop}(all)` : prop;
        calls.set(key, (calls.get(key) ?? 0) + 1);
        if (!key.endsWith('(all)')) order.push(key);
        await before.get(prop)?.();
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as FakeRuntime & RuntimeService;
  const source = new TestSource();
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-cache-'));
  const kubelet = new Kubelet(
    { runtime: counted, images: counted, bus: new EventBus(clock, logger), clock, logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      sources: [source],
      housekeepingPeriodMs,
    },
  );
  const perPod = () =>
    Object.fromEntries(
      [...calls].filter(([k]) => !k.endsWith('(all)')).sort(([a], [b]) => a.localeCompare(b)),
    );
  const running = (uid: string) => {
    const status = kubelet.podList().items.find((p) => p.metadata?.uid === uid)?.status;
    return status?.phase === 'Running' && !!status.containerStatuses?.[0]?.state?.running;
  };
  return {
    clock,
    runtime,
    kubelet,
    source,
    calls,
    order,
    before,
    perPod,
    running,
    async stop() {
      await kubelet.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const startOnly = {
  runPodSandbox: 1,
  podSandboxStatus: 1, // the pod IP
  imageStatus: 1, // pull policy IfNotPresent
  createContainer: 1,
  startContainer: 1,
  containerStatus: 1, // the started container's start time and image ref, for the pod's status
};

test('a new pod starts without listing the runtime for it: the three calls of a direct client, three reads', async (t) => {
  const k = countingKubelet();
  t.teardown(() => k.stop());
  await k.kubelet.start();
  await k.clock.advance(1_000); // one PLEG relist: the runtime holds nothing for the pod
  k.source.set([makePod('web', {})]);
  await k.clock.advance(0);
  t.true(k.running('uid-web'));
  t.deepEqual(k.perPod(), startOnly);
  // The sandbox's IP is read before the container is created: the pod's /etc/hosts, which the
  // container mounts, names it (upstream reads it at the same point). It is in the pod's status too.
  const at = (call: string) => k.order.indexOf(call);
  t.true(at('runPodSandbox') < at('podSandboxStatus'), k.order.join(', '));
  t.true(at('podSandboxStatus') < at('createContainer'), k.order.join(', '));
  const status = k.kubelet.podList().items.find((p) => p.metadata?.uid === 'uid-web')?.status;
  t.truthy(status?.podIP);
  t.deepEqual(status?.podIPs, [{ ip: status!.podIP! }]);

  // The relists that see the new sandbox and container find what the sync saw: no second sync.
  await k.clock.advance(5_000);
  t.deepEqual(k.perPod(), startOnly);
  t.true(k.running('uid-web'));
});

test('a PLEG relist racing the first sync does not cause a second sync', async (t) => {
  const k = countingKubelet();
  t.teardown(() => k.stop());
  await k.kubelet.start();
  await k.clock.advance(1_000);
  // While StartContainer is on its way, a relist sees the new sandbox ready and the container created.
  let relists = 0;
  k.before.set('startContainer', async () => {
    relists++;
    await k.kubelet.pleg.relist();
  });
  k.source.set([makePod('web', {})]);
  await k.clock.advance(0);
  t.is(relists, 1);
  t.true(k.running('uid-web'));
  await k.clock.advance(3_000);
  t.deepEqual(k.perPod(), startOnly, 'one sync: the pod is not listed again');
});

test('a skipped sync keeps the periodic resync, which reads the pod and reuses the running container', async (t) => {
  const k = countingKubelet();
  t.teardown(() => k.stop());
  await k.kubelet.start();
  await k.clock.advance(1_000);
  k.source.set([makePod('web', {})]);
  await k.clock.advance(59_000);
  t.deepEqual(k.perPod(), startOnly);
  await k.clock.advance(1_000); // the resync (syncFrequency 1 min)
  t.deepEqual(k.perPod(), {
    ...startOnly,
    listContainers: 1,
    listPodSandbox: 1, // the sandbox's IP is remembered, the running container's details too
  });
  t.true(k.running('uid-web'));
});

test('a container that dies is read again, and restarted', async (t) => {
  const k = countingKubelet();
  t.teardown(() => k.stop());
  await k.kubelet.start();
  await k.clock.advance(1_000);
  k.source.set([makePod('crash', {}, { 'runtime-fake.nodelet.dev/main': 'exitAfter=3s,exitCode=1' })]);
  await k.clock.advance(5_000);
  const status = k.kubelet.podList().items[0]!.status!;
  t.is(status.containerStatuses![0]!.restartCount, 1);
  t.is(status.containerStatuses![0]!.lastState?.terminated?.exitCode, 1);
  t.true(k.running('uid-crash'));
  t.is(k.calls.get('startContainer'), 2);
});

test('a restarted kubelet whose source arrives after PLEG relisted still adopts the running pod', async (t) => {
  const clock = new VirtualClock();
  const first = countingKubelet(clock);
  await first.kubelet.start();
  await clock.advance(1_000);
  first.source.set([makePod('web', {})]);
  await clock.advance(2_000);
  const before = (await first.runtime.listContainers({})).containers.map((c) => c.id);
  await first.stop();

  // Housekeeping held off: the test source's first (empty) snapshot would make the pod an orphan.
  const second = countingKubelet(clock, first.runtime, 60_000);
  t.teardown(() => second.stop());
  await second.kubelet.start();
  await clock.advance(3_000); // PLEG has seen the pod's sandbox and container
  second.source.set([makePod('web', {})]);
  await clock.advance(2_000);
  t.deepEqual(
    (await first.runtime.listContainers({})).containers.map((c) => c.id),
    before,
  );
  t.true(second.running('uid-web'));
  t.is(second.calls.get('runPodSandbox'), undefined, 'nothing recreated');
  t.is(second.calls.get('listContainers'), 1, 'the pod was read, not assumed empty');
});

const container = (id: string, state: RuntimeContainer['state']): RuntimeContainer => ({
  id,
  name: 'main',
  state,
  image: 'busybox',
  imageRef: 'sha256:1',
  createdAt: 1,
  startedAt: 2,
  finishedAt: 0,
  exitCode: 0,
  reason: '',
  message: '',
  restartCount: 0,
  hash: 'h',
});

test('RuntimeCache: a pod is known empty only after a relist that started after its last creation', async (t) => {
  const cache = new RuntimeCache();
  t.false(cache.knownEmpty('a'), 'nothing is known before the first relist');
  let r = cache.relistStarted();
  cache.relistDone(r, new Set(['b']), new Set());
  t.true(cache.knownEmpty('a'));
  t.false(cache.knownEmpty('b'), 'the runtime holds something of b');

  // A creation in flight, and one that finished after the relist started, make `a` unknown again.
  let finish!: () => void;
  const creation = cache.creating('a', () => new Promise<void>((resolve) => (finish = resolve)));
  t.false(cache.knownEmpty('a'));
  r = cache.relistStarted(); // this relist's lists may miss the creation
  finish();
  await creation;
  cache.relistDone(r, new Set(), new Set());
  t.false(cache.knownEmpty('a'));
  r = cache.relistStarted();
  cache.relistDone(r, new Set(['a']), new Set());
  t.false(cache.knownEmpty('a'));
  // A creation that failed (nothing made) is settled by the next relist that does not see the pod.
  await cache.creating('c', () => Promise.reject(new Error('refused'))).catch(() => undefined);
  t.false(cache.knownEmpty('c'));
  r = cache.relistStarted();
  cache.relistDone(r, new Set(['a']), new Set());
  t.true(cache.knownEmpty('c'));
  t.deepEqual(
    cache.size,
    { runningContainers: 0, createdPods: 0 },
    'creations covered by a relist are forgotten',
  );

  // A relist that started earlier but finished later does not overwrite a newer one.
  const older = cache.relistStarted();
  const newer = cache.relistStarted();
  cache.relistDone(newer, new Set(), new Set());
  cache.relistDone(older, new Set(['a', 'c']), new Set());
  t.true(cache.knownEmpty('c'));
});

test('RuntimeCache: a container status is reused only while lists show the container running', (t) => {
  const cache = new RuntimeCache();
  cache.containerRead('p', container('c1', 'running'));
  cache.containerRead('p', container('c2', 'created'));
  t.is(cache.runningContainer('c1')?.startedAt, 2);
  t.is(cache.runningContainer('c2'), undefined, 'a created container changes: not kept');
  cache.podListed('p', new Set(['c1']));
  t.truthy(cache.runningContainer('c1'));
  cache.podListed('p', new Set());
  t.is(cache.runningContainer('c1'), undefined, 'the pod list shows it no longer running');
  cache.containerRead('p', container('c3', 'running'));
  cache.relistDone(cache.relistStarted(), new Set(['p']), new Set());
  t.is(cache.runningContainer('c3'), undefined, 'a relist shows it no longer running');
  cache.containerRead('p', container('c4', 'running'));
  cache.forgetContainer('c4');
  t.is(cache.runningContainer('c4'), undefined, 'the kubelet stops it');
});

test('a new pod on the pod network creates no container before its sandbox IP is known (its /etc/hosts and env name it)', async (t) => {
  const k = countingKubelet();
  t.teardown(() => k.stop());
  await k.kubelet.start();
  await k.clock.advance(1_000);
  // PodSandboxStatus (the pod IP) answers only when the test says so.
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  k.before.set('podSandboxStatus', () => answered);
  const withIP = makePod('with-ip', {
    containers: [
      {
        name: 'main',
        image: 'busybox:1.36',
        imagePullPolicy: 'IfNotPresent',
        env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
      },
    ],
  });
  k.source.set([makePod('plain', {}), withIP]);
  await k.clock.advance(0);
  const created = () =>
    k.runtime
      .listContainers({})
      .then((r) => r.containers.map((c) => c.labels['io.kubernetes.pod.name']).sort());
  t.deepEqual(await created(), [], 'neither container is created while the IP is unknown');

  answer();
  await k.clock.advance(0);
  await k.kubelet.workers.whenIdle();
  t.deepEqual(await created(), ['plain', 'with-ip']);
  const { containers } = await k.runtime.listContainers({});
  const id = containers.find((c) => c.labels['io.kubernetes.pod.name'] === 'with-ip')!.id;
  const env = Object.fromEntries(k.runtime.containerConfig(id).envs.map((e) => [e.key, e.value]));
  const podIP = k.kubelet.podList().items.find((p) => p.metadata?.name === 'with-ip')!.status!.podIP;
  t.regex(podIP ?? '', /^\d+\.\d+\.\d+\.\d+$/);
  t.is(env.POD_IP, podIP ?? '');
  t.true(k.running('uid-plain') && k.running('uid-with-ip'));
  t.is(k.calls.get('podSandboxStatus'), 2, 'one PodSandboxStatus per pod');
});

test('a sandbox whose pause process died is seen by the next relist and replaced, not at the next resync', async (t) => {
  const k = countingKubelet();
  t.teardown(() => k.stop());
  await k.kubelet.start();
  await k.clock.advance(1_000);
  k.source.set([makePod('web', {})]);
  await k.clock.advance(2_000);
  const [first] = (await k.runtime.listPodSandbox({})).items;
  // The runtime reports the sandbox NOTREADY; the app container still runs (as containerd does when
  // the pause process dies).
  const store = (k.runtime as unknown as { store: { sandbox(id: string): { state: PodSandboxState } } })
    .store;
  store.sandbox(first!.id).state = PodSandboxState.SANDBOX_NOTREADY;
  await k.clock.advance(2_000);
  const ready = (await k.runtime.listPodSandbox({})).items.filter(
    (s) => s.state === PodSandboxState.SANDBOX_READY,
  );
  t.is(ready.length, 1);
  t.not(ready[0]!.id, first!.id);
  t.is(ready[0]!.metadata?.attempt, 1);
  t.true(k.running('uid-web'));
});

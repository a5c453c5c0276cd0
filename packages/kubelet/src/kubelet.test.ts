import test from 'ava';
import { createLogger, EventBus, MemorySink } from '@nodelet/kernel';
import { podCells } from '@nodelet/api';
import { Kubelet } from './kubelet.js';
import { makePod, recordStarts, startHarness, TestSource } from './test-harness.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const B = 'runtime-fake.nodelet.dev/';

test('CrashLoopBackOff: first restart at once, then 10, 20, 40, 80, 160, 300, 300 s; status and restart count follow', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  h.source.set([makePod('crash', {}, { [`${B}main`]: 'exitAfter=0s,exitCode=1' })]);
  await h.clock.advance(950_000);
  const gaps = starts.slice(1).map((s, i) => (s.at - starts[i]!.at) / 1000);
  // The first restart waits only for PLEG to notice the death (relist every 1 s).
  t.deepEqual(gaps, [1, 10, 20, 40, 80, 160, 300, 300]);

  await h.clock.advance(1_000);
  const status = h.status('uid-crash');
  const main = status.containerStatuses![0]!;
  t.is(main.state?.waiting?.reason, 'CrashLoopBackOff');
  t.regex(
    main.state?.waiting?.message ?? '',
    /^back-off 5m0s restarting failed container=main pod=crash_default\(uid-crash\)$/,
  );
  t.is(main.restartCount, starts.length - 1);
  t.is(main.lastState?.terminated?.exitCode, 1);
  t.is(main.lastState?.terminated?.reason, 'Error');
  t.is(status.phase, 'Running');
  await h.kubelet.stop();
});

test('CrashLoopBackOff resets after 600 s without a failure', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  h.source.set([makePod('flaky', {}, { [`${B}main`]: 'exitAfter=0s,exitCode=1' })]);
  await h.clock.advance(32_000); // starts at 0, 1, 11, 31 s: backoff now 40 s
  t.is(starts.length, 4);
  // The next instance runs for 11 minutes before it fails.
  const undo = h.runtime.script('main', { exitAfterMs: 660_000, exitCode: 1 });
  await h.clock.advance(40_000); // 4th restart at 71 s
  t.is(starts.length, 5);
  undo();
  await h.clock.advance(660_000 + 1_000);
  t.is(starts.length, 6);
  // Restarted as soon as the kubelet saw it (PLEG or the periodic resync): the backoff started over.
  t.true(starts[5]!.at - starts[4]!.at <= 660_000 + 1_000);
  await h.clock.advance(12_000);
  const gap = starts[6]!.at - starts[5]!.at;
  t.true(gap >= 10_000 && gap <= 11_000, `then the first delay is 10 s again (was ${gap} ms)`);
  await h.kubelet.stop();
});

test('OnFailure: a container that exits 0 makes the pod Succeeded and is not restarted', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  h.source.set([makePod('job', { restartPolicy: 'OnFailure' }, { [`${B}main`]: 'exitAfter=5s,exitCode=0' })]);
  await h.clock.advance(300_000);
  t.is(starts.length, 1);
  const status = h.status('uid-job');
  t.is(status.phase, 'Succeeded');
  t.is(status.containerStatuses![0]!.state?.terminated?.reason, 'Completed');
  t.is(status.conditions?.find((c) => c.type === 'Ready')?.reason, 'PodCompleted');
  await h.kubelet.stop();
});

test('a pod its source removed lists as Terminating until it is gone, not Running or Error (143)', async (t) => {
  const h = await startHarness();
  // Shuts down 3 s after SIGTERM, with 143 (128 + SIGTERM).
  h.source.set([makePod('web', { terminationGracePeriodSeconds: 30 }, { [`${B}main`]: 'stopDelay=3s' })]);
  await h.clock.advance(2_000);
  const listed = () => h.kubelet.podList().items.find((p) => p.metadata?.name === 'web');
  t.is(podCells(listed()!, h.clock.now()).status, 'Running');
  h.source.set([]);
  const removedAt = h.clock.now();
  const seen = new Set<string>();
  let steps = 0;
  for (let pod = listed(); pod && steps < 100; pod = listed(), steps++) {
    seen.add(podCells(pod, h.clock.now()).status);
    t.is(
      pod.metadata!.deletionTimestamp,
      new Date(Math.floor(removedAt / 1000) * 1000).toISOString().replace('.000Z', 'Z'),
    );
    t.is(pod.metadata!.deletionGracePeriodSeconds, 30);
    await h.clock.advance(50);
  }
  t.true(steps >= 3000 / 50, `listed for the ${steps * 50} ms its container took to stop`);
  t.is(listed(), undefined, 'gone once terminated');
  t.deepEqual([...seen], ['Terminating']);
  await h.kubelet.stop();
});

test('OnFailure: a container that exits 1 is restarted', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  h.source.set([
    makePod('retry', { restartPolicy: 'OnFailure' }, { [`${B}main`]: 'exitAfter=5s,exitCode=1' }),
  ]);
  await h.clock.advance(30_000);
  t.true(starts.length >= 2);
  t.is(h.status('uid-retry').phase, 'Running');
  await h.kubelet.stop();
});

test('Never: a container that exits 1 makes the pod Failed and is not restarted', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  h.source.set([makePod('once', { restartPolicy: 'Never' }, { [`${B}main`]: 'exitAfter=2s,exitCode=1' })]);
  await h.clock.advance(300_000);
  t.is(starts.length, 1);
  const status = h.status('uid-once');
  t.is(status.phase, 'Failed');
  t.is(status.containerStatuses![0]!.state?.terminated?.exitCode, 1);
  await h.kubelet.stop();
});

test('init containers run one at a time, in order, before the app containers', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  const image = 'busybox:1.36';
  h.source.set([
    makePod(
      'init',
      {
        initContainers: [
          { name: 'init-a', image },
          { name: 'init-b', image },
        ],
        containers: [{ name: 'main', image }],
      },
      { [`${B}init-a`]: 'exitAfter=3s,exitCode=0', [`${B}init-b`]: 'exitAfter=3s,exitCode=0' },
    ),
  ]);
  await h.clock.advance(2_000);
  t.is(h.status('uid-init').phase, 'Pending');
  t.is(h.status('uid-init').containerStatuses![0]!.state?.waiting?.reason, 'PodInitializing');
  await h.clock.advance(20_000);
  t.deepEqual(
    starts.map((s) => s.name),
    ['init-a', 'init-b', 'main'],
  );
  t.true(starts[1]!.at >= starts[0]!.at + 3_000, 'init-b starts after init-a finished');
  t.true(starts[2]!.at >= starts[1]!.at + 3_000, 'main starts after init-b finished');
  const status = h.status('uid-init');
  t.is(status.phase, 'Running');
  t.is(status.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');
  await h.kubelet.stop();
});

test('a failing init container blocks the app containers and is retried with backoff (Always)', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  h.source.set([
    makePod(
      'badinit',
      { initContainers: [{ name: 'init-a', image: 'busybox:1.36' }] },
      { [`${B}init-a`]: 'exitAfter=1s,exitCode=1' },
    ),
  ]);
  await h.clock.advance(60_000);
  t.true(starts.length >= 3, 'init-a retried');
  t.true(
    starts.every((s) => s.name === 'init-a'),
    'main never started',
  );
  const status = h.status('uid-badinit');
  t.is(status.phase, 'Pending');
  t.is(status.initContainerStatuses![0]!.state?.waiting?.reason, 'CrashLoopBackOff');
  t.is(status.conditions?.find((c) => c.type === 'Initialized')?.status, 'False');
  await h.kubelet.stop();
});

test('a failing init container with restartPolicy Never fails the pod', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  h.source.set([
    makePod(
      'badinit-never',
      { restartPolicy: 'Never', initContainers: [{ name: 'init-a', image: 'busybox:1.36' }] },
      { [`${B}init-a`]: 'exitAfter=1s,exitCode=1' },
    ),
  ]);
  await h.clock.advance(60_000);
  t.deepEqual(
    starts.map((s) => s.name),
    ['init-a'],
  );
  t.is(h.status('uid-badinit-never').phase, 'Failed');
  await h.kubelet.stop();
});

test('grace period: a container that ignores SIGTERM is killed at the grace deadline, not before', async (t) => {
  const h = await startHarness();
  h.source.set([
    makePod('stubborn', { terminationGracePeriodSeconds: 45 }, { [`${B}main`]: 'ignoreStop=true' }),
  ]);
  await h.clock.advance(2_000);
  const [container] = (await h.runtime.listContainers({})).containers;
  t.truthy(container);
  const removedAt = h.clock.elapsed();
  h.source.set([]);
  await h.clock.advance(44_999);
  const before = await h.runtime.containerStatus({ containerId: container!.id, verbose: false });
  t.is(before.status?.state, 1 /* RUNNING */, 'still running 1 ms before the deadline');
  await h.clock.advance(1);
  const after = await h.runtime
    .containerStatus({ containerId: container!.id, verbose: false })
    .catch(() => undefined);
  // Killed exactly at the deadline (then removed with the pod).
  if (after?.status) {
    t.is(after.status.exitCode, 137);
    t.is(
      Number(after.status.finishedAt / 1_000_000n) - h.clock.now() + h.clock.elapsed(),
      removedAt + 45_000,
    );
  }
  await h.clock.advance(5_000);
  t.is((await h.runtime.listContainers({})).containers.length, 0, 'containers removed');
  t.is((await h.runtime.listPodSandbox({})).items.length, 0, 'sandbox removed');
  t.is(h.kubelet.podList().items.length, 0);
  await h.kubelet.stop();
});

test('image pull policy: Never without the image → ErrImageNeverPull; a missing image → ErrImagePull then ImagePullBackOff', async (t) => {
  const h = await startHarness();
  h.source.set([
    makePod('never', {
      containers: [{ name: 'main', image: 'example.com/absent:1', imagePullPolicy: 'Never' }],
    }),
    makePod('missing', { containers: [{ name: 'main', image: 'example.com/nope:1' }] }),
  ]);
  h.runtime.setImageMissing('example.com/nope:1');
  await h.clock.advance(100);
  await h.kubelet.workers.whenIdle(); // the sync did real file-system work (the pod log directory)
  const never = h.status('uid-never').containerStatuses![0]!.state?.waiting;
  t.is(never?.reason, 'ErrImageNeverPull');
  t.is(never?.message, 'Container image "example.com/absent:1" is not present with pull policy of Never');
  const first = h.status('uid-missing').containerStatuses![0]!.state?.waiting;
  t.is(first?.reason, 'ErrImagePull');
  t.regex(first?.message ?? '', /^Failed to pull image "example.com\/nope:1": .*not found/);
  await h.clock.advance(2_000);
  await h.kubelet.workers.whenIdle();
  t.is(h.status('uid-missing').containerStatuses![0]!.state?.waiting?.reason, 'ImagePullBackOff');
  t.is(h.status('uid-missing').phase, 'Pending');
  await h.kubelet.stop();
});

test('a restarted kubelet adopts running pods without recreating a container', async (t) => {
  const h = await startHarness();
  h.source.set([makePod('web', {}), makePod('db', {})]);
  await h.clock.advance(2_000);
  const before = (await h.runtime.listContainers({})).containers.map((c) => c.id).sort();
  t.is(before.length, 2);
  await h.kubelet.stop();

  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink });
  const bus = new EventBus(h.clock, logger);
  const source = new TestSource();
  const dir = join(tmpdir(), `nodelet-adopt-${process.pid}`);
  const second = new Kubelet(
    { runtime: h.runtime, images: h.runtime, bus, clock: h.clock, logger },
    { nodeName: 'node1', hostIP: '192.0.2.10', rootDir: dir, podLogsDir: dir, sources: [source] },
  );
  await second.start();
  source.set([makePod('web', {}), makePod('db', {})]);
  await h.clock.advance(10_000);
  const after = (await h.runtime.listContainers({})).containers.map((c) => c.id).sort();
  t.deepEqual(after, before);
  t.is(second.podList().items.filter((p) => p.status?.phase === 'Running').length, 2);
  await second.stop();
});

test('pods deleted while the kubelet was down are cleaned up once the sources were seen', async (t) => {
  const h = await startHarness();
  h.source.set([makePod('gone', {})]);
  await h.clock.advance(2_000);
  await h.kubelet.stop();
  const logger = createLogger({ sink: () => {} });
  const source = new TestSource();
  const second = new Kubelet(
    { runtime: h.runtime, images: h.runtime, bus: new EventBus(h.clock, logger), clock: h.clock, logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(tmpdir(), 'x'),
      podLogsDir: join(tmpdir(), 'x'),
      sources: [source],
    },
  );
  await second.start();
  source.set([]);
  await h.clock.advance(40_000);
  t.is((await h.runtime.listPodSandbox({})).items.length, 0);
  await second.stop();
});

test('a pod already deleted in its source when the kubelet first sees it (a restart mid-kill) is terminated, never started', async (t) => {
  const h = await startHarness();
  const sandboxes: string[] = [];
  const run = h.runtime.runPodSandbox.bind(h.runtime);
  h.runtime.runPodSandbox = async (req: Parameters<typeof run>[0]) => {
    sandboxes.push(req.config!.metadata!.name);
    return run(req);
  };
  const deleted = makePod('leaving', {});
  deleted.metadata!.deletionTimestamp = new Date(h.clock.now()).toISOString();
  deleted.metadata!.deletionGracePeriodSeconds = 2;
  h.source.set([deleted, makePod('staying', {})]);
  await h.clock.advance(10_000);
  t.deepEqual(sandboxes, ['staying'], 'only the pod that is not being deleted got a sandbox');
  t.is(h.kubelet.podList().items.filter((p) => p.metadata?.name === 'leaving').length, 0);
  await h.kubelet.stop();
});

test('container IDs name the runtime as its CRI Version does: <runtimeName>://<id> (the fake runtime is nodelet-fake)', async (t) => {
  const h = await startHarness();
  h.source.set([makePod('job', { restartPolicy: 'Never' }, { [`${B}main`]: 'exitAfter=5s,exitCode=0' })]);
  await h.clock.advance(1_000);
  const running = h.status('uid-job').containerStatuses![0]!;
  t.regex(running.containerID!, /^nodelet-fake:\/\/[0-9a-f]{64}$/);
  await h.clock.advance(10_000);
  const done = h.status('uid-job').containerStatuses![0]!.state?.terminated;
  t.is(done?.containerID, running.containerID);
  await h.kubelet.stop();
});

import test, { type ExecutionContext } from 'ava';
import { type ErrorCode, isErrorCode, NodeletError } from '@nodelet/kernel';
import { ContainerState, PodSandboxState } from '@nodelet/cri';
import { createContainer, runPod, sandboxConfig, setup, startContainer, track } from './fixtures.js';

const EPOCH_NS = BigInt(Date.UTC(2026, 0, 1)) * 1_000_000n;
const ns = (ms: number) => EPOCH_NS + BigInt(ms) * 1_000_000n;
const behave = (container: string, value: string) => ({ [`runtime-fake.nodelet.dev/${container}`]: value });

function code(t: ExecutionContext, err: unknown, expected: ErrorCode) {
  t.true(err instanceof NodeletError, `expected a NodeletError, got ${String(err)}`);
  t.is((err as NodeletError).code, expected);
}

test('containers go CREATED → RUNNING → EXITED (143 on SIGTERM) → removed', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'web');
  await clock.advance(1000);
  const id = await createContainer(runtime, pod, 'app');
  t.regex(id, /^[0-9a-f]{64}$/);

  let s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.state, ContainerState.CONTAINER_CREATED);
  t.is(s.createdAt, ns(1000));
  t.is(s.startedAt, 0n);

  await clock.advance(500);
  await runtime.startContainer({ containerId: id });
  s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.state, ContainerState.CONTAINER_RUNNING);
  t.is(s.startedAt, ns(1500));
  t.is(s.reason, '');

  await clock.advance(500);
  await runtime.stopContainer({ containerId: id, timeout: 30n });
  s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.state, ContainerState.CONTAINER_EXITED);
  t.is(s.exitCode, 143);
  t.is(s.reason, 'Error');
  t.is(s.finishedAt, ns(2000));

  await runtime.removeContainer({ containerId: id });
  const err = await t.throwsAsync(runtime.containerStatus({ containerId: id, verbose: false }));
  code(t, err, 'NotFound');
  t.is(err?.message, `an error occurred when try to find container "${id}": not found`);
});

test('start is refused unless the container is CREATED; unknown ids are NotFound', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'web');
  const id = await startContainer(runtime, pod, 'app');
  code(t, await t.throwsAsync(runtime.startContainer({ containerId: id })), 'FailedPrecondition');
  code(t, await t.throwsAsync(runtime.startContainer({ containerId: 'nope' })), 'NotFound');
  code(t, await t.throwsAsync(runtime.stopContainer({ containerId: 'nope', timeout: 1n })), 'NotFound');
  code(
    t,
    await t.throwsAsync(runtime.podSandboxStatus({ podSandboxId: 'nope', verbose: false })),
    'NotFound',
  );
});

test('stop and remove are idempotent', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'web');
  const id = await startContainer(runtime, pod, 'app');
  await runtime.stopContainer({ containerId: id, timeout: 10n });
  await runtime.stopContainer({ containerId: id, timeout: 10n });
  const s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.exitCode, 143, 'a second stop does not change how it exited');
  await runtime.removeContainer({ containerId: id });
  await t.notThrowsAsync(runtime.removeContainer({ containerId: id }));
  await t.notThrowsAsync(runtime.removeContainer({ containerId: 'never-existed' }));
  await runtime.stopPodSandbox({ podSandboxId: pod });
  await runtime.stopPodSandbox({ podSandboxId: pod });
  await runtime.removePodSandbox({ podSandboxId: pod });
  await t.notThrowsAsync(runtime.removePodSandbox({ podSandboxId: pod }));
  t.deepEqual(runtime.counts(), { sandboxes: 0, containers: 0, running: 0, images: 2, podIPs: 0 });
});

test('a restart is a new container with a new id; the same attempt twice is refused like containerd', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'web');
  const first = await startContainer(runtime, pod, 'app', { attempt: 0 });
  runtime.killContainer(first, 1);
  const dup = await t.throwsAsync(createContainer(runtime, pod, 'app', { attempt: 0 }));
  code(t, dup, 'AlreadyExists');
  t.regex(
    dup!.message,
    /failed to reserve container name "app_web_default_uid-web_0": name ".*" is reserved for "[0-9a-f]{64}"/,
  );
  const second = await startContainer(runtime, pod, 'app', { attempt: 1 });
  t.not(second, first);
  const { containers } = await runtime.listContainers({
    filter: { id: '', podSandboxId: pod, labelSelector: {} },
  });
  t.deepEqual(
    containers.map((c) => [c.metadata?.attempt, c.state]),
    [
      [0, ContainerState.CONTAINER_EXITED],
      [1, ContainerState.CONTAINER_RUNNING],
    ],
  );
  t.true(containers[1]!.createdAt > containers[0]!.createdAt, 'creation order is total even in one instant');
  await runtime.removeContainer({ containerId: first });
  await t.notThrowsAsync(
    createContainer(runtime, pod, 'app', { attempt: 0 }),
    'the name is free once removed',
  );
});

test('exitAfter exits at exactly startedAt + the delay with the scripted code', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'job', {
    annotations: { ...behave('main', 'exitAfter=5s,exitCode=3'), ...behave('ok', 'exitAfter=5s') },
  });
  await clock.advance(250);
  const main = await startContainer(runtime, pod, 'main');
  const ok = await startContainer(runtime, pod, 'ok');
  t.is(clock.pendingTimers(), 2);
  await clock.advance(4999);
  t.is(
    (await runtime.containerStatus({ containerId: main, verbose: false })).status!.state,
    ContainerState.CONTAINER_RUNNING,
  );
  await clock.advance(1);
  const s = (await runtime.containerStatus({ containerId: main, verbose: false })).status!;
  t.is(s.state, ContainerState.CONTAINER_EXITED);
  t.is(s.exitCode, 3);
  t.is(s.reason, 'Error');
  t.is(s.startedAt, ns(250));
  t.is(s.finishedAt, ns(5250));
  const done = (await runtime.containerStatus({ containerId: ok, verbose: false })).status!;
  t.is(done.exitCode, 0);
  t.is(done.reason, 'Completed');
  t.is(clock.pendingTimers(), 0);
});

test('ignoreStop: killed with 137 at exactly the grace deadline, not a millisecond before', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'stubborn', { annotations: behave('app', 'ignoreStop=true') });
  const id = await startContainer(runtime, pod, 'app');
  await clock.advance(1000);
  const stop = track(runtime.stopContainer({ containerId: id, timeout: 30n }));
  await clock.advance(29_999);
  t.false(stop.settled, 'still stopping at timeout − 1 ms');
  t.is(
    (await runtime.containerStatus({ containerId: id, verbose: false })).status!.state,
    ContainerState.CONTAINER_RUNNING,
  );
  await clock.advance(1);
  t.true(stop.settled);
  await stop.promise;
  const s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.exitCode, 137);
  t.is(s.reason, 'Error');
  t.is(s.finishedAt, ns(31_000));
  t.is(clock.pendingTimers(), 0);
});

test('a second stop with a shorter grace period brings the kill forward; timeout 0 kills at once', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', { annotations: behave('all', 'ignoreStop') });
  const a = await startContainer(runtime, pod, 'a');
  const b = await startContainer(runtime, pod, 'b');
  const first = track(runtime.stopContainer({ containerId: a, timeout: 30n }));
  await clock.advance(1000);
  const second = track(runtime.stopContainer({ containerId: a, timeout: 2n }));
  await clock.advance(1999);
  t.false(first.settled);
  await clock.advance(1);
  t.true(first.settled && second.settled);
  t.is((await runtime.containerStatus({ containerId: a, verbose: false })).status!.finishedAt, ns(3000));

  await runtime.stopContainer({ containerId: b, timeout: 0n });
  const s = (await runtime.containerStatus({ containerId: b, verbose: false })).status!;
  t.is(s.exitCode, 137);
  t.is(s.finishedAt, ns(3000));
});

test('stopDelay: a graceful shutdown that takes time, killed if the grace period is shorter', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', { annotations: behave('all', 'stopDelay=3s,stopExitCode=0') });
  const quick = await startContainer(runtime, pod, 'quick');
  const slow = await startContainer(runtime, pod, 'slow');
  const q = track(runtime.stopContainer({ containerId: quick, timeout: 10n }));
  const s = track(runtime.stopContainer({ containerId: slow, timeout: 2n }));
  await clock.advance(2000);
  t.true(s.settled);
  t.false(q.settled);
  await clock.advance(1000);
  t.true(q.settled);
  const quickStatus = (await runtime.containerStatus({ containerId: quick, verbose: false })).status!;
  const slowStatus = (await runtime.containerStatus({ containerId: slow, verbose: false })).status!;
  t.deepEqual([quickStatus.exitCode, quickStatus.reason], [0, 'Completed']);
  t.deepEqual([slowStatus.exitCode, slowStatus.reason], [137, 'Error']);
});

test('crashLoop exits 1 after 1 s and every restart does it again; oom exits 137 OOMKilled', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', {
    annotations: { ...behave('crash', 'crashLoop=true'), ...behave('hog', 'oom=true,exitAfter=10s') },
  });
  for (let attempt = 0; attempt < 3; attempt++) {
    const id = await startContainer(runtime, pod, 'crash', { attempt });
    await clock.advance(1000);
    const s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
    t.deepEqual([s.state, s.exitCode, s.reason], [ContainerState.CONTAINER_EXITED, 1, 'Error']);
  }
  const hog = await startContainer(runtime, pod, 'hog');
  await clock.advance(10_000);
  const s = (await runtime.containerStatus({ containerId: hog, verbose: false })).status!;
  t.deepEqual([s.exitCode, s.reason], [137, 'OOMKilled']);
});

test('startDelay: StartContainer takes that long on the clock', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', { annotations: behave('slow', 'startDelay=2s') });
  const id = await createContainer(runtime, pod, 'slow');
  const start = track(runtime.startContainer({ containerId: id }));
  await clock.advance(1999);
  t.false(start.settled);
  t.is(
    (await runtime.containerStatus({ containerId: id, verbose: false })).status!.state,
    ContainerState.CONTAINER_CREATED,
  );
  await clock.advance(1);
  await start.promise;
  const s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.state, ContainerState.CONTAINER_RUNNING);
  t.is(s.startedAt, ns(2000));

  // Stopping it while it is still starting: it never runs, and StartContainer fails.
  const other = await createContainer(runtime, pod, 'slow', { attempt: 1 });
  const pending = runtime.startContainer({ containerId: other });
  await clock.advance(500);
  await runtime.stopContainer({ containerId: other, timeout: 30n });
  code(t, await t.throwsAsync(pending), 'Internal');
  const o = (await runtime.containerStatus({ containerId: other, verbose: false })).status!;
  t.deepEqual([o.state, o.exitCode, o.reason], [ContainerState.CONTAINER_EXITED, 128, 'StartError']);
  t.is(clock.pendingTimers(), 0);
});

test('failCreate and failStart fail with the scripted message, as a missing command does', async (t) => {
  const { runtime } = setup();
  const message = 'exec: "nope": executable file not found in $PATH';
  const pod = await runPod(runtime, 'p', {
    annotations: {
      ...behave('a', `failCreate=${JSON.stringify(message)}`),
      ...behave('b', `failStart=${JSON.stringify(message)}`),
    },
  });
  const create = await t.throwsAsync(createContainer(runtime, pod, 'a'));
  code(t, create, 'Internal');
  t.is(create?.message, message);
  t.is(runtime.counts().containers, 0, 'a failed create leaves nothing behind');

  const b = await createContainer(runtime, pod, 'b');
  const start = await t.throwsAsync(runtime.startContainer({ containerId: b }));
  t.is(start?.message, message);
  const s = (await runtime.containerStatus({ containerId: b, verbose: false })).status!;
  t.deepEqual(
    [s.state, s.exitCode, s.reason, s.message],
    [ContainerState.CONTAINER_EXITED, 128, 'StartError', message],
  );
  t.is(s.startedAt, 0n);
});

test('script() by name or predicate layers over annotations and can be removed', async (t) => {
  const { clock, runtime } = setup();
  const unscript = runtime.script('app', 'exitAfter=2s');
  runtime.script((c) => c.podNamespace === 'batch', { exitCode: 7 });
  const pod = await runPod(runtime, 'p', {
    namespace: 'batch',
    annotations: behave('all', 'exitAfter=9s,exitCode=1'),
  });
  const app = await startContainer(runtime, pod, 'app');
  const side = await startContainer(runtime, pod, 'side');
  await clock.advance(2000);
  t.is(
    (await runtime.containerStatus({ containerId: app, verbose: false })).status!.exitCode,
    7,
    'exitAfter from script, exitCode from predicate',
  );
  await clock.advance(7000);
  t.is((await runtime.containerStatus({ containerId: side, verbose: false })).status!.exitCode, 7);
  unscript();
  const again = await startContainer(runtime, pod, 'app', { attempt: 1 });
  await clock.advance(2000);
  t.is(
    (await runtime.containerStatus({ containerId: again, verbose: false })).status!.state,
    ContainerState.CONTAINER_RUNNING,
  );
  t.throws(() => runtime.script('x', 'exitAfter=soon'), { message: /"exitAfter" takes a duration/ });
});

test('killContainer ends a running container from outside, now', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const a = await startContainer(runtime, pod, 'a');
  const b = await startContainer(runtime, pod, 'b');
  await clock.advance(42);
  runtime.killContainer(a, 2);
  runtime.killContainer(b, 137, { reason: 'OOMKilled' });
  const sa = (await runtime.containerStatus({ containerId: a, verbose: false })).status!;
  const sb = (await runtime.containerStatus({ containerId: b, verbose: false })).status!;
  t.deepEqual([sa.exitCode, sa.reason, sa.finishedAt], [2, 'Error', ns(42)]);
  t.deepEqual([sb.exitCode, sb.reason], [137, 'OOMKilled']);
  t.throws(() => runtime.killContainer(a), { message: /CONTAINER_EXITED/ });
});

test('a malformed behaviour annotation fails RunPodSandbox, naming the annotation', async (t) => {
  const { runtime } = setup();
  const err = await t.throwsAsync(runPod(runtime, 'p', { annotations: behave('app', 'exitAftr=5s') }));
  code(t, err, 'InvalidInput');
  t.regex(
    err!.message,
    /^annotation "runtime-fake.nodelet.dev\/app": unknown key "exitAftr"; known keys: startDelay, exitAfter/,
  );
});

test('CreateContainer needs a READY sandbox and a present image', async (t) => {
  const { runtime } = setup();
  const unknown = await t.throwsAsync(
    runtime.createContainer({ podSandboxId: 'gone', config: undefined, sandboxConfig: undefined }),
  );
  code(t, unknown, 'NotFound');
  t.is(unknown?.message, 'failed to find sandbox id "gone": not found');

  const pod = await runPod(runtime, 'p');
  const missing = await t.throwsAsync(createContainer(runtime, pod, 'app', { image: 'nginx:1.25' }));
  code(t, missing, 'NotFound');
  t.is(missing?.message, 'failed to resolve image "nginx:1.25": not found');
  await runtime.pullImage({
    image: { image: 'nginx:1.25', annotations: {}, userSpecifiedImage: '', runtimeHandler: '', imageRef: '' },
  });
  await t.notThrowsAsync(createContainer(runtime, pod, 'app', { image: 'nginx:1.25' }));

  await runtime.stopPodSandbox({ podSandboxId: pod });
  code(t, await t.throwsAsync(createContainer(runtime, pod, 'late')), 'FailedPrecondition');
});

test('stopping a sandbox kills its containers at once (even ignoreStop ones); removing it removes them', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', { annotations: behave('stubborn', 'ignoreStop,exitAfter=1h') });
  const other = await runPod(runtime, 'q');
  const a = await startContainer(runtime, pod, 'plain');
  const b = await startContainer(runtime, pod, 'stubborn');
  const created = await createContainer(runtime, pod, 'never-started');
  const elsewhere = await startContainer(runtime, other, 'app');
  await clock.advance(10);
  await runtime.stopPodSandbox({ podSandboxId: pod });
  const status = async (id: string) =>
    (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.deepEqual([(await status(a)).exitCode, (await status(b)).exitCode], [137, 137]);
  t.is((await status(b)).finishedAt, ns(10));
  t.is(
    (await status(created)).state,
    ContainerState.CONTAINER_CREATED,
    'a created container stays created (containerd)',
  );
  t.is((await status(elsewhere)).state, ContainerState.CONTAINER_RUNNING);
  t.is(
    (await runtime.podSandboxStatus({ podSandboxId: pod, verbose: false })).status!.state,
    PodSandboxState.SANDBOX_NOTREADY,
  );
  t.is(clock.pendingTimers(), 0);
  code(t, await t.throwsAsync(runtime.startContainer({ containerId: created })), 'FailedPrecondition');

  await runtime.removePodSandbox({ podSandboxId: pod });
  const left = await runtime.listContainers({});
  t.deepEqual(
    left.containers.map((c) => c.id),
    [elsewhere],
  );
});

test('RemovePodSandbox of a ready sandbox kills and removes what runs in it', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', { annotations: behave('all', 'ignoreStop') });
  const id = await startContainer(runtime, pod, 'app');
  const stopping = track(runtime.stopContainer({ containerId: id, timeout: 60n }));
  await runtime.removePodSandbox({ podSandboxId: pod });
  await clock.advance(0);
  t.true(stopping.settled, 'a pending stop resolves when the container is removed');
  t.is(runtime.counts().containers, 0);
  t.is(clock.pendingTimers(), 0);
});

test('sandbox status: IP, metadata, labels, annotations and createdAt in ns from the clock', async (t) => {
  const { clock, runtime } = setup();
  await clock.advance(1234);
  const pod = await runPod(runtime, 'web', {
    namespace: 'prod',
    uid: 'u-1',
    attempt: 2,
    annotations: { a: '1' },
  });
  const { status, timestamp } = await runtime.podSandboxStatus({ podSandboxId: pod, verbose: false });
  t.is(status!.id, pod);
  t.deepEqual(status!.metadata, { name: 'web', namespace: 'prod', uid: 'u-1', attempt: 2 });
  t.is(status!.state, PodSandboxState.SANDBOX_READY);
  t.is(status!.createdAt, ns(1234));
  t.is(timestamp, ns(1234));
  t.deepEqual(status!.network, { ip: '10.244.0.2', additionalIps: [] });
  t.is(status!.labels['io.kubernetes.pod.uid'], 'u-1');
  t.deepEqual(status!.annotations, { a: '1' });
  const dup = await t.throwsAsync(runPod(runtime, 'web', { namespace: 'prod', uid: 'u-1', attempt: 2 }));
  code(t, dup, 'AlreadyExists');
});

test('pod IPs: sequential from .2, none for host network, released on stop, reused after wrapping', async (t) => {
  const { runtime } = setup({ podCIDR: '10.1.0.0/29' }); // .2 – .6 allocatable
  const ip = async (id: string) =>
    (await runtime.podSandboxStatus({ podSandboxId: id, verbose: false })).status!.network!.ip;
  const pods = [];
  for (let i = 0; i < 3; i++) pods.push(await runPod(runtime, `p${i}`));
  t.deepEqual(await Promise.all(pods.map(ip)), ['10.1.0.2', '10.1.0.3', '10.1.0.4']);
  t.is(await ip(await runPod(runtime, 'host', { hostNetwork: true })), '');

  await runtime.stopPodSandbox({ podSandboxId: pods[0]! });
  t.is(await ip(pods[0]!), '', 'a stopped sandbox has no IP: its network is torn down, as in containerd');
  t.is(runtime.counts().podIPs, 2);
  await runtime.removePodSandbox({ podSandboxId: pods[0]! });
  t.is(await ip(await runPod(runtime, 'p3')), '10.1.0.5', 'host-local goes on from the last one handed out');
  t.is(await ip(await runPod(runtime, 'p4')), '10.1.0.6');
  t.is(await ip(await runPod(runtime, 'p5')), '10.1.0.2', 'then wraps to what was released');
  const full = await t.throwsAsync(runPod(runtime, 'p6'));
  code(t, full, 'Internal');
  t.regex(
    full!.message,
    /failed to setup network for sandbox "[0-9a-f]{64}": .*no IP addresses available in range set: 10.1.0.2-10.1.0.6/,
  );
  t.is(runtime.counts().sandboxes, 6, 'the refused sandbox is not kept');

  // The kubelet hands the node's podCIDR over; new sandboxes draw from it.
  await runtime.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: '10.9.3.0/24' } } });
  t.is(await ip(await runPod(runtime, 'p7')), '10.9.3.2');
  await runtime.removePodSandbox({ podSandboxId: pods[1]! });
  t.is(
    await ip(await runPod(runtime, 'p8')),
    '10.9.3.3',
    'a release into the old range does not disturb the new one',
  );
});

test('a host-network sandbox with a hostname is refused, as runc does in the node UTS namespace', async (t) => {
  const { runtime } = setup();
  const config = sandboxConfig('host', { hostNetwork: true });
  config.hostname = 'host';
  const err = await t.throwsAsync(runtime.runPodSandbox({ config, runtimeHandler: '' }));
  code(t, err, 'Internal');
  t.regex(err!.message, /unable to set hostname without a private UTS namespace/);
  t.is(runtime.counts().sandboxes, 0);
});

test('ListPodSandbox filters by id, state and labels (all must match)', async (t) => {
  const { runtime } = setup();
  const a = await runPod(runtime, 'a', { labels: { app: 'web', tier: 'front' } });
  const b = await runPod(runtime, 'b', { labels: { app: 'web', tier: 'back' } });
  const c = await runPod(runtime, 'c', { labels: { app: 'db' } });
  await runtime.stopPodSandbox({ podSandboxId: b });
  const ids = async (filter?: {
    id?: string;
    state?: PodSandboxState;
    labelSelector?: Record<string, string>;
  }) =>
    (
      await runtime.listPodSandbox({
        filter: filter && {
          id: filter.id ?? '',
          state: filter.state === undefined ? undefined : { state: filter.state },
          labelSelector: filter.labelSelector ?? {},
        },
      })
    ).items.map((s) => s.id);
  t.deepEqual(await ids(), [a, b, c]);
  t.deepEqual(await ids({ id: b }), [b]);
  t.deepEqual(await ids({ id: 'nope' }), []);
  t.deepEqual(await ids({ state: PodSandboxState.SANDBOX_READY }), [a, c]);
  t.deepEqual(await ids({ state: PodSandboxState.SANDBOX_NOTREADY }), [b]);
  t.deepEqual(await ids({ labelSelector: { app: 'web' } }), [a, b]);
  t.deepEqual(await ids({ labelSelector: { app: 'web', tier: 'back' } }), [b]);
  t.deepEqual(await ids({ labelSelector: { app: 'web', tier: 'none' } }), []);
  t.deepEqual(await ids({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-c' } }), [c]);
  t.deepEqual(await ids({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-c', app: 'web' } }), []);
  t.deepEqual(await ids({ state: PodSandboxState.SANDBOX_READY, labelSelector: { app: 'web' } }), [a]);
});

test('ListContainers filters by id, state, sandbox and labels; pod-uid selectors use the index', async (t) => {
  const { runtime } = setup();
  const p = await runPod(runtime, 'p');
  const q = await runPod(runtime, 'q');
  const p1 = await startContainer(runtime, p, 'one', { labels: { role: 'main' } });
  const p2 = await createContainer(runtime, p, 'two', { labels: { role: 'side' } });
  const q1 = await startContainer(runtime, q, 'one', { labels: { role: 'main' } });
  runtime.killContainer(q1, 0);
  const ids = async (f: {
    id?: string;
    state?: ContainerState;
    podSandboxId?: string;
    labelSelector?: Record<string, string>;
  }) =>
    (
      await runtime.listContainers({
        filter: {
          id: f.id ?? '',
          podSandboxId: f.podSandboxId ?? '',
          state: f.state === undefined ? undefined : { state: f.state },
          labelSelector: f.labelSelector ?? {},
        },
      })
    ).containers.map((c) => c.id);
  t.deepEqual(await ids({}), [p1, p2, q1]);
  t.deepEqual(await ids({ id: p2 }), [p2]);
  t.deepEqual(await ids({ id: p2, podSandboxId: q }), []);
  t.deepEqual(await ids({ podSandboxId: q }), [q1]);
  t.deepEqual(await ids({ state: ContainerState.CONTAINER_CREATED }), [p2]);
  t.deepEqual(await ids({ state: ContainerState.CONTAINER_RUNNING }), [p1]);
  t.deepEqual(await ids({ state: ContainerState.CONTAINER_EXITED }), [q1]);
  t.deepEqual(await ids({ labelSelector: { role: 'main' } }), [p1, q1]);
  t.deepEqual(await ids({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-p' } }), [p1, p2]);
  t.deepEqual(await ids({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-p', role: 'side' } }), [p2]);
  t.deepEqual(await ids({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-zzz' } }), []);
  const [listed] = (await runtime.listContainers({ filter: { id: p1, podSandboxId: '', labelSelector: {} } }))
    .containers;
  t.is(listed!.podSandboxId, p);
  t.is(listed!.image?.image, 'busybox', 'the image as CreateContainer named it');
  t.regex(listed!.imageRef, /^sha256:[0-9a-f]{64}$/);
});

test('ContainerStatus reports what the container was created with', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'web', { namespace: 'prod', uid: 'u-9' });
  await clock.advance(7);
  const id = await startContainer(runtime, pod, 'app', {
    attempt: 3,
    image: 'busybox',
    labels: { extra: 'x' },
    annotations: { note: 'n' },
    mounts: [{ containerPath: '/data', hostPath: '/var/lib/kubelet/pods/u-9/volumes/data', readonly: true }],
    envs: { A: '1' },
    command: ['/bin/app'],
    args: ['--serve'],
  });
  const s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.deepEqual(s.metadata, { name: 'app', attempt: 3 });
  t.is(s.image?.image, 'docker.io/library/busybox:latest');
  t.is(s.image?.userSpecifiedImage, 'busybox');
  t.regex(s.imageRef, /^docker\.io\/library\/busybox@sha256:[0-9a-f]{64}$/);
  t.regex(s.imageId, /^sha256:[0-9a-f]{64}$/);
  t.is(s.logPath, '/var/log/pods/prod_web_u-9/app/3.log');
  t.is(s.labels['extra'], 'x');
  t.is(s.labels['io.kubernetes.container.name'], 'app');
  t.deepEqual(s.annotations, { 'io.kubernetes.container.restartCount': '3', note: 'n' });
  t.is(s.mounts.length, 1);
  t.like(s.mounts[0], {
    containerPath: '/data',
    hostPath: '/var/lib/kubelet/pods/u-9/volumes/data',
    readonly: true,
  });
  t.is(s.createdAt, ns(7));
  t.is(s.startedAt, ns(7));
  const config = runtime.containerConfig(id);
  t.deepEqual(config.command, ['/bin/app']);
  t.deepEqual(config.args, ['--serve']);
  t.deepEqual(
    config.envs.map((e) => [e.key, e.value.toString()]),
    [['A', '1']],
  );
});

test('returned messages are copies: changing them does not change the runtime', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p', { labels: { app: 'web' } });
  const id = await startContainer(runtime, pod, 'app', { mounts: [{ containerPath: '/d', hostPath: '/h' }] });
  const s1 = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  s1.labels['app'] = 'changed';
  s1.mounts[0]!.hostPath = '/elsewhere';
  s1.metadata!.name = 'renamed';
  const [c1] = (await runtime.listContainers({})).containers;
  c1!.labels['x'] = 'y';
  c1!.image!.image = 'other';
  const [p1] = (await runtime.listPodSandbox({})).items;
  p1!.labels['app'] = 'db';
  const s2 = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.false('app' in s2.labels);
  t.is(s2.mounts[0]!.hostPath, '/h');
  t.is(s2.metadata!.name, 'app');
  const [c2] = (await runtime.listContainers({})).containers;
  t.false('x' in c2!.labels);
  t.is(c2!.image!.image, 'busybox');
  t.is((await runtime.listPodSandbox({ filter: { id: '', labelSelector: { app: 'web' } } })).items.length, 1);
});

test('a runtime that went away: every call fails Unavailable; containers keep running', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const id = await startContainer(runtime, pod, 'app');
  runtime.setAvailable(false);
  for (const call of [
    () => runtime.version({ version: 'v1' }),
    () => runtime.status({ verbose: false }),
    () => runtime.listContainers({}),
    () => runtime.containerStatus({ containerId: id, verbose: false }),
    () => runtime.listImages({}),
    () => runtime.removeContainer({ containerId: id }),
  ]) {
    t.true(isErrorCode(await t.throwsAsync(call()), 'Unavailable'));
  }
  runtime.setAvailable(true);
  t.is(
    (await runtime.containerStatus({ containerId: id, verbose: false })).status!.state,
    ContainerState.CONTAINER_RUNNING,
  );
});

test('Status reports conditions; NetworkReady=false fails pod-network sandboxes like an uninitialised CNI', async (t) => {
  const { runtime } = setup();
  const conditions = async () =>
    (await runtime.status({ verbose: false })).status!.conditions.map((c) => [c.type, c.status]);
  t.deepEqual(await conditions(), [
    ['RuntimeReady', true],
    ['NetworkReady', true],
  ]);
  runtime.setCondition('NetworkReady', false, 'NetworkPluginNotReady', 'cni plugin not initialized');
  t.deepEqual(await conditions(), [
    ['RuntimeReady', true],
    ['NetworkReady', false],
  ]);
  const err = await t.throwsAsync(runPod(runtime, 'p'));
  t.regex(err!.message, /^failed to setup network for sandbox "[0-9a-f]{64}": cni plugin not initialized$/);
  await t.notThrowsAsync(runPod(runtime, 'h', { hostNetwork: true }));
  const v = await runtime.version({ version: '0.1.0' });
  t.is(v.runtimeName, 'nodelet-fake');
  t.is(v.runtimeApiVersion, 'v1');
  t.true(
    isErrorCode(
      await t.throwsAsync(
        runtime.exec({ containerId: 'x', cmd: [], tty: false, stdin: false, stdout: true, stderr: true }),
      ),
      'Unimplemented',
    ),
  );
  t.true(
    isErrorCode(
      await t.throwsAsync(
        runtime.attach({ containerId: 'x', tty: false, stdin: false, stdout: true, stderr: true }),
      ),
      'Unimplemented',
    ),
  );
  t.true(
    isErrorCode(await t.throwsAsync(runtime.portForward({ podSandboxId: 'x', port: [80] })), 'Unimplemented'),
  );
});

test('a node of 1,000 plain running containers holds no timers; scripted ones only until they stop', async (t) => {
  const { clock, runtime } = setup();
  for (let i = 0; i < 1000; i++) {
    const pod = await runPod(runtime, `p${i}`);
    await startContainer(runtime, pod, 'app');
  }
  t.is(clock.pendingTimers(), 0);
  await clock.advance(3_600_000);
  t.is(runtime.counts().running, 1000);

  const pod = await runPod(runtime, 'scripted', { annotations: behave('all', 'exitAfter=1h,ignoreStop') });
  const ids = [];
  for (let i = 0; i < 10; i++) ids.push(await startContainer(runtime, pod, `c${i}`));
  t.is(clock.pendingTimers(), 10);
  for (const id of ids.slice(0, 5)) await runtime.stopContainer({ containerId: id, timeout: 0n });
  for (const id of ids.slice(5)) await runtime.removeContainer({ containerId: id });
  t.is(clock.pendingTimers(), 0);
});

test('stats answer with identities and zero usage', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const id = await startContainer(runtime, pod, 'app');
  await createContainer(runtime, pod, 'idle');
  const { stats } = await runtime.listContainerStats({});
  t.deepEqual(
    stats.map((s) => s.attributes?.id),
    [id],
  );
  const sandbox = await runtime.podSandboxStats({ podSandboxId: pod });
  t.is(sandbox.stats?.attributes?.id, pod);
  t.is(sandbox.stats?.linux?.containers.length, 1);
  t.is((await runtime.listPodSandboxStats({})).stats.length, 1);
});

test('behaviour annotations on the container config work too; resources updates show in status', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const id = await startContainer(runtime, pod, 'app', {
    annotations: behave('app', 'exitAfter=3s,exitCode=4'),
  });
  await runtime.updateContainerResources({
    containerId: id,
    linux: {
      cpuPeriod: 100_000n,
      cpuQuota: 50_000n,
      cpuShares: 512n,
      memoryLimitInBytes: 1n << 27n,
      oomScoreAdj: 0n,
      cpusetCpus: '',
      cpusetMems: '',
      hugepageLimits: [],
      unified: {},
      memorySwapLimitInBytes: 0n,
    },
    annotations: {},
  });
  const s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.resources?.linux?.cpuQuota, 50_000n);
  await clock.advance(3000);
  t.is((await runtime.containerStatus({ containerId: id, verbose: false })).status!.exitCode, 4);
  const err = await t.throwsAsync(runtime.updateContainerResources({ containerId: id, annotations: {} }));
  t.true(isErrorCode(err, 'FailedPrecondition'));
});

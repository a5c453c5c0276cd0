// Pod sandboxes: their containers, status, pod IPs, host network and listing.
import test from 'ava';
import { ContainerState, PodSandboxState } from '@nodelet/cri';
import {
  behave,
  createContainer,
  expectCode as code,
  ns,
  runPod,
  sandboxConfig,
  setup,
  startContainer,
  track,
} from './fixtures.js';

test('CreateContainer needs a READY sandbox and a present image', async (t) => {
  const { runtime } = setup({ pullLatencyMs: 0 });
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

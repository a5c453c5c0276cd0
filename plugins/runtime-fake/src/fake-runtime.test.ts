// The fake runtime as a whole: listing and status of containers, copies, availability, conditions, timers, stats.
import test from 'ava';
import { isErrorCode } from '@nodelet/kernel';
import { ContainerState } from '@nodelet/cri';
import { behave, createContainer, ns, runPod, setup, startContainer } from './fixtures.js';

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
      'NotFound',
    ),
  );
  t.true(
    isErrorCode(
      await t.throwsAsync(
        runtime.attach({ containerId: 'x', tty: false, stdin: false, stdout: true, stderr: true }),
      ),
      'NotFound',
    ),
  );
  t.true(
    isErrorCode(await t.throwsAsync(runtime.portForward({ podSandboxId: 'x', port: [80] })), 'NotFound'),
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

test('simulated usage from the pod annotation: cumulative CPU advances on the clock, memory and disk as set', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'p', { annotations: behave('app', 'cpu=250m,memory=100Mi,disk=1Mi') });
  const id = await startContainer(runtime, pod, 'app');
  await startContainer(runtime, pod, 'idle');
  await clock.advance(10_000);
  const { stats } = await runtime.containerStats({ containerId: id });
  // 0.25 core for 10 s (creation stamps are kept strictly increasing, a nanosecond apart)
  const near = (ns: bigint | undefined, want: bigint) => ns !== undefined && ns > want - 1000n && ns <= want;
  t.true(near(stats?.cpu?.usageCoreNanoSeconds?.value, 2_500_000_000n));
  t.is(stats?.cpu?.usageNanoCores?.value, 250_000_000n);
  t.is(stats?.memory?.workingSetBytes?.value, 100n * 1024n * 1024n);
  t.is(stats?.writableLayer?.usedBytes?.value, 1024n * 1024n);
  const sandbox = (await runtime.podSandboxStats({ podSandboxId: pod })).stats!;
  t.true(near(sandbox.linux?.cpu?.usageCoreNanoSeconds?.value, 2_500_000_000n));
  t.is(sandbox.linux?.memory?.workingSetBytes?.value, 100n * 1024n * 1024n);
  t.is(sandbox.linux?.containers.length, 2);
});

test('a usage annotation that does not parse is refused naming the key', async (t) => {
  const { runtime } = setup();
  const err = await t.throwsAsync(runPod(runtime, 'p', { annotations: behave('app', 'memory=lots') }));
  t.regex(err!.message, /"memory" takes a quantity such as 100Mi/);
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

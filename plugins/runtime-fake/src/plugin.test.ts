import test from 'ava';
import { ConfigError, createLogger, Kernel, MemorySink, VirtualClock } from '@nodelet/kernel';
import { CriImage, CriRuntime, ProbeHandlerCapability, StatsProviderCapability } from '@nodelet/cri';
import { FakeRuntime } from './fake-runtime.js';
import { runtimeFakePlugin } from './plugin.js';
import { behave, runPod, startContainer } from './fixtures.js';

const kernelWith = (config?: unknown) => {
  const clock = new VirtualClock();
  const kernel = new Kernel({ clock, logger: createLogger({ sink: new MemorySink().sink }) }).use(
    runtimeFakePlugin,
    config,
  );
  return { clock, kernel };
};

test('provides one FakeRuntime as cri.runtime and cri.image, on the kernel clock', async (t) => {
  const { clock, kernel } = kernelWith({ pullLatencyMs: 500 });
  await kernel.start();
  const runtime = kernel.get(CriRuntime) as FakeRuntime;
  t.true(runtime instanceof FakeRuntime);
  t.is(kernel.get(CriImage), runtime);
  const pull = kernel.get(CriImage).pullImage({
    image: { image: 'nginx', annotations: {}, userSpecifiedImage: '', runtimeHandler: '', imageRef: '' },
  });
  await clock.advance(500);
  t.regex((await pull).imageRef, /^sha256:/);
  t.is(runtime.counts().images, 3, 'defaults filled in: pause and busybox preloaded');

  const pod = await runPod(runtime, 'p', { annotations: { 'runtime-fake.nodelet.dev/app': 'exitAfter=1h' } });
  await startContainer(runtime, pod, 'app');
  t.is(clock.pendingTimers(), 1);
  await kernel.stop();
  t.is(clock.pendingTimers(), 0, 'stopping the kernel cancels the runtime timers');
});

test('configuration is validated: unknown fields and bad values name the field', async (t) => {
  const unknown = await t.throwsAsync(kernelWith({ pullLatency: 5 }).kernel.start());
  t.true(unknown instanceof ConfigError);
  t.regex(unknown!.message, /unknown field "pullLatency"/);
  const negative = await t.throwsAsync(kernelWith({ pullLatencyMs: -1 }).kernel.start());
  t.regex(negative!.message, /pullLatencyMs/);
  const cidr = await t.throwsAsync(kernelWith({ podCIDR: '10.0.0.0/31' }).kernel.start());
  t.true(cidr instanceof ConfigError);
  t.regex(
    cidr!.message,
    /^plugin 'runtime-fake' configuration: podCIDR: pod CIDR "10.0.0.0\/31" is too small/,
  );
  const image = await t.throwsAsync(kernelWith({ preloadedImages: ['UPPER'] }).kernel.start());
  t.regex(image!.message, /preloadedImages\[0\]/);
});

test('the manifest declares what the linker needs', (t) => {
  const { manifest } = runtimeFakePlugin;
  t.is(manifest.name, 'runtime-fake');
  t.deepEqual(
    manifest.provides.map((c) => c.id),
    ['cri.runtime', 'cri.image', 'probe.handler', 'stats.provider'],
  );
  t.deepEqual(manifest.requires, []);
});

test('provides stats.provider: the simulated usage of its containers, the node the sum of its pods', async (t) => {
  const clock = new VirtualClock();
  const kernel = new Kernel({ clock, logger: createLogger({ sink: new MemorySink().sink }) }).use(
    runtimeFakePlugin,
    {},
  );
  await kernel.start();
  t.teardown(() => kernel.stop());
  const runtime = kernel.get(CriRuntime) as FakeRuntime;
  const pod = await runPod(runtime, 'p', { annotations: behave('app', 'cpu=2,memory=1Gi') });
  await startContainer(runtime, pod, 'app');
  await clock.advance(5_000);
  const snapshot = await kernel.get(StatsProviderCapability).snapshot();
  t.is(snapshot.pods.length, 1);
  t.is(snapshot.pods[0]!.containers[0]!.memory?.workingSetBytes, 2 ** 30);
  t.is(snapshot.node.memory?.workingSetBytes, 2 ** 30);
  t.is(snapshot.node.cpu?.usageNanoCores, 2e9);
  t.true(Math.abs((snapshot.node.cpu?.usageCoreNanoSeconds ?? 0) - 10e9) < 1e3, '2 cores for 5 s');
});

test('provides probe.handler for httpGet, tcpSocket and grpc: the pod IPs it hands out reach no host', async (t) => {
  const { kernel } = kernelWith();
  await kernel.start();
  t.teardown(() => kernel.stop());
  t.deepEqual(
    kernel.getAll(ProbeHandlerCapability).map((h) => h.type),
    ['httpGet', 'tcpSocket', 'grpc'],
  );
});

test('the image table comes through the plugin configuration, checked by its schema', async (t) => {
  const { kernel } = kernelWith({
    pullLatencyMs: 0,
    images: [{ refs: ['example.com/app:1', 'example.com/app:stable'], user: 'app', cmd: ['serve'] }],
  });
  await kernel.start();
  t.teardown(() => kernel.stop());
  const images = kernel.get(CriImage);
  const spec = (image: string) => ({
    image,
    annotations: {},
    userSpecifiedImage: '',
    runtimeHandler: '',
    imageRef: '',
  });
  const a = await images.pullImage({ image: spec('example.com/app:1') });
  const b = await images.pullImage({ image: spec('example.com/app:stable') });
  t.is(a.imageRef, b.imageRef);
  t.like((await images.imageStatus({ image: spec('example.com/app:1'), verbose: false })).image, {
    username: 'app',
  });
  const noRefs = await t.throwsAsync(kernelWith({ images: [{ user: 'x' }] }).kernel.start());
  t.regex(noRefs!.message, /refs/);
  const badCmd = await t.throwsAsync(
    kernelWith({ images: [{ refs: ['a:1'], cmd: 'serve' }] }).kernel.start(),
  );
  t.regex(badCmd!.message, /cmd/);
});

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { ConfigError, Kernel, MemorySink, NodeletError, RealClock, createLogger } from '@nodelet/kernel';
import { CriImage, CriRuntime, serveCri } from '@nodelet/cri';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { CONTAINERD_ENDPOINT, CRIO_ENDPOINT } from './config.js';
import { criRuntimePlugin, runtimeCriPlugin } from './plugin.js';

const quiet = (sink = new MemorySink()) => createLogger({ sink: sink.sink });

test('the manifest: runtime-cri provides cri.runtime and cri.image; the endpoint defaults to containerd', (t) => {
  const { manifest } = runtimeCriPlugin;
  t.is(manifest.name, 'runtime-cri');
  t.deepEqual(
    manifest.provides.map((c) => c.id),
    ['cri.runtime', 'cri.image'],
  );
  t.deepEqual(manifest.requires, []);
  const schema = manifest.configSchema as { properties: Record<string, { default?: unknown }> };
  t.is(schema.properties.runtimeEndpoint?.default, CONTAINERD_ENDPOINT);
  t.is(schema.properties.imageEndpoint?.default, '');
  t.is(schema.properties.runtimeRequestTimeoutMs?.default, 120_000);
  t.is(schema.properties.pullTimeoutMs?.default, 0);
  const crio = criRuntimePlugin({ name: 'runtime-crio', runtimeEndpoint: CRIO_ENDPOINT });
  t.is(crio.manifest.name, 'runtime-crio');
  t.is(
    (crio.manifest.configSchema as { properties: { runtimeEndpoint: { default: string } } }).properties
      .runtimeEndpoint.default,
    CRIO_ENDPOINT,
  );
});

test('a missing socket fails the kernel start, naming the socket, the flag and the config field', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'runtime-cri-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const socket = join(dir, 'absent.sock');
  const kernel = new Kernel({ logger: quiet() }).use(
    criRuntimePlugin({ name: 'runtime-containerd', runtimeLabel: 'containerd' }),
    { runtimeEndpoint: `unix://${socket}` },
  );
  const err = await t.throwsAsync(kernel.start());
  t.true(err instanceof NodeletError);
  t.is(
    err?.message,
    `cannot connect to containerd at unix://${socket}: no such socket (${socket}); is containerd running? set the socket with --container-runtime-endpoint (KubeletConfiguration containerRuntimeEndpoint, or plugins.runtime-containerd.runtimeEndpoint)`,
  );
});

test('configuration is validated: an endpoint gRPC cannot dial and unknown fields name the field', async (t) => {
  const bad = new Kernel({ logger: quiet() }).use(runtimeCriPlugin, { runtimeEndpoint: 'tcp://1.2.3.4:5' });
  const err = await t.throwsAsync(bad.start(), { instanceOf: ConfigError });
  t.is(
    err?.message,
    'plugins.runtime-cri.runtimeEndpoint: "tcp://1.2.3.4:5" is not a CRI endpoint; use unix:///absolute/path.sock (or host:port)',
  );
  const unknown = new Kernel({ logger: quiet() }).use(
    runtimeCriPlugin,
    { endpoint: 'x' },
    'nodelet.yaml: plugins.runtime-cri',
  );
  const err2 = await t.throwsAsync(unknown.start(), { instanceOf: ConfigError });
  t.regex(err2!.message, /^nodelet\.yaml: plugins\.runtime-cri: unknown field "endpoint"/);
});

test('started against a CRI server: the capabilities work, the connection is logged, stop closes it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'runtime-cri-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const endpoint = `unix://${join(dir, 'cri.sock')}`;
  const fake = new FakeRuntime({ clock: new RealClock() });
  const server = await serveCri(fake, fake, endpoint);
  t.teardown(() => server.stop(100));
  const sink = new MemorySink();
  const kernel = new Kernel({ logger: quiet(sink) }).use(runtimeCriPlugin, { runtimeEndpoint: endpoint });
  await kernel.start();
  t.is((await kernel.get(CriRuntime).version({ version: '0.1.0' })).runtimeName, 'nodelet-fake');
  t.is((await kernel.get(CriImage).listImages({})).images.length, 2);
  t.deepEqual(
    sink.find('connected to the container runtime').map((r) => r.fields),
    [{ runtime: 'nodelet-fake 0.1.0', criApi: 'v1', endpoint }],
  );
  await kernel.stop();
  const err = await t.throwsAsync(kernel.get(CriRuntime).version({ version: '0.1.0' }));
  t.is((err as NodeletError).code, 'Unavailable');
});

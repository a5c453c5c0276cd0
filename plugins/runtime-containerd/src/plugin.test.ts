import test from 'ava';
import { Kernel, MemorySink, createLogger } from '@nodelet/kernel';
import { CriRuntime } from '@nodelet/cri';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import runtimeDefault, { CONTAINERD_ENDPOINT, runtimeContainerdPlugin } from './index.js';

// Before any test is declared: ava takes declarations only until the file's first await is over.
const containerd = await requireContainerd(test);

test('the preset: plugin runtime-containerd, containerd socket by default, cri.runtime and cri.image', (t) => {
  const { manifest } = runtimeContainerdPlugin;
  t.is(runtimeDefault, runtimeContainerdPlugin);
  t.is(manifest.name, 'runtime-containerd');
  t.deepEqual(
    manifest.provides.map((c) => c.id),
    ['cri.runtime', 'cri.image'],
  );
  const schema = manifest.configSchema as { properties: { runtimeEndpoint: { default: string } } };
  t.is(schema.properties.runtimeEndpoint.default, CONTAINERD_ENDPOINT);
  t.is(CONTAINERD_ENDPOINT, 'unix:///run/containerd/containerd.sock');
});

if (containerd) {
  test('against the real containerd: starts, speaks CRI v1, logs the runtime it found', async (t) => {
    const sink = new MemorySink();
    const kernel = new Kernel({ logger: createLogger({ sink: sink.sink }) }).use(runtimeContainerdPlugin, {
      runtimeEndpoint: containerd.endpoint,
    });
    await kernel.start();
    t.teardown(() => kernel.stop());
    const version = await kernel.get(CriRuntime).version({ version: '0.1.0' });
    t.is(version.runtimeName, 'containerd');
    t.is(version.runtimeApiVersion, 'v1');
    t.regex(String(sink.find('connected to the container runtime')[0]?.fields.runtime), /^containerd \d/);
  });
}

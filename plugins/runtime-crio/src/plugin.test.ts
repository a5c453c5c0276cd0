import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { Kernel, MemorySink, createLogger } from '@nodelet/kernel';
import runtimeDefault, { CRIO_ENDPOINT, runtimeCrioPlugin } from './index.js';

test('the preset: plugin runtime-crio, CRI-O socket by default, cri.runtime and cri.image', (t) => {
  const { manifest } = runtimeCrioPlugin;
  t.is(runtimeDefault, runtimeCrioPlugin);
  t.is(manifest.name, 'runtime-crio');
  t.deepEqual(
    manifest.provides.map((c) => c.id),
    ['cri.runtime', 'cri.image'],
  );
  const schema = manifest.configSchema as { properties: { runtimeEndpoint: { default: string } } };
  t.is(schema.properties.runtimeEndpoint.default, CRIO_ENDPOINT);
  t.is(CRIO_ENDPOINT, 'unix:///var/run/crio/crio.sock');
});

test('without CRI-O: the start fails naming CRI-O, the socket and how to change it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'runtime-crio-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const socket = join(dir, 'crio.sock');
  const sink = new MemorySink();
  const kernel = new Kernel({ logger: createLogger({ sink: sink.sink }) }).use(runtimeCrioPlugin, {
    runtimeEndpoint: `unix://${socket}`,
  });
  const err = await t.throwsAsync(kernel.start());
  t.is(
    err?.message,
    `cannot connect to CRI-O at unix://${socket}: no such socket (${socket}); is CRI-O running? set the socket with --container-runtime-endpoint (KubeletConfiguration containerRuntimeEndpoint, or plugins.runtime-crio.runtimeEndpoint)`,
  );
});

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLogger, definePlugin, Kernel, MemorySink } from '@nodelet/kernel';
import { stringify } from 'yaml';
import { type ProxyBackend, ProxyBackendCapability } from './backend.js';
import { ProxyCapability, proxyPlugin } from './plugin.js';
import { conformanceServices, conformanceSlices } from './testing/fixtures.js';

function fakeBackendPlugin(calls: string[]) {
  const backend: ProxyBackend = {
    name: 'fake',
    async sync(state, changes, full) {
      calls.push(`${full ? 'full' : 'partial'} ${state.servicePorts.size} ${changes.updated.size}`);
      return { full, written: 0 };
    },
    async cleanup() {},
  };
  return definePlugin({
    manifest: { name: 'proxy-fake', version: '0', provides: [ProxyBackendCapability], requires: [] },
    register: (ctx) => ctx.provide(ProxyBackendCapability, backend),
  });
}

test('the proxy plugin links to a backend plugin and syncs what a services directory holds', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-proxy-plugin-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'all.yaml'),
    [...conformanceServices(), ...conformanceSlices()].map((o) => stringify(o)).join('---\n'),
  );
  const calls: string[] = [];
  const kernel = new Kernel({ logger: createLogger({ sink: new MemorySink().sink }) });
  kernel.use(fakeBackendPlugin(calls));
  kernel.use(proxyPlugin, { nodeName: 'node-a', services: dir, healthzBindAddress: '' });
  await kernel.start();
  t.teardown(() => kernel.stop());
  const proxier = kernel.get(ProxyCapability);
  if (calls.length === 0) await proxier.nextSync();
  t.deepEqual(calls, ['full 8 8']);
  t.is(proxier.backendName, 'fake');
});

test('without a backend the kernel refuses to start, naming the capability', async (t) => {
  const kernel = new Kernel({ logger: createLogger({ sink: () => undefined }) });
  kernel.use(proxyPlugin, { nodeName: 'n' });
  await t.throwsAsync(() => kernel.start(), { message: /proxy\.backend/ });
});

test('configuration errors name the field', async (t) => {
  const kernel = new Kernel({ logger: createLogger({ sink: () => undefined }) });
  kernel.use(fakeBackendPlugin([]));
  kernel.use(proxyPlugin, { nodeName: 'n', minSyncPeriodMs: 'soon' }, 'nodelet.yaml: proxy');
  await t.throwsAsync(() => kernel.start(), {
    message: /nodelet\.yaml: proxy: field "minSyncPeriodMs" must be of type integer/,
  });
});

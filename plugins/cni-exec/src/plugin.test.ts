import test from 'ava';
import { join } from 'node:path';
import { CniNetwork } from '@nodelet/cni';
import { ConfigError, createLogger, Kernel, MemorySink } from '@nodelet/kernel';
import { CniExec } from './cni-exec.js';
import { DEFAULT_CONFIG } from './config.js';
import { installFakePlugin, tempLayout, writeJson } from './fixtures.js';
import { cniExecPlugin } from './plugin.js';

const kernelWith = (config?: unknown) => {
  const logs = new MemorySink();
  const kernel = new Kernel({ logger: createLogger({ sink: logs.sink }) }).use(cniExecPlugin, config);
  return { kernel, logs };
};

test('the manifest declares what the linker needs', (t) => {
  const { manifest } = cniExecPlugin;
  t.is(manifest.name, 'cni-exec');
  t.deepEqual(
    manifest.provides.map((c) => c.id),
    ['cni.network'],
  );
  t.is(CniNetwork.cardinality, 'one');
  t.deepEqual(manifest.requires, []);
});

test('provides a CniExec with the defaults filled in; logs at start whether the network is ready', async (t) => {
  const layout = tempLayout();
  t.teardown(() => layout.cleanup());
  const { kernel, logs } = kernelWith({ confDir: layout.confDir });
  await kernel.start();
  const network = kernel.get(CniNetwork);
  t.true(network instanceof CniExec);
  t.deepEqual((network as CniExec).config, { ...DEFAULT_CONFIG, confDir: layout.confDir });
  t.is(logs.find('CNI network not ready').length, 1);
  t.regex(logs.lines('warn')[0]!, new RegExp(`no CNI network configuration in ${layout.confDir}`));
  await kernel.stop();

  installFakePlugin(layout.binDir, 'first');
  writeJson(join(layout.confDir, '10-x.conflist'), {
    cniVersion: '1.0.0',
    name: 'x',
    plugins: [{ type: 'first' }],
  });
  const ready = kernelWith({ confDir: layout.confDir, binDirs: [layout.binDir], cacheDir: layout.cacheDir });
  await ready.kernel.start();
  t.is(ready.logs.find('CNI network ready').length, 1);
  t.deepEqual(await ready.kernel.get(CniNetwork).status(), {
    ready: true,
    message: `network "x" (CNI 1.0.0) from ${join(layout.confDir, '10-x.conflist')}: plugins first`,
  });
  await ready.kernel.stop();
});

test('configuration is validated: unknown fields and bad values name the field', async (t) => {
  const unknown = await t.throwsAsync(kernelWith({ confdir: '/x' }).kernel.start());
  t.true(unknown instanceof ConfigError);
  t.regex(unknown!.message, /unknown field "confdir"/);
  const empty = await t.throwsAsync(kernelWith({ binDirs: [] }).kernel.start());
  t.regex(empty!.message, /binDirs/);
  const timeout = await t.throwsAsync(kernelWith({ execTimeoutMs: 0 }).kernel.start());
  t.regex(timeout!.message, /execTimeoutMs/);
});

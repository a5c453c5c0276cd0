import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { capabilityLabel, defineCapability } from './capability.js';
import { Kernel } from './kernel.js';
import { checkPluginName, loadPlugin, type LoaderOptions } from './loader.js';
import { createLogger, MemorySink } from './logger.js';
import { definePlugin } from './plugin.js';

const quietKernel = () => new Kernel({ logger: createLogger({ sink: new MemorySink().sink }) });

function tmp(t: { teardown: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-loader-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('a capability carries its major version, printed id@version', (t) => {
  const cap = defineCapability('test.widget', { version: 3 });
  t.is(cap.version, 3);
  t.is(capabilityLabel(cap), 'test.widget@3');
  t.is(String(cap), 'test.widget@3');
  t.is(defineCapability('test.widget').version, 1);
  t.throws(() => defineCapability('test.widget', { version: 1.5 }), { message: /whole number/ });
});

test('a requirer and a provider built against different major versions are refused, both named', async (t) => {
  // Two builds of one capability package: the provider was built against v1, the requirer against v2.
  const WidgetV1 = defineCapability<{ spin(): void }>('test.widget', { version: 1 });
  const WidgetV2 = defineCapability<{ spin(): void }>('test.widget', { version: 2 });
  const provider = definePlugin({
    manifest: { name: 'old-widgets', version: '1.0.0', provides: [WidgetV1], requires: [] },
    register: (ctx) => ctx.provide(WidgetV1, { spin() {} }),
  });
  const requirer = definePlugin({
    manifest: { name: 'new-host', version: '2.0.0', provides: [], requires: [WidgetV2] },
    register: () => {},
  });
  const err = await t.throwsAsync(quietKernel().use(provider).use(requirer).start(), { name: 'LinkError' });
  t.is(
    err?.message,
    "plugin 'new-host' requires capability 'test.widget@2', but plugin 'old-widgets' provides 'test.widget@1'; " +
      "a provider and a requirer must be built against the same major version of 'test.widget': upgrade the older one",
  );
  // The same majors link.
  const same = definePlugin({
    manifest: { name: 'new-widgets', version: '2.0.0', provides: [WidgetV2], requires: [] },
    register: (ctx) => ctx.provide(WidgetV2, { spin() {} }),
  });
  await t.notThrowsAsync(quietKernel().use(same).use(requirer).start());
});

test('every plugin configuration is validated before any registers; all errors at once, each with file and field', async (t) => {
  const registered: string[] = [];
  const latency = { latencyMs: { type: 'integer', minimum: 0 } };
  const configured = (name: string) =>
    definePlugin({
      manifest: {
        name,
        version: '1',
        provides: [],
        requires: [],
        configSchema: { properties: latency, additionalProperties: false },
      },
      register: () => void registered.push(name),
    });
  const err = await t.throwsAsync(
    quietKernel()
      .use(configured('first'), { latencyMs: 1 }, 'nodelet.yaml: plugins[0].config')
      .use(configured('second'), { latencyMs: -1 }, 'nodelet.yaml: plugins[1].config')
      .use(configured('third'), { latncyMs: 1 }, 'nodelet.yaml: plugins[2].config')
      .start(),
    { name: 'ConfigError' },
  );
  t.is(
    err?.message,
    'nodelet.yaml: plugins[1].config: field "latencyMs" must be >= 0\n' +
      'nodelet.yaml: plugins[2].config: unknown field "latncyMs"; remove it or check its spelling',
  );
  t.deepEqual(registered, [], 'no plugin registered');
});

const aliases: LoaderOptions = { aliases: { tiny: './tiny.mjs' }, kind: 'widget' };

test('the loader takes a path, an alias of the host program, or a package; a plugin written as data links', async (t) => {
  const dir = tmp(t);
  // A plugin that imports nothing: its manifest names capabilities as data, { id, version }.
  writeFileSync(
    join(dir, 'tiny.mjs'),
    `export default {
      manifest: { name: 'tiny', version: '1.0.0', provides: [{ id: 'test.widget', version: 1 }], requires: [] },
      register(ctx) { ctx.provide({ id: 'test.widget', version: 1 }, { spin: () => 'spun by ' + ctx.config.by }); },
    };`,
  );
  const Widget = defineCapability<{ spin(): string }>('test.widget');
  const kernel = quietKernel();
  const [tiny] = await kernel.load([
    { use: './tiny.mjs', config: { by: 'tiny' }, origin: 'here', baseDir: dir },
  ]);
  t.is(tiny?.manifest.name, 'tiny');
  await kernel.start();
  t.is(kernel.get(Widget).spin(), 'spun by tiny');
  t.is((await loadPlugin({ use: 'tiny', origin: 'x', baseDir: dir }, aliases)).manifest.name, 'tiny');
  t.is((await loadPlugin({ use: join(dir, 'tiny.mjs'), origin: 'x', baseDir: '/' })).manifest.name, 'tiny');

  // A package installed next to the configuration.
  mkdirSync(join(dir, 'node_modules', 'nodelet-widget'), { recursive: true });
  writeFileSync(
    join(dir, 'node_modules', 'nodelet-widget', 'package.json'),
    JSON.stringify({ name: 'nodelet-widget', type: 'module', main: 'index.js' }),
  );
  writeFileSync(
    join(dir, 'node_modules', 'nodelet-widget', 'index.js'),
    "export const plugin = { manifest: { name: 'pkg', version: '1', provides: [], requires: [] }, register() {} };",
  );
  t.is((await loadPlugin({ use: 'nodelet-widget', origin: 'x', baseDir: dir })).manifest.name, 'pkg');
});

test('loader errors name the origin, the package or path, and what is allowed', async (t) => {
  const dir = tmp(t);
  t.throws(() => checkPluginName('Tiny Thing', 'flag --widget', aliases), {
    message:
      'flag --widget must be one of "tiny", or an npm package or path that exports a nodelet plugin; got "Tiny Thing"',
  });
  await t.throwsAsync(
    loadPlugin({ use: 'nodelet-widget-nonexistent', origin: 'flag --widget', baseDir: dir }, aliases),
    {
      message:
        'flag --widget: cannot load widget package "nodelet-widget-nonexistent": it is not installed; the widget must be one of "tiny", or an npm package or path that exports a nodelet plugin',
    },
  );
  await t.throwsAsync(
    loadPlugin({ use: './missing.mjs', origin: 'f.yaml: field "plugins[0].use"', baseDir: dir }),
    {
      message:
        /^f\.yaml: field "plugins\[0\]\.use": cannot load plugin path "\.\/missing\.mjs": no such file/,
    },
  );
  writeFileSync(
    join(dir, 'unversioned.mjs'),
    "export default { manifest: { name: 'u', version: '1', provides: [{ id: 'a.b' }], requires: [] }, register() {} };",
  );
  await t.throwsAsync(loadPlugin({ use: './unversioned.mjs', origin: 'here', baseDir: dir }), {
    message:
      'here: plugin path "./unversioned.mjs" does not export a nodelet plugin (a default or named "plugin" export with a manifest and register()): manifest.provides: capability \'a.b\' has no major version (write { id, version: 1 })',
  });
});

import test from 'ava';
import { defineCapability } from './capability.js';
import { Kernel } from './kernel.js';
import { createLogger, MemorySink } from './logger.js';
import { definePlugin, type NodeletPlugin } from './plugin.js';

interface Greeter {
  greet(): string;
}
const GreeterCap = defineCapability<Greeter>('test.greeter', { description: 'says hello' });
const ListenerCap = defineCapability<string>('test.listener', { cardinality: 'many' });
const OtherCap = defineCapability<number>('test.other');

const greeterPlugin = (name: string, text = 'hello'): NodeletPlugin =>
  definePlugin({
    manifest: { name, version: '1.0.0', provides: [GreeterCap], requires: [] },
    register: (ctx) => ctx.provide(GreeterCap, { greet: () => text }),
  });

const quietKernel = () => new Kernel({ logger: createLogger({ sink: new MemorySink().sink }) });

test('links providers before consumers and hands each plugin what it required', async (t) => {
  const seen: string[] = [];
  const consumer = definePlugin({
    manifest: { name: 'consumer', version: '1.0.0', provides: [], requires: [GreeterCap] },
    register: (ctx) => ctx.onStart(() => void seen.push(ctx.get(GreeterCap).greet())),
  });
  const kernel = quietKernel().use(consumer).use(greeterPlugin('greeter'));
  await kernel.start();
  t.deepEqual(seen, ['hello']);
  t.is(kernel.get(GreeterCap).greet(), 'hello');
  await kernel.stop();
});

test('refuses a required capability that no plugin provides, naming both', async (t) => {
  const consumer = definePlugin({
    manifest: { name: 'kubelet', version: '1.0.0', provides: [], requires: [GreeterCap] },
    register: () => {},
  });
  const err = await t.throwsAsync(quietKernel().use(consumer).start());
  t.is(
    err?.message,
    "plugin 'kubelet' requires capability 'test.greeter', but no loaded plugin provides it; configure a plugin that provides 'test.greeter' (says hello)",
  );
});

test('refuses two providers of a one-of capability', async (t) => {
  const err = await t.throwsAsync(quietKernel().use(greeterPlugin('a')).use(greeterPlugin('b')).start());
  t.is(
    err?.message,
    "capability 'test.greeter' takes exactly one provider, but 'a' and 'b' both provide it; choose one in the configuration",
  );
});

test('accepts several providers of a many capability', async (t) => {
  const listener = (name: string) =>
    definePlugin({
      manifest: { name, version: '1', provides: [ListenerCap], requires: [] },
      register: (ctx) => ctx.provide(ListenerCap, name),
    });
  let all: string[] = [];
  const collector = definePlugin({
    manifest: { name: 'collector', version: '1', provides: [], requires: [], optional: [ListenerCap] },
    register: (ctx) => void (all = ctx.getAll(ListenerCap)),
  });
  await quietKernel().use(collector).use(listener('x')).use(listener('y')).start();
  t.deepEqual(all.sort(), ['x', 'y']);
});

test('refuses a dependency cycle and prints it', async (t) => {
  const a = definePlugin({
    manifest: { name: 'a', version: '1', provides: [GreeterCap], requires: [OtherCap] },
    register: () => {},
  });
  const b = definePlugin({
    manifest: { name: 'b', version: '1', provides: [OtherCap], requires: [GreeterCap] },
    register: () => {},
  });
  const err = await t.throwsAsync(quietKernel().use(a).use(b).start());
  t.is(err?.message, 'plugins form a dependency cycle: a → b → a; break it by removing one requirement');
});

test('refuses a plugin that asks for a capability it did not declare', async (t) => {
  const sneaky = definePlugin({
    manifest: { name: 'sneaky', version: '1', provides: [], requires: [] },
    register: (ctx) => void ctx.get(GreeterCap),
  });
  const err = await t.throwsAsync(quietKernel().use(greeterPlugin('greeter')).use(sneaky).start());
  t.is(
    err?.message,
    "plugin 'sneaky' asked for capability 'test.greeter' without declaring it; add it to the manifest's requires or optional",
  );
});

test('refuses a plugin that provides what it did not declare, or declares what it does not provide', async (t) => {
  const liar = definePlugin({
    manifest: { name: 'liar', version: '1', provides: [], requires: [] },
    register: (ctx) => ctx.provide(GreeterCap, { greet: () => '' }),
  });
  const e1 = await t.throwsAsync(quietKernel().use(liar).start());
  t.regex(e1!.message, /plugin 'liar' provides capability 'test.greeter' without declaring it/);

  const lazy = definePlugin({
    manifest: { name: 'lazy', version: '1', provides: [GreeterCap], requires: [] },
    register: () => {},
  });
  const e2 = await t.throwsAsync(quietKernel().use(lazy).start());
  t.is(
    e2?.message,
    "plugin 'lazy' declares that it provides 'test.greeter' but did not provide it in register()",
  );
});

test('refuses the same plugin loaded twice', async (t) => {
  const err = await t.throwsAsync(quietKernel().use(greeterPlugin('g')).use(greeterPlugin('g')).start());
  t.is(err?.message, "plugin 'g' is loaded twice; load each plugin once");
});

test('validates plugin configuration against its schema, naming origin and field', async (t) => {
  const configured = definePlugin<{ latencyMs: number; mode: string }>({
    manifest: {
      name: 'configured',
      version: '1',
      provides: [],
      requires: [],
      configSchema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          latencyMs: { type: 'integer', minimum: 0, default: 5 },
          mode: { enum: ['fast', 'slow'], default: 'fast' },
        },
      },
    },
    register: (ctx) => void t.deepEqual(ctx.config, { latencyMs: 5, mode: 'fast' }),
  });
  await quietKernel().use(configured, {}).start();

  const err = await t.throwsAsync(
    quietKernel()
      .use(configured, { mode: 'medium', latncyMs: 1 }, 'nodelet.yaml: plugins.configured')
      .start(),
  );
  t.is(
    err?.message,
    'nodelet.yaml: plugins.configured: unknown field "latncyMs"; remove it or check its spelling; field "mode" must be one of "fast", "slow"',
  );
});

test('starts in dependency order, stops in reverse, and stops what started when a later start fails', async (t) => {
  const log: string[] = [];
  const p = (name: string, provides: any[], requires: any[], failStart = false) =>
    definePlugin({
      manifest: { name, version: '1', provides, requires },
      register: (ctx) => {
        for (const cap of provides) ctx.provide(cap, {} as any);
        ctx.onStart(() => {
          if (failStart) throw new Error(`${name} cannot start`);
          log.push(`start ${name}`);
        });
        ctx.onStop(() => void log.push(`stop ${name}`));
      },
    });
  const k = quietKernel()
    .use(p('top', [], [GreeterCap]))
    .use(p('base', [GreeterCap], []));
  await k.start();
  await k.stop();
  t.deepEqual(log, ['start base', 'start top', 'stop top', 'stop base']);

  log.length = 0;
  const k2 = quietKernel()
    .use(p('top', [], [GreeterCap], true))
    .use(p('base', [GreeterCap], []));
  await t.throwsAsync(k2.start(), { message: 'top cannot start' });
  t.deepEqual(log, ['start base', 'stop base']);
});

import test from 'ava';
import { ContainerModule, inject, injectable } from 'inversify';
import { defineCapability } from './capability.js';
import { Kernel, KernelLogger, PluginConfig } from './kernel.js';
import { createLogger, type Logger, MemorySink } from './logger.js';
import { definePlugin } from './plugin.js';

interface Greeter {
  greet(): string;
}
const GreeterCap = defineCapability<Greeter>('test.greeter');
const PunctuationCap = defineCapability<string>('test.punctuation');

/** A plugin's internal part, built by its container: the capability it requires and its config injected. */
@injectable()
class ConfiguredGreeter implements Greeter {
  constructor(
    @inject(PluginConfig.identifier) private readonly config: { name: string },
    @inject(PunctuationCap.identifier) private readonly punctuation: string,
    @inject(KernelLogger.identifier) readonly logger: Logger,
  ) {}
  greet(): string {
    return `hello, ${this.config.name}${this.punctuation}`;
  }
}

test('a plugin’s bindings are loaded into its own container; what they bind of its provides is provided', async (t) => {
  const sink = new MemorySink();
  const punctuation = definePlugin({
    manifest: { name: 'punctuation', version: '1', provides: [PunctuationCap], requires: [] },
    bindings: new ContainerModule(({ bind }) => void bind(PunctuationCap.identifier).toConstantValue('!')),
  });
  const greeter = definePlugin<{ name: string }>({
    manifest: {
      name: 'greeter',
      version: '1',
      provides: [GreeterCap],
      requires: [PunctuationCap],
      configSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
    },
    bindings: new ContainerModule(({ bind }) => {
      bind(GreeterCap.identifier).to(ConfiguredGreeter).inSingletonScope();
    }),
  });
  const kernel = new Kernel({ logger: createLogger({ sink: sink.sink }) })
    .use(greeter, { name: 'ada' })
    .use(punctuation);
  await kernel.start();
  const built = kernel.get(GreeterCap) as ConfiguredGreeter;
  t.is(built.greet(), 'hello, ada!');
  built.logger.info('built by the container');
  t.is(sink.find('built by the container')[0]?.component, 'nodelet.greeter', 'the plugin’s own logger');
});

test('a part that injects a capability its plugin did not declare fails: the container holds only what is declared', async (t) => {
  const sneaky = definePlugin<{ name: string }>({
    manifest: { name: 'sneaky', version: '1', provides: [GreeterCap], requires: [] },
    bindings: new ContainerModule(({ bind }) => void bind(GreeterCap.identifier).to(ConfiguredGreeter)),
  });
  const punctuation = definePlugin({
    manifest: { name: 'punctuation', version: '1', provides: [PunctuationCap], requires: [] },
    bindings: new ContainerModule(({ bind }) => void bind(PunctuationCap.identifier).toConstantValue('!')),
  });
  const kernel = new Kernel({ logger: createLogger({ sink: new MemorySink().sink }) });
  await t.throwsAsync(kernel.use(punctuation).use(sneaky, { name: 'x' }).start(), {
    message: /test\.punctuation/,
  });
});

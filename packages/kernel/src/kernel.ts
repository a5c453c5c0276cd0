import 'reflect-metadata';
import { Container, inject } from 'inversify';
import { type Capability, capabilityIdentifier, type CapabilityRef, defineCapability } from './capability.js';
import { type Clock, RealClock } from './clock.js';
import { EventBus } from './bus.js';
import { ConfigError, errorMessage, LinkError } from './errors.js';
import { link } from './linker.js';
import { type LoaderOptions, loadPlugin, type PluginSpec } from './loader.js';
import { createLogger, type Logger } from './logger.js';
import type { NodeletPlugin, PluginContext, StartStopHook } from './plugin.js';
import { validateConfig } from './config.js';

/** The kernel's own services: every plugin may use them without declaring them. */
export const KernelBus = defineCapability<EventBus>('kernel.bus', { version: 1 });
export const KernelClock = defineCapability<Clock>('kernel.clock', { version: 1 });
export const KernelLogger = defineCapability<Logger>('kernel.logger', { version: 1 });
/** In a plugin's own container: its validated configuration (and `KernelLogger` is its own logger). */
export const PluginConfig = defineCapability<unknown>('kernel.plugin-config', { version: 1 });
const builtIns: Capability<unknown>[] = [KernelBus, KernelClock, KernelLogger, PluginConfig];

export interface KernelOptions {
  clock?: Clock;
  logger?: Logger;
}

interface Loaded {
  plugin: NodeletPlugin<any>;
  config: unknown;
  origin: string;
}

/** The inversify identifier of a manifest's capability, whether an object or data. */
const identifierOf = (cap: CapabilityRef) =>
  (cap as Partial<Capability<unknown>>).identifier ?? capabilityIdentifier(cap.id);

interface Registered {
  name: string;
  start: StartStopHook[];
  stop: StartStopHook[];
}

type KernelState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/**
 * The microkernel: load plugins, link their capability graph, register them into inversify containers,
 * start them in dependency order and stop them in reverse.
 */
export class Kernel {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly bus: EventBus;
  private readonly root = new Container();
  private readonly loaded: Loaded[] = [];
  private registered: Registered[] = [];
  private started = 0;
  private state: KernelState = 'new';
  private signalHandler?: (signal: NodeJS.Signals) => void;

  constructor(options: KernelOptions = {}) {
    this.clock = options.clock ?? new RealClock();
    this.logger = options.logger ?? createLogger();
    this.bus = new EventBus(this.clock, this.logger.child('bus'));
    this.root.bind(KernelBus.identifier).toConstantValue(this.bus);
    this.root.bind(KernelClock.identifier).toConstantValue(this.clock);
    this.root.bind(KernelLogger.identifier).toConstantValue(this.logger);
  }

  /** Adds a plugin with its raw configuration; `origin` names where that configuration came from. */
  use<C>(
    plugin: NodeletPlugin<C>,
    config?: unknown,
    origin = `plugin '${plugin.manifest.name}' configuration`,
  ): this {
    if (this.state !== 'new')
      throw new LinkError(`cannot add plugin '${plugin.manifest.name}' after the kernel started`);
    this.loaded.push({ plugin, config: config ?? {}, origin });
    return this;
  }

  /**
   * Loads the plugins a configuration lists (built-in names through `options.aliases`, packages,
   * paths) and adds each with its configuration, in order. Returns the plugins loaded.
   */
  async load(specs: readonly PluginSpec[], options: LoaderOptions = {}): Promise<NodeletPlugin<any>[]> {
    const plugins: NodeletPlugin<any>[] = [];
    for (const spec of specs) plugins.push(await loadPlugin(spec, options));
    plugins.forEach((plugin, i) =>
      this.use(plugin, specs[i]!.config, specs[i]!.configOrigin ?? specs[i]!.origin),
    );
    return plugins;
  }

  /**
   * Validates every plugin's configuration (all errors at once), links, registers and starts every
   * plugin. On failure, what already started is stopped again.
   */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`kernel is ${this.state}; start it once`);
    this.state = 'starting';
    try {
      const configs = this.validateConfigs();
      const graph = link(
        this.loaded.map((l) => l.plugin),
        builtIns,
      );
      for (const plugin of graph.order) {
        const loaded = this.loaded.find((l) => l.plugin === plugin)!;
        this.registered.push(await this.register(loaded, configs.get(loaded)));
      }
      for (const entry of this.registered) {
        for (const hook of entry.start) await hook();
        this.started++;
      }
      this.state = 'running';
    } catch (err) {
      await this.stopStarted();
      this.state = 'stopped';
      throw err;
    }
  }

  /** Stops plugins in reverse start order. A failing stop hook is logged; the others still run. */
  async stop(): Promise<void> {
    if (this.state === 'stopped' || this.state === 'stopping' || this.state === 'new') return;
    this.state = 'stopping';
    await this.stopStarted();
    this.bus.complete();
    if (this.signalHandler) {
      process.off('SIGINT', this.signalHandler);
      process.off('SIGTERM', this.signalHandler);
    }
    this.state = 'stopped';
  }

  /** Stops the kernel on SIGINT/SIGTERM, then calls `onStopped` (e.g. to exit the process). */
  stopOnSignals(onStopped: (signal: string) => void = () => process.exit(0)): void {
    const handler = (signal: NodeJS.Signals) => {
      this.logger.info('received signal; stopping', { signal });
      void this.stop().then(() => onStopped(signal));
    };
    this.signalHandler = handler;
    process.once('SIGINT', handler);
    process.once('SIGTERM', handler);
  }

  /** The provider of a capability, for the host program (CLI, tests). */
  get<T>(capability: Capability<T>): T {
    if (!this.root.isBound(capability.identifier)) {
      throw new LinkError(`no plugin provides capability '${capability.id}'`);
    }
    return this.root.get(capability.identifier);
  }

  getAll<T>(capability: Capability<T>): T[] {
    return this.root.isBound(capability.identifier) ? this.root.getAll(capability.identifier) : [];
  }

  get running(): boolean {
    return this.state === 'running';
  }

  /** Every plugin's configuration, validated (defaults filled in); one ConfigError lists every problem. */
  private validateConfigs(): Map<Loaded, unknown> {
    const out = new Map<Loaded, unknown>();
    const problems: string[] = [];
    for (const loaded of this.loaded) {
      const schema = loaded.plugin.manifest.configSchema;
      try {
        out.set(
          loaded,
          schema ? validateConfig(schema, structuredClone(loaded.config), loaded.origin) : loaded.config,
        );
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        problems.push(err.message);
      }
    }
    if (problems.length > 0) throw new ConfigError(problems.join('\n'));
    return out;
  }

  private async register(loaded: Loaded, config: unknown): Promise<Registered> {
    const { plugin } = loaded;
    const { manifest } = plugin;
    const name = manifest.name;
    const declared = new Map([...manifest.requires, ...(manifest.optional ?? [])].map((c) => [c.id, c]));
    const provides = new Set(manifest.provides.map((c) => c.id));
    const provided = new Set<string>();
    const entry: Registered = { name, start: [], stop: [] };

    // The plugin's own container: only what it declared, plus the kernel's services.
    const logger = this.logger.child(name);
    const container = new Container();
    container.bind(KernelBus.identifier).toConstantValue(this.bus);
    container.bind(KernelClock.identifier).toConstantValue(this.clock);
    container.bind(KernelLogger.identifier).toConstantValue(logger);
    container.bind(PluginConfig.identifier).toConstantValue(config);
    for (const cap of declared.values()) {
      const id = identifierOf(cap);
      if (!this.root.isBound(id)) continue;
      for (const impl of this.root.getAll(id)) container.bind(id).toConstantValue(impl);
    }

    const mustDeclare = (cap: CapabilityRef, verb: string) => {
      if (!declared.has(cap.id) && !builtIns.some((b) => b.id === cap.id)) {
        throw new LinkError(
          `plugin '${name}' ${verb} capability '${cap.id}' without declaring it; add it to the manifest's requires or optional`,
        );
      }
    };

    const context: PluginContext<any> = {
      name,
      config,
      bus: this.bus,
      clock: this.clock,
      logger,
      container,
      provide: (cap: CapabilityRef, implementation: unknown) => {
        if (!provides.has(cap.id)) {
          throw new LinkError(
            `plugin '${name}' provides capability '${cap.id}' without declaring it; add it to the manifest's provides`,
          );
        }
        this.root.bind(identifierOf(cap)).toConstantValue(implementation);
        provided.add(cap.id);
      },
      get: (cap: CapabilityRef): any => {
        mustDeclare(cap, 'asked for');
        if (!container.isBound(identifierOf(cap))) {
          throw new LinkError(`plugin '${name}' asked for capability '${cap.id}', but no plugin provides it`);
        }
        return container.get(identifierOf(cap));
      },
      getOptional: (cap: CapabilityRef): any => {
        mustDeclare(cap, 'asked for');
        return container.isBound(identifierOf(cap)) ? container.get(identifierOf(cap)) : undefined;
      },
      getAll: (cap: CapabilityRef): any[] => {
        mustDeclare(cap, 'asked for');
        return container.isBound(identifierOf(cap)) ? container.getAll(identifierOf(cap)) : [];
      },
      onStart: (hook) => void entry.start.push(hook),
      onStop: (hook) => void entry.stop.unshift(hook),
    };

    if (plugin.bindings) await container.loadAsync(plugin.bindings);
    await plugin.register?.(context);
    // What the bindings provide: each capability of `provides` the plugin's container binds itself.
    for (const cap of manifest.provides) {
      const id = identifierOf(cap);
      if (provided.has(cap.id) || declared.has(cap.id) || !container.isCurrentBound(id)) continue;
      for (const impl of container.getAll(id)) this.root.bind(id).toConstantValue(impl);
      provided.add(cap.id);
    }
    for (const id of provides) {
      if (!provided.has(id)) {
        throw new LinkError(
          `plugin '${name}' declares that it provides '${id}' but did not provide it in register()`,
        );
      }
    }
    return entry;
  }

  private async stopStarted(): Promise<void> {
    for (const entry of this.registered.slice(0, this.started).reverse()) {
      for (const hook of entry.stop) {
        try {
          await hook();
        } catch (err) {
          this.logger.error('plugin failed to stop', { plugin: entry.name, err: errorMessage(err) });
        }
      }
    }
    this.started = 0;
  }
}

/** Parameter decorators for a plugin's `@injectable` parts: its configuration, logger and clock. */
export const injectConfig = () => inject(PluginConfig.identifier);
export const injectLogger = () => inject(KernelLogger.identifier);
export const injectClock = () => inject(KernelClock.identifier);

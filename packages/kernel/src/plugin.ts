import type { Container, ContainerModule } from 'inversify';
import type { Capability, CapabilityRef } from './capability.js';
import type { Clock } from './clock.js';
import type { EventBus } from './bus.js';
import type { Logger } from './logger.js';

/**
 * What a plugin declares about itself, as plain data checked before anything starts (like a
 * WebAssembly component's imports and exports, or a Backstage plugin's deps).
 */
export interface PluginManifest {
  /** Unique name; for third-party plugins, the npm package name. */
  readonly name: string;
  readonly version: string;
  readonly description?: string;
  /**
   * Capabilities this plugin binds, each with the major version it was built against (a capability
   * object carries it; a plugin that imports nothing of nodelet writes `{ id, version }`).
   */
  readonly provides: readonly CapabilityRef[];
  /** Capabilities this plugin needs; linking fails when one has no provider of the same major version. */
  readonly requires: readonly CapabilityRef[];
  /** Capabilities this plugin uses when present (`getOptional`, `getAll`). */
  readonly optional?: readonly CapabilityRef[];
  /**
   * JSON Schema of the plugin's configuration (the `config` of its `plugins:` entry). Every plugin's
   * configuration is validated before any plugin registers; errors name the file and the field.
   */
  readonly configSchema?: object;
}

export type StartStopHook = () => void | Promise<void>;

/** What `register` is handed: the plugin's own view of the kernel. */
export interface PluginContext<C = unknown> {
  readonly name: string;
  /** The plugin's validated configuration (defaults applied by the schema). */
  readonly config: C;
  readonly bus: EventBus;
  readonly clock: Clock;
  readonly logger: Logger;
  /**
   * A container holding only the capabilities this plugin declared (required and optional) plus the
   * kernel's services: the plugin's `bindings` are loaded into it, and its parts resolved from it.
   */
  readonly container: Container;
  /** Binds an implementation of a capability this plugin declared in `provides`. */
  provide<T>(capability: Capability<T>, implementation: T): void;
  provide(capability: CapabilityRef, implementation: unknown): void;
  /** The provider of a `one` capability declared in `requires`. */
  get<T>(capability: Capability<T>): T;
  get(capability: CapabilityRef): unknown;
  /** The provider of a capability declared in `optional`, or undefined. */
  getOptional<T>(capability: Capability<T>): T | undefined;
  getOptional(capability: CapabilityRef): unknown;
  /** Every provider of a `many` capability (declared in `requires` or `optional`); empty when none. */
  getAll<T>(capability: Capability<T>): T[];
  getAll(capability: CapabilityRef): unknown[];
  /** Called when the kernel starts, after every plugin this one requires has started. */
  onStart(hook: StartStopHook): void;
  /** Called when the kernel stops, before the plugins this one requires are stopped. */
  onStop(hook: StartStopHook): void;
}

export interface NodeletPlugin<C = unknown> {
  readonly manifest: PluginManifest;
  /**
   * The plugin's parts as inversify bindings, loaded into its own container (which holds only what the
   * manifest declares, the kernel's services, `PluginConfig` and the plugin's logger as `KernelLogger`).
   * Each capability of `provides` bound here is resolved from that container and provided.
   */
  readonly bindings?: ContainerModule;
  /** Runs after `bindings` are loaded: start/stop hooks, and anything provided by hand. */
  register?(context: PluginContext<C>): void | Promise<void>;
}

/** Identity helper that gives plugin authors type inference for their config. */
export function definePlugin<C = unknown>(plugin: NodeletPlugin<C>): NodeletPlugin<C> {
  return plugin;
}

import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError, type NodeletPlugin } from '@nodelet/kernel';

/**
 * Which plugin provides the container runtime (`cri.runtime` + `cri.image`). A built-in name maps to an
 * async loader, so a runtime's code is only imported when it is chosen; anything else names an npm
 * package or a path whose module exports a nodelet plugin (`export default` or `export const plugin`).
 */
export type RuntimeLoader = () => Promise<NodeletPlugin<any>>;

/** Built-in runtimes: name → loader. Add a runtime by adding an entry. */
export const builtInRuntimes = new Map<string, RuntimeLoader>([
  ['fake', async () => (await import('@nodelet/runtime-fake')).runtimeFakePlugin as NodeletPlugin<any>],
  [
    'containerd',
    async () => (await import('@nodelet/runtime-containerd')).runtimeContainerdPlugin as NodeletPlugin<any>,
  ],
  ['crio', async () => (await import('@nodelet/runtime-crio')).runtimeCrioPlugin as NodeletPlugin<any>],
]);

/** The CRI endpoint settings a runtime plugin's config takes, when its schema has them (runtime-cri and presets). */
export interface CriEndpointSettings {
  runtimeEndpoint?: string;
  imageEndpoint?: string;
  runtimeRequestTimeoutMs?: number;
}

/** True when the plugin's config schema has a `runtimeEndpoint` field (a CRI runtime over gRPC). */
export function takesCriEndpoint(plugin: NodeletPlugin<any>): boolean {
  const schema = plugin.manifest.configSchema as { properties?: Record<string, unknown> } | undefined;
  return schema?.properties?.runtimeEndpoint !== undefined;
}

/**
 * The runtime plugin's configuration: its `plugins.<name>` section over the KubeletConfiguration's
 * CRI settings (containerRuntimeEndpoint, imageServiceEndpoint, runtimeRequestTimeout), under the
 * upstream flags (--container-runtime-endpoint, --image-service-endpoint). Plugins without those
 * fields get their section unchanged.
 */
export function runtimePluginConfig(
  plugin: NodeletPlugin<any>,
  section: Record<string, unknown>,
  kubeletConfig: CriEndpointSettings,
  flags: CriEndpointSettings,
): Record<string, unknown> {
  if (!takesCriEndpoint(plugin)) return section;
  const defined = (o: CriEndpointSettings) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== ''));
  return { ...defined(kubeletConfig), ...section, ...defined(flags) };
}

export interface RuntimeChoice {
  /** `fake`, `containerd`, an npm package name, or a path. */
  name: string;
  /** Where the choice was made, for errors: `flag --runtime`, `/etc/nodelet.yaml: field "runtime"`. */
  origin: string;
  /** Directory a relative path is resolved against: the config file's directory, or the working directory. */
  baseDir: string;
}

const isPath = (name: string) =>
  name.startsWith('./') || name.startsWith('../') || isAbsolute(name) || name === '.';
/** npm's rules for a package name (with an optional subpath), as `import()` would accept it. */
const isPackageName = (name: string) =>
  /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*(\/[A-Za-z0-9._~/-]+)?$/.test(name);

function allowed(): string {
  return `${[...builtInRuntimes.keys()].map((n) => JSON.stringify(n)).join(', ')}, or an npm package or path that exports a nodelet plugin`;
}

/** Refuses a runtime name that is neither built in, nor a package name, nor a path. */
export function checkRuntimeName(choice: RuntimeChoice): void {
  const { name } = choice;
  if (builtInRuntimes.has(name) || isPath(name) || isPackageName(name)) return;
  const near = [...builtInRuntimes.keys()].find((n) => n === name.trim().toLowerCase());
  throw new ConfigError(
    `${choice.origin} must be one of ${allowed()}; got ${JSON.stringify(name)}${near ? ` (did you mean "${near}"?)` : ''}`,
  );
}

/** Loads the plugin that provides the runtime. Errors name the origin and the package or path. */
export async function loadRuntime(choice: RuntimeChoice): Promise<NodeletPlugin<any>> {
  checkRuntimeName(choice);
  const builtIn = builtInRuntimes.get(choice.name);
  if (builtIn) return builtIn();
  return loadPluginModule(choice.name, choice.baseDir, choice.origin);
}

/**
 * Imports a third-party plugin: a path (relative to `baseDir`) or a package (resolved from nodelet's own
 * install, then from `baseDir`, so a package installed next to the config is found too).
 */
export async function loadPluginModule(
  spec: string,
  baseDir: string,
  origin: string,
): Promise<NodeletPlugin<any>> {
  let module: Record<string, unknown>;
  const what = isPath(spec) ? `path "${spec}"` : `package "${spec}"`;
  try {
    if (isPath(spec)) {
      module = await import(pathToFileURL(resolve(baseDir, spec)).href);
    } else {
      try {
        module = await import(spec);
      } catch (err) {
        if (!isNotFound(err, spec)) throw err;
        let resolved: string;
        try {
          resolved = createRequire(join(baseDir, 'noop.js')).resolve(spec);
        } catch {
          throw err;
        }
        module = await import(pathToFileURL(resolved).href);
      }
    }
  } catch (err) {
    if (isNotFound(err, isPath(spec) ? resolve(baseDir, spec) : spec)) {
      throw new ConfigError(
        `${origin}: cannot load runtime ${what}: ${isPath(spec) ? 'no such file' : 'it is not installed'}; the runtime must be one of ${allowed()}`,
      );
    }
    throw new ConfigError(
      `${origin}: cannot load runtime ${what}: ${(err as Error).message?.split('\n')[0] ?? String(err)}`,
    );
  }
  const candidate = module.default ?? module.plugin;
  const problem = pluginProblem(candidate);
  if (problem) {
    throw new ConfigError(
      `${origin}: runtime ${what} does not export a nodelet plugin (a default or named "plugin" export with a manifest and register()): ${problem}`,
    );
  }
  return candidate as NodeletPlugin<any>;
}

function isNotFound(err: unknown, spec: string): boolean {
  const e = err as NodeJS.ErrnoException;
  return (
    (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') &&
    typeof e.message === 'string' &&
    e.message.includes(`'${spec}'`)
  );
}

/** Why `value` is not a plugin, or undefined when it is one. */
export function pluginProblem(value: unknown): string | undefined {
  if (!value || typeof value !== 'object') return 'no such export';
  const { manifest, register } = value as Partial<NodeletPlugin>;
  if (typeof register !== 'function') return 'register is not a function';
  if (!manifest || typeof manifest !== 'object') return 'it has no manifest';
  if (typeof manifest.name !== 'string' || !manifest.name) return 'manifest.name is not a string';
  if (!Array.isArray(manifest.provides)) return 'manifest.provides is not a list';
  if (!Array.isArray(manifest.requires)) return 'manifest.requires is not a list';
  return undefined;
}

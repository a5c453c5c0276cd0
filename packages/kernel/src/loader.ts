import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from './errors.js';
import type { NodeletPlugin } from './plugin.js';

/**
 * The plugin loader: one entry of the configuration's `plugins: [{ use, config }]` list to a plugin.
 * `use` is a built-in name, an npm package or a path. Built-in names come from an alias table the host
 * program supplies (the kernel knows no plugin by name): `{ fake: '@nodelet/runtime-fake', … }`. A
 * package or path names a module whose default or named `plugin` export is a nodelet plugin.
 */
export interface PluginSpec {
  /** A built-in name, an npm package name, or a path (relative to `baseDir`). */
  readonly use: string;
  /** The plugin's configuration, validated against its manifest's `configSchema` before any plugin registers. */
  readonly config?: unknown;
  /** Where `use` was written, for errors: `flag --runtime`, `/etc/nodelet.yaml: field "plugins[1].use"`. */
  readonly origin: string;
  /** Where `config` was written, for its errors: `/etc/nodelet.yaml: plugins[1].config`. Default: `origin`. */
  readonly configOrigin?: string;
  /** Directory a relative path is resolved against: the config file's directory, or the working directory. */
  readonly baseDir: string;
}

export interface LoaderOptions {
  /** Built-in names → npm package names (or loaders, to import a plugin the host program bundles). */
  readonly aliases?: Readonly<Record<string, string | (() => Promise<unknown>)>>;
  /**
   * Imports a package as the host program resolves it (pass `(name) => import(name)`); default: resolved
   * from the kernel's own install. Either way a package installed next to the config is found too.
   */
  readonly importModule?: (specifier: string) => Promise<unknown>;
  /** What is loaded, in messages: `runtime`, `proxy backend`. Default `plugin`. */
  readonly kind?: string;
}

/** Why loading failed: a caller that has its own message for a slot tells the cases apart by this. */
export type PluginLoadFailure = 'bad-name' | 'not-found' | 'failed' | 'not-a-plugin';

export class PluginLoadError extends ConfigError {
  override name = 'ConfigError';
  constructor(
    readonly failure: PluginLoadFailure,
    /** The bare reason, without origin: `it is not installed`, the import's first error line. */
    readonly detail: string,
    message: string,
  ) {
    super(message);
  }
}

export const isPluginPath = (name: string): boolean =>
  name.startsWith('./') || name.startsWith('../') || isAbsolute(name) || name === '.';

/** npm's rules for a package name (with an optional subpath), as `import()` would accept it. */
const isPackageName = (name: string) =>
  /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*(\/[A-Za-z0-9._~/-]+)?$/.test(name);

function allowed(options: LoaderOptions): string {
  const names = Object.keys(options.aliases ?? {}).map((n) => JSON.stringify(n));
  const rest = `an npm package or path that exports a nodelet plugin`;
  return names.length > 0 ? `${names.join(', ')}, or ${rest}` : rest;
}

/** Refuses a name that is neither built in, nor a package name, nor a path (before anything loads). */
export function checkPluginName(use: string, origin: string, options: LoaderOptions = {}): void {
  const aliases = options.aliases ?? {};
  if (Object.hasOwn(aliases, use) || isPluginPath(use) || isPackageName(use)) return;
  const near = Object.keys(aliases).find((n) => n === use.trim().toLowerCase());
  throw new PluginLoadError(
    'bad-name',
    `not a name, package or path`,
    `${origin} must be one of ${allowed(options)}; got ${JSON.stringify(use)}${near ? ` (did you mean "${near}"?)` : ''}`,
  );
}

/** Loads the plugin an entry names. Errors name the entry's origin and the package or path. */
export async function loadPlugin(spec: PluginSpec, options: LoaderOptions = {}): Promise<NodeletPlugin<any>> {
  checkPluginName(spec.use, spec.origin, options);
  const kind = options.kind ?? 'plugin';
  const alias = Object.hasOwn(options.aliases ?? {}, spec.use) ? options.aliases![spec.use] : undefined;
  const target = alias ?? spec.use;
  const what =
    typeof target === 'function'
      ? `"${spec.use}"`
      : isPluginPath(target)
        ? `path "${target}"`
        : `package "${target}"`;
  let module: unknown;
  try {
    module = typeof target === 'function' ? await target() : await importSpec(target, spec.baseDir, options);
  } catch (err) {
    const path = typeof target === 'string' && isPluginPath(target);
    if (typeof target === 'string' && isNotFound(err, path ? resolve(spec.baseDir, target) : target)) {
      const detail = path ? 'no such file' : 'it is not installed';
      throw new PluginLoadError(
        'not-found',
        firstLine(err),
        `${spec.origin}: cannot load ${kind} ${what}: ${detail}; the ${kind} must be one of ${allowed(options)}`,
      );
    }
    throw new PluginLoadError(
      'failed',
      firstLine(err),
      `${spec.origin}: cannot load ${kind} ${what}: ${firstLine(err)}`,
    );
  }
  const exports = (module ?? {}) as Record<string, unknown>;
  const candidate = exports.default ?? exports.plugin;
  const problem = pluginProblem(candidate);
  if (problem) {
    throw new PluginLoadError(
      'not-a-plugin',
      problem,
      `${spec.origin}: ${kind} ${what} does not export a nodelet plugin (a default or named "plugin" export with a manifest and register()): ${problem}`,
    );
  }
  return candidate as NodeletPlugin<any>;
}

/**
 * A path (relative to `baseDir`) or a package: resolved as the host program resolves it, then from
 * `baseDir`, so a package installed next to the config is found too.
 */
async function importSpec(spec: string, baseDir: string, options: LoaderOptions): Promise<unknown> {
  if (isPluginPath(spec)) return import(pathToFileURL(entryOf(resolve(baseDir, spec))).href);
  try {
    return await (options.importModule ?? ((s: string) => import(s)))(spec);
  } catch (err) {
    if (!isNotFound(err, spec)) throw err;
    let resolved: string;
    try {
      resolved = createRequire(join(baseDir, 'noop.js')).resolve(spec);
    } catch {
      throw err;
    }
    return import(pathToFileURL(resolved).href);
  }
}

/**
 * A path names a module file, or a package's directory: its package.json's `exports` (the `.` entry,
 * its `import` or `default` condition) or `main`, else index.js — what importing the package would run.
 */
function entryOf(path: string): string {
  if (!statSync(path, { throwIfNoEntry: false })?.isDirectory()) return path;
  let pkg: { exports?: unknown; main?: unknown } = {};
  try {
    pkg = JSON.parse(readFileSync(join(path, 'package.json'), 'utf8')) as typeof pkg;
  } catch {
    // no package.json: index.js, as Node would
  }
  const conditions = (e: unknown): unknown =>
    e && typeof e === 'object' && !Array.isArray(e)
      ? conditions(
          (e as Record<string, unknown>)['.'] ??
            (e as Record<string, unknown>).import ??
            (e as Record<string, unknown>).default,
        )
      : e;
  const entry = conditions(pkg.exports) ?? pkg.main ?? 'index.js';
  return join(path, typeof entry === 'string' ? entry : 'index.js');
}

function firstLine(err: unknown): string {
  return (err as Error)?.message?.split('\n')[0] ?? String(err);
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
  const { manifest, register, bindings } = value as Partial<NodeletPlugin>;
  if (typeof register !== 'function' && (typeof bindings !== 'object' || bindings === null))
    return 'register is not a function';
  if (!manifest || typeof manifest !== 'object') return 'it has no manifest';
  if (typeof manifest.name !== 'string' || !manifest.name) return 'manifest.name is not a string';
  for (const list of ['provides', 'requires'] as const) {
    const refs: unknown = manifest[list];
    if (!Array.isArray(refs)) return `manifest.${list} is not a list`;
    const bad = refs.find((c: { id?: unknown; version?: unknown }) => typeof c?.id !== 'string');
    if (bad !== undefined) return `manifest.${list} has an entry without an id`;
    const unversioned = refs.find((c: { version?: unknown }) => !Number.isInteger(c.version));
    if (unversioned)
      return `manifest.${list}: capability '${(unversioned as { id: string }).id}' has no major version (write { id, version: 1 })`;
  }
  return undefined;
}

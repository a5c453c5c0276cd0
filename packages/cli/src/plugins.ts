import {
  checkPluginName,
  type LoaderOptions,
  loadPlugin,
  type NodeletPlugin,
  type PluginSpec,
} from '@nodelet/kernel';

/**
 * The plugins nodelet ships, by the names a configuration uses for them, and how the CLI hands them to
 * the kernel's loader. The kernel knows no plugin by name: this table is the CLI's, which may depend on
 * plugins. Anything not in it is an npm package or a path, loaded the same way.
 */
export const runtimeAliases = {
  fake: '@nodelet/runtime-fake',
  containerd: '@nodelet/runtime-containerd',
  crio: '@nodelet/runtime-crio',
} as const;

export const proxyBackendAliases = {
  iptables: '@nodelet/proxy-iptables',
  nftables: '@nodelet/proxy-nftables',
  ipvs: '@nodelet/proxy-ipvs',
  userspace: '@nodelet/proxy-userspace',
} as const;

/** Packages resolve from the CLI's install (where nodelet's own plugins are), then the config's directory. */
const importModule = (name: string): Promise<unknown> => import(name);

/** `runtime:` / `--runtime`: the runtime names, and "runtime" in messages. */
export const runtimeLoading: LoaderOptions = { aliases: runtimeAliases, importModule, kind: 'runtime' };

/** `proxy.mode` / `--mode`. */
export const proxyBackendLoading: LoaderOptions = {
  aliases: proxyBackendAliases,
  importModule,
  kind: 'proxy backend',
};

/** An entry of a `plugins:` list: any built-in name, package or path. */
export const pluginLoading: LoaderOptions = {
  aliases: { ...runtimeAliases, ...proxyBackendAliases },
  importModule,
};

export interface RuntimeChoice {
  /** `fake`, `containerd`, an npm package name, or a path. */
  name: string;
  /** Where the choice was made, for errors: `flag --runtime`, `/etc/nodelet.yaml: field "runtime"`. */
  origin: string;
  /** Directory a relative path is resolved against: the config file's directory, or the working directory. */
  baseDir: string;
}

/** Where the runtime came from when nothing chose one. */
export const DEFAULT_RUNTIME_ORIGIN = 'the default runtime';

/** Refuses a runtime name that is neither built in, nor a package name, nor a path. */
export function checkRuntimeName(choice: RuntimeChoice): void {
  checkPluginName(choice.name, choice.origin, runtimeLoading);
}

/** The runtime plugin: `runtime:` expanded into one entry of the plugin list. */
export function loadRuntime(choice: RuntimeChoice): Promise<NodeletPlugin<any>> {
  return loadPlugin({ use: choice.name, origin: choice.origin, baseDir: choice.baseDir }, runtimeLoading);
}

/** Whether a plugin's manifest says it provides capability `id`. */
export const providesCapability = (plugin: NodeletPlugin<any>, id: string): boolean =>
  plugin.manifest.provides.some((c) => c.id === id);

/** A `plugins:` list of a config file as loader entries: origins name the file and the entry. */
export function pluginSpecs(
  entries: readonly { use: string; config?: Record<string, unknown> }[],
  file: string,
  baseDir: string,
  field = 'plugins',
): PluginSpec[] {
  return entries.map((entry, i) => ({
    use: entry.use,
    config: entry.config ?? {},
    origin: `${file}: field "${field}[${i}].use"`,
    configOrigin: `${file}: ${field}[${i}].config`,
    baseDir,
  }));
}

/**
 * The configuration a config file gives the plugin named `name`: its `plugins.<name>` section (the map
 * form), or the config of the list entry that names it by its built-in name or its plugin name.
 */
export function pluginSection(
  file: { path: string; nodelet?: { plugins?: unknown } } | undefined,
  name: string,
): { config: Record<string, unknown>; origin: string } {
  const plugins = file?.nodelet?.plugins;
  const where = file ? `${file.path}: plugins` : 'plugins';
  if (Array.isArray(plugins)) {
    const aliases = pluginLoading.aliases as Record<string, string>;
    const i = plugins.findIndex(
      (e: { use: string }) => e.use === name || aliases[e.use]?.endsWith(`/${name}`) === true,
    );
    if (i >= 0) return { config: plugins[i].config ?? {}, origin: `${where}[${i}].config` };
    return { config: {}, origin: `${where}.${name}` };
  }
  const map = (plugins ?? {}) as Record<string, Record<string, unknown>>;
  return { config: map[name] ?? {}, origin: `${where}.${name}` };
}

/** A plugin of a `plugins:` list, loaded, with its entry. */
export interface ListedPlugin {
  plugin: NodeletPlugin<any>;
  spec: PluginSpec;
}

/** Loads every entry of a `plugins:` list, in order (built-in names, packages, paths). */
export async function loadListed(specs: readonly PluginSpec[]): Promise<ListedPlugin[]> {
  const out: ListedPlugin[] = [];
  for (const spec of specs) out.push({ plugin: await loadPlugin(spec, pluginLoading), spec });
  return out;
}

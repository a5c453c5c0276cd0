import { type CapabilityRef, type Cardinality, capabilityLabel } from './capability.js';
import { LinkError } from './errors.js';
import type { NodeletPlugin } from './plugin.js';

/**
 * The linker resolves the capability graph before anything starts. It refuses, with a message that
 * says what to change: two plugins of one name, a required capability nobody provides, two providers of
 * a `one` capability, a requirer and a provider built against different major versions of a capability,
 * and dependency cycles. It returns the plugins in start order (providers first).
 */
export interface LinkedGraph {
  /** Plugins in dependency order: every plugin after the providers of what it requires. */
  readonly order: readonly NodeletPlugin<any>[];
  /** Capability id → names of the plugins that provide it. */
  readonly providers: ReadonlyMap<string, readonly string[]>;
}

export function link(
  plugins: readonly NodeletPlugin<any>[],
  builtIn: readonly CapabilityRef[] = [],
): LinkedGraph {
  const byName = new Map<string, NodeletPlugin<any>>();
  for (const plugin of plugins) {
    const { name } = plugin.manifest;
    if (byName.has(name)) throw new LinkError(`plugin '${name}' is loaded twice; load each plugin once`);
    byName.set(name, plugin);
  }

  const builtInIds = new Set(builtIn.map((c) => c.id));
  const providers = new Map<string, string[]>();
  for (const plugin of plugins) {
    for (const cap of plugin.manifest.provides) {
      const list = providers.get(cap.id) ?? [];
      list.push(plugin.manifest.name);
      providers.set(cap.id, list);
    }
  }
  const cardinality = cardinalities(plugins);

  for (const [id, names] of providers) {
    if ((cardinality.get(id) ?? 'one') === 'one' && names.length > 1) {
      throw new LinkError(
        `capability '${id}' takes exactly one provider, but ${names.map((n) => `'${n}'`).join(' and ')} both provide it; ` +
          `choose one in the configuration`,
      );
    }
  }

  for (const plugin of plugins) {
    for (const cap of plugin.manifest.requires) {
      if (builtInIds.has(cap.id)) continue;
      if (!providers.has(cap.id)) {
        throw new LinkError(
          `plugin '${plugin.manifest.name}' requires capability '${cap.id}', but no loaded plugin provides it; ` +
            `configure a plugin that provides '${cap.id}'${cap.description ? ` (${cap.description})` : ''}`,
        );
      }
    }
  }

  checkVersions(plugins);

  // Depth-first topological sort over "requires/optional → provider" edges, reporting the first cycle.
  const order: NodeletPlugin<any>[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (name: string) => {
    const mark = state.get(name);
    if (mark === 'done') return;
    if (mark === 'visiting') {
      const cycle = [...path.slice(path.indexOf(name)), name];
      throw new LinkError(
        `plugins form a dependency cycle: ${cycle.join(' → ')}; break it by removing one requirement`,
      );
    }
    state.set(name, 'visiting');
    path.push(name);
    const plugin = byName.get(name)!;
    for (const cap of [...plugin.manifest.requires, ...(plugin.manifest.optional ?? [])]) {
      for (const provider of providers.get(cap.id) ?? []) if (provider !== name) visit(provider);
    }
    path.pop();
    state.set(name, 'done');
    order.push(plugin);
  };
  for (const plugin of plugins) visit(plugin.manifest.name);

  return { order, providers };
}

/**
 * A manifest written as data may leave out a capability's cardinality; the capability objects of the
 * other manifests (the requirer's or a provider's) say it. Unknown anywhere: `one`.
 */
function cardinalities(plugins: readonly NodeletPlugin<any>[]): Map<string, Cardinality> {
  const out = new Map<string, Cardinality>();
  for (const { manifest } of plugins) {
    for (const cap of [...manifest.provides, ...manifest.requires, ...(manifest.optional ?? [])]) {
      if (cap.cardinality && !out.has(cap.id)) out.set(cap.id, cap.cardinality);
    }
  }
  return out;
}

/** Refuses a requirer and a provider of one capability whose major versions differ, naming both. */
function checkVersions(plugins: readonly NodeletPlugin<any>[]): void {
  const provided = new Map<string, { plugin: string; cap: CapabilityRef }[]>();
  for (const { manifest } of plugins) {
    for (const cap of manifest.provides) {
      const list = provided.get(cap.id) ?? [];
      list.push({ plugin: manifest.name, cap });
      provided.set(cap.id, list);
    }
  }
  for (const { manifest } of plugins) {
    for (const wanted of [...manifest.requires, ...(manifest.optional ?? [])]) {
      for (const { plugin, cap } of provided.get(wanted.id) ?? []) {
        if (plugin === manifest.name || cap.version === wanted.version) continue;
        throw new LinkError(
          `plugin '${manifest.name}' requires capability '${capabilityLabel(wanted)}', but plugin '${plugin}' provides '${capabilityLabel(cap)}'; ` +
            `a provider and a requirer must be built against the same major version of '${wanted.id}': upgrade the older one`,
        );
      }
    }
  }
}

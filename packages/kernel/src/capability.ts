import type { ServiceIdentifier } from 'inversify';

/**
 * A capability is a contract of the kernel: a TypeScript interface plus a service identifier and a
 * major version. Plugins declare the capabilities they provide and require; the linker wires them up
 * and refuses a requirer and a provider built against different major versions.
 *
 * `one` capabilities take exactly one provider (a node has one container runtime); `many`
 * capabilities collect every provider (probe handlers, device plugins).
 */
export type Cardinality = 'one' | 'many';

/**
 * How a manifest names a capability, as data: its id and the major version the plugin was built
 * against. A capability object (`defineCapability`) is one; a plugin that imports nothing of nodelet
 * writes the data itself (`{ id: 'probe.handler', version: 1 }`).
 */
export interface CapabilityRef {
  /** Dotted name, e.g. `cri.runtime`. Unique across the process. */
  readonly id: string;
  /** The major version of the contract. A change that breaks providers or requirers raises it. */
  readonly version: number;
  readonly cardinality?: Cardinality;
  readonly description?: string;
}

export interface Capability<T> extends CapabilityRef {
  readonly cardinality: Cardinality;
  readonly description: string;
  /** The inversify identifier; `Symbol.for(id)` so two copies of a package still agree. */
  readonly identifier: ServiceIdentifier<T>;
  /** Phantom field that carries T; never set. */
  readonly __type?: T;
}

export type AnyCapability = Capability<any>;

/** The inversify identifier of a capability id: the same symbol in every copy of every package. */
export function capabilityIdentifier<T = unknown>(id: string): ServiceIdentifier<T> {
  return Symbol.for(`nodelet.capability:${id}`) as ServiceIdentifier<T>;
}

/** `cri.runtime@1`: how messages name a capability with its version. */
export function capabilityLabel(cap: CapabilityRef): string {
  return `${cap.id}@${cap.version}`;
}

export function defineCapability<T>(
  id: string,
  options: { version?: number; cardinality?: Cardinality; description?: string } = {},
): Capability<T> {
  if (!/^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*$/.test(id)) {
    throw new Error(`capability id '${id}' must be dotted lower-case words, e.g. 'cri.runtime'`);
  }
  const version = options.version ?? 1;
  if (!Number.isInteger(version) || version < 1) {
    throw new Error(`capability '${id}': version must be a whole number from 1 (the major version)`);
  }
  return Object.freeze({
    id,
    version,
    cardinality: options.cardinality ?? 'one',
    description: options.description ?? '',
    identifier: capabilityIdentifier<T>(id),
    toString: () => `${id}@${version}`,
  });
}

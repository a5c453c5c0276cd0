import type { ServiceIdentifier } from 'inversify';

/**
 * A capability is a contract of the kernel: a TypeScript interface plus a service identifier.
 * Plugins declare the capabilities they provide and require; the linker wires them up.
 *
 * `one` capabilities take exactly one provider (a node has one container runtime); `many`
 * capabilities collect every provider (probe handlers, device plugins).
 */
export type Cardinality = 'one' | 'many';

export interface Capability<T> {
  /** Dotted name, e.g. `cri.runtime`. Unique across the process. */
  readonly id: string;
  readonly cardinality: Cardinality;
  readonly description: string;
  /** The inversify identifier; `Symbol.for(id)` so two copies of a package still agree. */
  readonly identifier: ServiceIdentifier<T>;
  /** Phantom field that carries T; never set. */
  readonly __type?: T;
}

export type AnyCapability = Capability<any>;

export function defineCapability<T>(
  id: string,
  options: { cardinality?: Cardinality; description?: string } = {},
): Capability<T> {
  if (!/^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*$/.test(id)) {
    throw new Error(`capability id '${id}' must be dotted lower-case words, e.g. 'cri.runtime'`);
  }
  return Object.freeze({
    id,
    cardinality: options.cardinality ?? 'one',
    description: options.description ?? '',
    identifier: Symbol.for(`nodelet.capability:${id}`) as ServiceIdentifier<T>,
  });
}

import type { StoredValue, ValueTransformer } from './value-transformers.js';

/** An object's key as etcd holds it (`/registry/secrets/default/db`): what AES-GCM authenticates. */
export function storageKey(resource: string, namespace: string, name: string): string {
  return namespace ? `/registry/${resource}/${namespace}/${name}` : `/registry/${resource}/${name}`;
}

/**
 * How the store turns an object's JSON into the `value` of its log row and back: through the
 * transformer of its resource (encryption at rest), or as the JSON text itself.
 */
export class StoredValues {
  private readonly transformers = new Map<string, ValueTransformer | undefined>();

  constructor(private readonly transformerFor: (resource: string) => ValueTransformer | undefined) {}

  toStorage(resource: string, namespace: string, name: string, json: string): StoredValue {
    return this.transformer(resource)?.toStorage(json, storageKey(resource, namespace, name)) ?? json;
  }

  /** A row's JSON: decrypted when a transformer encrypts the resource. */
  fromStorage(resource: string, namespace: string, name: string, value: StoredValue): string {
    const transformer = this.transformer(resource);
    if (transformer) return transformer.fromStorage(value, storageKey(resource, namespace, name));
    if (typeof value !== 'string') {
      throw new Error(
        `${storageKey(resource, namespace, name)} is encrypted at rest, but no encryption configuration lists ${resource}`,
      );
    }
    return value;
  }

  /** Whether a value was written otherwise than it would be now (an old key, or before encryption). */
  isStale(resource: string, value: StoredValue): boolean {
    const transformer = this.transformer(resource);
    return transformer ? transformer.isStale(value) : typeof value !== 'string';
  }

  private transformer(resource: string): ValueTransformer | undefined {
    if (!this.transformers.has(resource)) this.transformers.set(resource, this.transformerFor(resource));
    return this.transformers.get(resource);
  }
}

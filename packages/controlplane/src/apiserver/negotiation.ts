import type { KubeObject } from '../object.js';
import type { ResourceType } from './resource-type.js';
import { ApiError } from './status.js';

/**
 * Response content negotiation: what the Accept header asks a read to return. JSON objects, or one of the
 * meta.k8s.io transformations kubectl uses: a server-side printed `Table` (`kubectl get`) or
 * `PartialObjectMetadata` (metadata only). YAML is served too; protobuf is not (clients fall back to JSON).
 */
export type Representation =
  | { kind: 'json' }
  | { kind: 'yaml' }
  | { kind: 'table'; version: 'v1' | 'v1beta1' }
  | { kind: 'metadata'; version: 'v1' | 'v1beta1' };

export function negotiate(accept: string | undefined): Representation {
  if (!accept) return { kind: 'json' };
  for (const raw of accept.split(',')) {
    const [type, ...params] = raw.split(';').map((p) => p.trim());
    const p = Object.fromEntries(params.map((x) => x.split('=').map((s) => s.trim()) as [string, string]));
    const base = (type ?? '').toLowerCase();
    if (
      base !== 'application/json' &&
      base !== '*/*' &&
      base !== 'application/*' &&
      base !== 'application/yaml'
    )
      continue;
    if (p.as === 'Table' && p.g === 'meta.k8s.io' && (p.v === 'v1' || p.v === 'v1beta1')) {
      return { kind: 'table', version: p.v };
    }
    if (
      (p.as === 'PartialObjectMetadata' || p.as === 'PartialObjectMetadataList') &&
      p.g === 'meta.k8s.io' &&
      (p.v === 'v1' || p.v === 'v1beta1')
    ) {
      return { kind: 'metadata', version: p.v };
    }
    if (p.as) continue;
    return base === 'application/yaml' ? { kind: 'yaml' } : { kind: 'json' };
  }
  throw new ApiError(
    406,
    'NotAcceptable',
    `only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io`,
  );
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export function parseIncludeObject(value: string | null): IncludeObject {
  if (value === 'None' || value === 'Object' || value === 'Metadata') return value;
  return 'Metadata';
}

function partial(obj: KubeObject, version: string): KubeObject {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: obj.metadata };
}

function rowOf(
  t: ResourceType,
  obj: KubeObject,
  now: number,
  include: IncludeObject,
  version: string,
  apiVersion: string,
) {
  const stored = t.toStorage ? t.toStorage(obj) : obj;
  const object =
    include === 'None'
      ? undefined
      : include === 'Object'
        ? { apiVersion, kind: t.kind, ...obj }
        : partial(obj, version);
  return { cells: t.row(stored, now), ...(object ? { object } : {}) };
}

/** A Table of `items` (versioned objects) with the list's metadata. */
export function toTable(
  t: ResourceType,
  items: readonly KubeObject[],
  listMeta: Record<string, unknown>,
  options: { now: number; include: IncludeObject; version: string; apiVersion: string; noHeaders?: boolean },
): KubeObject {
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${options.version}`,
    metadata: listMeta,
    ...(options.noHeaders ? {} : { columnDefinitions: t.columns }),
    rows: items.map((o) => rowOf(t, o, options.now, options.include, options.version, options.apiVersion)),
  } as KubeObject;
}

export function toPartialList(
  items: readonly KubeObject[],
  listMeta: Record<string, unknown>,
  version: string,
): KubeObject {
  return {
    kind: 'PartialObjectMetadataList',
    apiVersion: `meta.k8s.io/${version}`,
    metadata: listMeta,
    items: items.map((o) => partial(o, version)),
  } as KubeObject;
}

export function toPartial(obj: KubeObject, version: string): KubeObject {
  return partial(obj, version);
}

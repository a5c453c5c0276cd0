import { createHash } from 'node:crypto';
import { schemaFields } from '@nodelet/api';
import { patchMeta } from './patch-meta.js';
import { encodeOpenApiV2 } from './openapi-v2-proto.js';
import type { ResourceType } from './resource-type.js';

/**
 * OpenAPI documents of the served kinds — v3 per group-version (`/openapi/v3/api/v1`, …, indexed at
 * `/openapi/v3`) and one v2 document (`/openapi/v2`) — generated, not written: the schemas come from
 * @kubernetes/client-node's model classes (which are generated from the API server's own OpenAPI), the
 * strategic-merge metadata from the merge-key table, and the paths from the resource table.
 *
 * kubectl reads them to decide that the server validates fields itself (the PATCH operation lists a
 * `fieldValidation` parameter) and to compute strategic merge patches
 * (`x-kubernetes-patch-merge-key` / `x-kubernetes-patch-strategy`).
 */
const metaTypes = new Set([
  'ObjectMeta',
  'ListMeta',
  'OwnerReference',
  'ManagedFieldsEntry',
  'LabelSelector',
  'LabelSelectorRequirement',
  'Condition',
  'Status',
  'StatusDetails',
  'StatusCause',
  'DeleteOptions',
  'Preconditions',
  'MicroTime',
  'Time',
  'WatchEvent',
]);

const packages: Record<string, string> = {
  '': 'io.k8s.api.core.v1',
  'coordination.k8s.io': 'io.k8s.api.coordination.v1',
  'discovery.k8s.io': 'io.k8s.api.discovery.v1',
  'events.k8s.io': 'io.k8s.api.events.v1',
  'authentication.k8s.io': 'io.k8s.api.authentication.v1',
};

const prefixes: [RegExp, string | undefined][] = [
  [/^CoreV1(.+)$/, 'io.k8s.api.core.v1'],
  [/^EventsV1(.+)$/, 'io.k8s.api.events.v1'],
  [/^DiscoveryV1(.+)$/, 'io.k8s.api.discovery.v1'],
  [/^AuthenticationV1(.+)$/, 'io.k8s.api.authentication.v1'],
  [/^V1(.+)$/, undefined],
];

/** The models of subresource kinds served with a POST of their own (`serviceaccounts/<name>/token`). */
const subresourceModels: Record<string, string> = { TokenRequest: 'AuthenticationV1TokenRequest' };

const arrayType = /^Array<(.+)>$/;
const mapType = /^\{ \[key: string\]: (.+); \}$/;

type Schema = Record<string, unknown>;

/** Names each model class reachable from `roots` and builds its schema. */
class SchemaSet {
  readonly names = new Map<string, string>();
  readonly schemas = new Map<string, Schema>();

  constructor(
    private readonly refPrefix: string,
    /** v2 refers to definitions with a bare $ref; v3 wraps it in allOf, as upstream's documents do. */
    private readonly bareRefs: boolean,
  ) {}

  nameOf(model: string, pkg: string): string {
    let name = this.names.get(model);
    if (name) return name;
    for (const [re, fixed] of prefixes) {
      const m = re.exec(model);
      if (!m) continue;
      const short = m[1]!;
      name = metaTypes.has(short)
        ? `io.k8s.apimachinery.pkg.apis.meta.v1.${short}`
        : `${fixed ?? pkg}.${short}`;
      break;
    }
    name ??= `${pkg}.${model}`;
    this.names.set(model, name);
    return name;
  }

  ref(model: string, pkg: string): Schema {
    const name = this.add(model, pkg);
    return { $ref: `${this.refPrefix}${name}` };
  }

  /** Adds `model` (and everything it refers to) and returns its definition name. */
  add(model: string, pkg: string, gvk?: { group: string; version: string; kind: string }): string {
    const name = this.nameOf(model, pkg);
    if (this.schemas.has(name)) {
      if (gvk) this.schemas.get(name)!['x-kubernetes-group-version-kind'] = [gvk];
      return name;
    }
    const schema: Schema = { type: 'object' };
    this.schemas.set(name, schema);
    if (model === 'V1MicroTime' || model === 'V1Time') {
      delete schema.type;
      Object.assign(schema, { type: 'string', format: 'date-time' });
      return name;
    }
    const fields = schemaFields(model);
    const properties: Record<string, Schema> = {};
    for (const [key, attr] of fields ?? []) {
      const prop = this.typeSchema(attr.type, attr.format, pkg);
      const meta = patchMeta(model, key);
      if (meta) {
        prop['x-kubernetes-patch-strategy'] = meta.strategy;
        if (meta.mergeKey) prop['x-kubernetes-patch-merge-key'] = meta.mergeKey;
      }
      properties[key] = prop;
    }
    schema.properties = properties;
    if (gvk) schema['x-kubernetes-group-version-kind'] = [gvk];
    return name;
  }

  private typeSchema(type: string, format: string, pkg: string): Schema {
    let m: RegExpExecArray | null;
    if ((m = arrayType.exec(type))) return { type: 'array', items: this.typeSchema(m[1]!, '', pkg) };
    if ((m = mapType.exec(type)))
      return { type: 'object', additionalProperties: this.typeSchema(m[1]!, '', pkg) };
    switch (type) {
      case 'string':
        return { type: 'string' };
      case 'boolean':
        return { type: 'boolean' };
      case 'number':
        return /^int(32|64)$/.test(format)
          ? { type: 'integer', format }
          : { type: 'number', format: format || 'double' };
      case 'Date':
        return { type: 'string', format: 'date-time' };
      case 'IntOrString':
        return { type: 'string', format: 'int-or-string', 'x-kubernetes-int-or-string': true };
      case 'any':
      case 'object':
        return { type: 'object' };
    }
    if (schemaFields(type) || type === 'V1MicroTime') {
      return this.bareRefs ? this.ref(type, pkg) : { allOf: [this.ref(type, pkg)], default: {} };
    }
    return { type: 'object' };
  }
}

const queryParam = (name: string, type: string, description: string) => ({
  name,
  in: 'query',
  description,
  schema: { type },
  uniqueItems: true,
});

const patchTypes = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
];

interface Built {
  paths: Record<string, Record<string, unknown>>;
  set: SchemaSet;
}

function build(types: readonly ResourceType[], refPrefix: string, v2: boolean): Built {
  const set = new SchemaSet(refPrefix, v2);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const t of types) {
    const pkg = packages[t.group] ?? `io.k8s.api.${t.group.split('.')[0]}.${t.version}`;
    const gvk = { group: t.group, version: t.version, kind: t.kind };
    set.add(t.model, pkg, gvk);
    const listName = set.nameOf(`${t.model}List`, pkg);
    if (!set.schemas.has(listName)) {
      set.schemas.set(listName, {
        type: 'object',
        required: ['items'],
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          items: { type: 'array', items: set.ref(t.model, pkg) },
          metadata: v2 ? set.ref('V1ListMeta', pkg) : { allOf: [set.ref('V1ListMeta', pkg)], default: {} },
        },
        'x-kubernetes-group-version-kind': [{ group: t.group, version: t.version, kind: t.listKind }],
      });
    }
    const prefix = t.group ? `/apis/${t.group}/${t.version}` : '/api/v1';
    const collection = t.namespaced
      ? `${prefix}/namespaces/{namespace}/${t.plural}`
      : `${prefix}/${t.plural}`;
    const item = `${collection}/{name}`;
    const ref = set.ref(t.model, pkg);
    const listRef = { $ref: `${refPrefix}${listName}` };
    const op = (action: string, opId: string, schema: Schema, extra: Record<string, unknown> = {}) => {
      const response = v2
        ? { description: 'OK', schema }
        : { description: 'OK', content: { 'application/json': { schema } } };
      return {
        operationId: `${opId}${t.group ? groupId(t.group) : 'Core'}V1${t.namespaced ? 'Namespaced' : ''}${t.kind}`,
        'x-kubernetes-action': action,
        'x-kubernetes-group-version-kind': gvk,
        responses: { '200': response },
        ...extra,
      };
    };
    const writeParams = [
      queryParam('dryRun', 'string', 'When present, indicates that modifications should not be persisted.'),
      queryParam(
        'fieldManager',
        'string',
        'fieldManager is a name associated with the actor or entity that is making these changes.',
      ),
      queryParam(
        'fieldValidation',
        'string',
        'fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields: Ignore, Warn (the default) or Strict.',
      ),
    ];
    const body = (schema: Schema, contentTypes = ['application/json', 'application/yaml']) =>
      v2
        ? {
            parameters: [...writeParams, { name: 'body', in: 'body', required: true, schema }],
            consumes: contentTypes,
          }
        : {
            parameters: writeParams,
            requestBody: {
              required: true,
              content: Object.fromEntries(contentTypes.map((c) => [c, { schema }])),
            },
          };
    const patchSchema = v2 ? { type: 'object' } : { type: 'object' };
    const listParams = [
      queryParam(
        'labelSelector',
        'string',
        'A selector to restrict the list of returned objects by their labels.',
      ),
      queryParam(
        'fieldSelector',
        'string',
        'A selector to restrict the list of returned objects by their fields.',
      ),
      queryParam('limit', 'integer', 'limit is a maximum number of responses to return for a list call.'),
      queryParam(
        'continue',
        'string',
        'The continue option should be set when retrieving more results from the server.',
      ),
      queryParam(
        'resourceVersion',
        'string',
        'resourceVersion sets a constraint on what resource versions a request may be served from.',
      ),
      queryParam(
        'resourceVersionMatch',
        'string',
        'resourceVersionMatch determines how resourceVersion is applied to list calls.',
      ),
      queryParam(
        'watch',
        'boolean',
        'Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.',
      ),
      queryParam(
        'allowWatchBookmarks',
        'boolean',
        'allowWatchBookmarks requests watch events with type "BOOKMARK".',
      ),
      queryParam('timeoutSeconds', 'integer', 'Timeout for the list/watch call.'),
    ];
    if (t.stateless) {
      // Create only: the reviews answer a POST and store nothing.
      paths[collection] = {
        post: op('post', 'create', ref, body(ref)),
        ...pathParams(t.namespaced, false, v2),
      };
      continue;
    }
    paths[collection] = {
      get: op('list', 'list', listRef, { parameters: listParams }),
      post: op('post', 'create', ref, body(ref)),
      delete: op('deletecollection', 'deleteCollection', {
        $ref: `${refPrefix}io.k8s.apimachinery.pkg.apis.meta.v1.Status`,
      }),
      ...pathParams(t.namespaced, false, v2),
    };
    if (t.namespaced) {
      paths[`${prefix}/${t.plural}`] = {
        get: op('list', 'list', listRef, {
          parameters: listParams,
          operationId: `list${t.group ? groupId(t.group) : 'Core'}V1${t.kind}ForAllNamespaces`,
        }),
      };
    }
    paths[item] = {
      get: op('get', 'read', ref),
      put: op('put', 'replace', ref, body(ref)),
      patch: op('patch', 'patch', ref, body(patchSchema, patchTypes)),
      delete: op('delete', 'delete', ref),
      ...pathParams(t.namespaced, true, v2),
    };
    for (const sub of t.subresources) {
      const subModel = subresourceModels[sub.kind];
      if (sub.name !== 'status' && subModel && sub.group !== undefined) {
        const subPkg = packages[sub.group] ?? `io.k8s.api.${sub.group.split('.')[0]}.${sub.version}`;
        const subRef = set.ref(subModel, subPkg);
        set.add(subModel, subPkg, { group: sub.group, version: sub.version ?? 'v1', kind: sub.kind });
        paths[`${item}/${sub.name}`] = {
          post: op('post', 'create', subRef, {
            ...body(subRef),
            operationId: `create${t.group ? groupId(t.group) : 'Core'}V1${t.namespaced ? 'Namespaced' : ''}${t.kind}${sub.kind.replace(/Request$/, '')}`,
            'x-kubernetes-group-version-kind': { group: sub.group, version: sub.version, kind: sub.kind },
          }),
          ...pathParams(t.namespaced, true, v2),
        };
      }
      if (sub.name !== 'status') continue;
      paths[`${item}/status`] = {
        get: op('get', 'read', ref, {
          operationId: `read${t.group ? groupId(t.group) : 'Core'}V1${t.namespaced ? 'Namespaced' : ''}${t.kind}Status`,
        }),
        put: op('put', 'replace', ref, {
          ...body(ref),
          operationId: `replace${t.group ? groupId(t.group) : 'Core'}V1${t.namespaced ? 'Namespaced' : ''}${t.kind}Status`,
        }),
        patch: op('patch', 'patch', ref, {
          ...body(patchSchema, patchTypes),
          operationId: `patch${t.group ? groupId(t.group) : 'Core'}V1${t.namespaced ? 'Namespaced' : ''}${t.kind}Status`,
        }),
        ...pathParams(t.namespaced, true, v2),
      };
    }
  }
  set.add('V1Status', 'io.k8s.apimachinery.pkg.apis.meta.v1', { group: '', version: 'v1', kind: 'Status' });
  set.add('V1DeleteOptions', 'io.k8s.apimachinery.pkg.apis.meta.v1');
  return { paths, set };
}

function pathParams(namespaced: boolean, named: boolean, v2: boolean): Record<string, unknown> {
  const p = (name: string, description: string) =>
    v2
      ? { name, in: 'path', required: true, type: 'string', uniqueItems: true, description }
      : { name, in: 'path', required: true, schema: { type: 'string', uniqueItems: true }, description };
  const params = [];
  if (named) params.push(p('name', 'name of the object'));
  if (namespaced) params.push(p('namespace', 'object name and auth scope, such as for teams and projects'));
  return params.length ? { parameters: params } : {};
}

function groupId(group: string): string {
  return group.split('.')[0]!.replace(/^./, (c) => c.toUpperCase());
}

/** `api/v1`, `apis/discovery.k8s.io/v1`: the v3 index keys. */
export function openApiV3Key(t: { group: string; version: string }): string {
  return t.group ? `apis/${t.group}/${t.version}` : `api/${t.version}`;
}

export class OpenApiDocuments {
  private readonly v3 = new Map<string, string>();
  private readonly hashes = new Map<string, string>();
  readonly v2: string;
  /** The v2 document as gnostic protobuf, which client-go's OpenAPISchema() asks for. */
  readonly v2Proto: Buffer;
  readonly v3Index: string;

  constructor(types: readonly ResourceType[], version: string) {
    const keys = [...new Set(types.map(openApiV3Key))];
    for (const key of keys) {
      const gvTypes = types.filter((t) => openApiV3Key(t) === key);
      const { paths, set } = build(gvTypes, '#/components/schemas/', false);
      const doc = {
        openapi: '3.0.0',
        info: { title: 'Kubernetes', version },
        paths,
        components: { schemas: Object.fromEntries(set.schemas) },
      };
      const text = JSON.stringify(doc);
      this.v3.set(key, text);
      this.hashes.set(key, createHash('sha512').update(text).digest('hex').slice(0, 128).toUpperCase());
    }
    this.v3Index = JSON.stringify({
      paths: Object.fromEntries(
        keys.map((k) => [k, { serverRelativeURL: `/openapi/v3/${k}?hash=${this.hashes.get(k)}` }]),
      ),
    });
    const { paths, set } = build(types, '#/definitions/', true);
    const v2 = {
      swagger: '2.0',
      info: { title: 'Kubernetes', version },
      paths,
      definitions: Object.fromEntries(set.schemas),
    };
    this.v2 = JSON.stringify(v2);
    this.v2Proto = encodeOpenApiV2(v2);
  }

  /** The v3 document at `key` (`api/v1`), or undefined. */
  v3Document(key: string): string | undefined {
    return this.v3.get(key);
  }

  v3Hash(key: string): string | undefined {
    return this.hashes.get(key);
  }
}

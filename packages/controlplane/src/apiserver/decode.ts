import { findSchemaErrors, schemaFields, unknownField } from '@nodelet/api';
import { parse as parseYaml } from 'yaml';
import { isObject, type KubeObject } from '../object.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';
import { checkJsonDepth, checkParsedDepth, checkYamlDepth } from './body-depth.js';
import { decodeProtobuf } from './protobuf.js';
import { ApiError, badRequest, unsupportedMediaType } from './status.js';

/**
 * Request bodies into objects, as the API server's decoder does: JSON or YAML; apiVersion and kind checked
 * against the endpoint; values of the wrong type refused (400, naming the field); unknown fields refused,
 * reported or dropped by `fieldValidation` (Strict, Warn — the default — or Ignore), and never stored.
 */
export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

export function parseFieldValidation(value: string | null): FieldValidation {
  if (value === null || value === '') return 'Warn';
  if (value === 'Strict' || value === 'Warn' || value === 'Ignore') return value;
  throw badRequest(
    `fieldValidation parameter unsupported: ${value}. Valid options are "Strict", "Warn", and "Ignore"`,
  );
}

/** Parses a request body by its Content-Type (JSON by default). */
export function parseBody(raw: Buffer, contentType: string | undefined): unknown {
  const value = parseByType(raw, contentType);
  checkParsedDepth(value);
  return value;
}

function parseByType(raw: Buffer, contentType: string | undefined): unknown {
  const type = (contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/vnd.kubernetes.protobuf') return decodeProtobuf(raw);
  const text = raw.toString('utf8');
  if (type === 'application/yaml' || type === 'application/apply-patch+yaml') {
    checkYamlDepth(text);
    try {
      return parseYaml(text);
    } catch (err) {
      throw badRequest(`error converting YAML to JSON: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  if (
    type === 'application/json' ||
    type === 'application/json-patch+json' ||
    type === 'application/merge-patch+json' ||
    type === 'application/strategic-merge-patch+json' ||
    type === '' ||
    type === '*/*'
  ) {
    checkJsonDepth(text);
    try {
      return JSON.parse(text);
    } catch (err) {
      throw badRequest(`couldn't get version/kind; json parse error: ${(err as Error).message}`);
    }
  }
  throw unsupportedMediaType(type);
}

/** Kinds served anywhere, for "no kind X is registered" versus "X cannot be handled as Y". */
export interface KindIndex {
  has(apiVersion: string, kind: string): boolean;
}

export interface Decoded {
  object: KubeObject;
  warnings: string[];
}

/** A body for `t` (create, update, or the result of a patch): checked, pruned, with apiVersion and kind set. */
export function decodeObject(
  body: unknown,
  t: ResourceType,
  validation: FieldValidation,
  kinds: KindIndex,
): Decoded {
  const apiVersion = apiVersionOf(t);
  if (!isObject(body)) {
    throw badRequest(`the body of the request must be a JSON or YAML object of kind ${t.kind}`);
  }
  const bodyVersion = body.apiVersion;
  const bodyKind = body.kind;
  if (bodyVersion !== undefined && typeof bodyVersion !== 'string')
    throw badRequest('apiVersion must be a string');
  if (bodyKind !== undefined && typeof bodyKind !== 'string') throw badRequest('kind must be a string');
  if (bodyKind && bodyVersion && !kinds.has(bodyVersion, bodyKind)) {
    throw badRequest(`no kind "${bodyKind}" is registered for version "${bodyVersion}"`);
  }
  if (bodyVersion && bodyVersion !== apiVersion) {
    throw badRequest(
      `the API version in the data (${bodyVersion}) does not match the expected API version (${apiVersion})`,
    );
  }
  if (bodyKind && bodyKind !== t.kind) {
    throw badRequest(
      `${bodyKind} in version "${apiVersion}" cannot be handled as a ${t.kind}: the kind of the object does not match the resource ${t.plural}`,
    );
  }
  const errors = findSchemaErrors(body, t.model);
  const typeErrors = errors.filter((e) => e.message !== unknownField);
  if (typeErrors.length > 0) {
    const detail = typeErrors.map((e) => `${e.field}: ${e.message}`).join(', ');
    throw new ApiError(
      400,
      'BadRequest',
      `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: ${detail}`,
    );
  }
  const extra = t.decodeError?.(body as KubeObject);
  if (extra)
    throw badRequest(`${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: ${extra}`);
  const unknown = errors.filter((e) => e.message === unknownField).map((e) => `unknown field "${e.field}"`);
  if (unknown.length > 0 && validation === 'Strict') {
    throw badRequest(`strict decoding error: ${unknown.join(', ')}`);
  }
  const object = pruneUnknownFields(structuredClone(body), t.model) as KubeObject;
  object.apiVersion = apiVersion;
  object.kind = t.kind;
  if (!isObject(object.metadata)) object.metadata = {};
  return { object, warnings: validation === 'Warn' ? unknown : [] };
}

const arrayType = /^Array<(.+)>$/;
const mapType = /^\{ \[key: string\]: (.+); \}$/;

/** Removes, at every depth, the fields `model` does not have (what Go's decoder silently drops). */
export function pruneUnknownFields(value: unknown, type: string): unknown {
  if (value === null || typeof value !== 'object') return value;
  let m: RegExpExecArray | null;
  if ((m = arrayType.exec(type))) {
    if (Array.isArray(value)) value.forEach((v) => pruneUnknownFields(v, m![1]!));
    return value;
  }
  if ((m = mapType.exec(type))) {
    if (isObject(value)) for (const v of Object.values(value)) pruneUnknownFields(v, m[1]!);
    return value;
  }
  const fields = schemaFields(type);
  if (!fields || !isObject(value)) return value;
  for (const key of Object.keys(value)) {
    const attr = fields.get(key);
    if (!attr) delete value[key];
    else pruneUnknownFields(value[key], attr.type);
  }
  return value;
}

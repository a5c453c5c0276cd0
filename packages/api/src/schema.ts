import type { FieldError } from './field-error.js';
import { fieldInvalid } from './field-error.js';
import { models } from './gen/schema-models.js';

/**
 * Strict decoding against the Kubernetes schema. The schema is not written here: it is the field list of
 * @kubernetes/client-node's generated model classes (their static `attributeTypeMap`: each field's wire
 * name `baseName` and type — `string`, `number`, `boolean`, `Date`, `IntOrString`, `any`, `Array<T>`,
 * `{ [key: string]: T; }`, or another model such as `V1Container`), copied at build time into
 * `gen/schema-models.ts` by `scripts/gen-schema.mjs` so that decoding does not load the library. The
 * library is generated from the API server's OpenAPI document (v1.34), so its field list is the API's.
 */
export interface Attribute {
  readonly name: string;
  readonly baseName: string;
  readonly type: string;
  readonly format: string;
}

const modelCache = new Map<string, ReadonlyMap<string, Attribute> | null>();

/** The fields of a model class by wire name, or undefined when `kind` is not a model of the library. */
export function schemaFields(kind: string): ReadonlyMap<string, Attribute> | undefined {
  let fields = modelCache.get(kind);
  if (fields === undefined) {
    const model = Object.hasOwn(models, kind) ? models[kind] : undefined;
    fields = model
      ? new Map(
          model.map(([baseName, type, format, name]) => [
            baseName,
            { name: name ?? baseName, baseName, type, format },
          ]),
        )
      : null;
    modelCache.set(kind, fields);
  }
  return fields ?? undefined;
}

/**
 * Fields that are `resource.Quantity` in Go. The generated models type them as `string`, but a Quantity
 * decodes from a JSON number too (`cpu: 1`, `memory: 1000`), so a number is accepted there.
 */
const quantityFields = new Set([
  'V1ResourceRequirements.limits',
  'V1ResourceRequirements.requests',
  'V1VolumeResourceRequirements.limits',
  'V1VolumeResourceRequirements.requests',
  'V1PodSpec.overhead',
  'V1EmptyDirVolumeSource.sizeLimit',
  'V1ResourceFieldSelector.divisor',
  'V1ContainerStatus.allocatedResources',
]);

const arrayType = /^Array<(.+)>$/;
const mapType = /^\{ \[key: string\]: (.+); \}$/;

/**
 * Everything a strict decoder would refuse in `obj` read as a `kind` (a model class name such as
 * `V1Pod`): fields the schema does not have (`unknown field`) and values of the wrong JSON type (a list
 * where an object belongs, `"80"` for an integer, `8080` for a string label). `null` is accepted
 * anywhere, as Go's decoder reads it as "unset".
 */
export function findSchemaErrors(obj: unknown, kind: string): FieldError[] {
  if (!schemaFields(kind))
    throw new Error(`findSchemaErrors: '${kind}' is not a model of @kubernetes/client-node`);
  const errors: FieldError[] = [];
  walk(obj, kind, '', false, errors);
  return errors;
}

/** Dotted paths (`spec.containers[0].imagePullPolcy`) of the fields of `obj` that `kind` does not have. */
export function findUnknownFields(obj: unknown, kind: 'V1Pod' | (string & {})): string[] {
  return findSchemaErrors(obj, kind)
    .filter((e) => e.message === unknownField)
    .map((e) => e.field);
}

export const unknownField = 'unknown field';

function childPath(path: string, key: string): string {
  const part = /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key);
  if (part !== key) return `${path}[${part}]`;
  return path ? `${path}.${key}` : key;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (isPlainObject(value)) return 'an object';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a fraction';
  return `a ${typeof value}`;
}

function walk(value: unknown, type: string, path: string, quantity: boolean, out: FieldError[]): void {
  if (value === null || value === undefined) return;
  const field = path || '(top level)';
  let m: RegExpExecArray | null;
  if (type === 'any' || type === 'object') return;
  if ((m = arrayType.exec(type))) {
    if (!Array.isArray(value)) {
      out.push(fieldInvalid(field, value, `must be a list, not ${describe(value)}`));
      return;
    }
    value.forEach((item, i) => walk(item, m![1]!, `${path}[${i}]`, quantity, out));
    return;
  }
  if ((m = mapType.exec(type))) {
    if (!isPlainObject(value)) {
      out.push(fieldInvalid(field, value, `must be a map, not ${describe(value)}`));
      return;
    }
    for (const [key, item] of Object.entries(value)) walk(item, m[1]!, childPath(path, key), quantity, out);
    return;
  }
  switch (type) {
    case 'string':
      if (typeof value === 'string' || (quantity && typeof value === 'number')) return;
      out.push(
        fieldInvalid(
          field,
          value,
          typeof value === 'number' || typeof value === 'boolean'
            ? `must be a string; quote it`
            : `must be a string, not ${describe(value)}`,
        ),
      );
      return;
    case 'Date':
      if (typeof value !== 'string') out.push(fieldInvalid(field, value, 'must be an RFC 3339 time string'));
      return;
    case 'boolean':
      if (typeof value !== 'boolean')
        out.push(fieldInvalid(field, value, 'must be a boolean (true or false)'));
      return;
    case 'number':
      if (typeof value !== 'number')
        out.push(fieldInvalid(field, value, `must be a number, not ${describe(value)}`));
      return;
    case 'integer': // a `number` whose format is int32 or int64
      if (typeof value === 'number' && Number.isInteger(value)) return;
      out.push(fieldInvalid(field, value, `must be an integer, not ${describe(value)}`));
      return;
    case 'IntOrString':
      if (typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value))) return;
      out.push(fieldInvalid(field, value, 'must be an integer or a string'));
      return;
  }
  const fields = schemaFields(type);
  if (!fields) return; // a type this walker does not know: accept rather than guess
  if (!isPlainObject(value)) {
    out.push(fieldInvalid(field, value, `must be an object, not ${describe(value)}`));
    return;
  }
  for (const [key, item] of Object.entries(value)) {
    const attribute = fields.get(key);
    const at = childPath(path, key);
    if (!attribute) {
      out.push({ field: at, message: unknownField });
      continue;
    }
    const isQuantity = quantityFields.has(`${type}.${key}`);
    const integer = /^int(32|64)$/.test(attribute.format);
    walk(item, integer ? attribute.type.replace('number', 'integer') : attribute.type, at, isQuantity, out);
  }
}

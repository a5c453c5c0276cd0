/** ConfigMaps and Secrets: key names, the 1 MiB limit, immutability, and Secret stringData and base64. */
import { fieldForbidden, fieldInvalid, type FieldError } from '@nodelet/api';
import { isObject, type KubeObject } from '../object.js';
import { ageColumn, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { age } from './printers.js';
import { nameRules, validateObjectMeta, validateObjectMetaUpdate } from './meta-validation.js';
import { base } from './resource-base.js';

const configKey = /^[-._a-zA-Z0-9]+$/;

function validateKeys(map: unknown, path: string, seen: Set<string>): FieldError[] {
  const errors: FieldError[] = [];
  for (const key of Object.keys(isObject(map) ? map : {})) {
    if (key.length > 253) errors.push(fieldInvalid(path, key, 'must be no more than 253 characters'));
    if (!configKey.test(key)) {
      errors.push(
        fieldInvalid(
          path,
          key,
          "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or " +
            "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
        ),
      );
    } else if (key === '.' || key === '..') errors.push(fieldInvalid(path, key, `must not be '${key}'`));
    if (seen.has(key)) errors.push(fieldInvalid(path, key, 'duplicate of key present in data or binaryData'));
    seen.add(key);
  }
  return errors;
}

const maxDataBytes = 1024 * 1024;

function dataSize(...maps: unknown[]): number {
  let n = 0;
  for (const m of maps) {
    for (const [k, v] of Object.entries(isObject(m) ? m : {}))
      n += k.length + (typeof v === 'string' ? v.length : 0);
  }
  return n;
}

function immutableData(obj: KubeObject, old: KubeObject, fields: string[]): FieldError[] {
  const errors: FieldError[] = [];
  if (old.immutable === true) {
    if (obj.immutable !== true)
      errors.push(fieldForbidden('immutable', 'field is immutable when `immutable` is set'));
    for (const f of fields) {
      if (JSON.stringify(obj[f] ?? {}) !== JSON.stringify(old[f] ?? {})) {
        errors.push(fieldForbidden(f, 'field is immutable when `immutable` is set'));
      }
    }
  }
  return errors;
}

function validateConfigMap(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  const seen = new Set<string>();
  errors.push(...validateKeys(obj.data, 'data', seen), ...validateKeys(obj.binaryData, 'binaryData', seen));
  if (dataSize(obj.data, obj.binaryData) > maxDataBytes) {
    errors.push({ field: '', message: `Too long: must have at most ${maxDataBytes} bytes` });
  }
  return errors;
}

export const configMaps: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  plural: 'configmaps',
  singular: 'configmap',
  namespaced: true,
  model: 'V1ConfigMap',
  shortNames: ['cm'],
  columns: [
    nameColumn,
    { name: 'Data', type: 'integer', description: 'Data contains the configuration data.', priority: 0 },
    ageColumn,
  ],
  row: (obj, now) => [
    obj.metadata.name,
    Object.keys(obj.data ?? {}).length + Object.keys(obj.binaryData ?? {}).length,
    age(obj, now),
  ],
  strategy: {
    validate: validateConfigMap,
    validateUpdate: (obj, old) => [
      ...validateConfigMap(obj),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
      ...immutableData(obj, old, ['data', 'binaryData']),
    ],
  },
});

const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** `stringData` folded into `data` (base64), as upstream's Secret conversion does on every write. */
function foldStringData(obj: KubeObject): void {
  if (isObject(obj.stringData)) {
    const data: Record<string, string> = isObject(obj.data) ? obj.data : {};
    for (const [k, v] of Object.entries(obj.stringData)) {
      if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
    }
    obj.data = data;
  }
  delete obj.stringData;
}

function validateSecret(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  errors.push(...validateKeys(obj.data, 'data', new Set()));
  if (dataSize(obj.data) > maxDataBytes) {
    errors.push({ field: 'data', message: `Too long: may not be more than ${maxDataBytes} bytes` });
  }
  return errors;
}

export const secrets: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'Secret',
  plural: 'secrets',
  singular: 'secret',
  namespaced: true,
  model: 'V1Secret',
  columns: [
    nameColumn,
    {
      name: 'Type',
      type: 'string',
      description: 'Used to facilitate programmatic handling of secret data.',
      priority: 0,
    },
    { name: 'Data', type: 'integer', description: 'Data contains the secret data.', priority: 0 },
    ageColumn,
  ],
  row: (obj, now) => [
    obj.metadata.name,
    obj.type ?? 'Opaque',
    Object.keys(obj.data ?? {}).length,
    age(obj, now),
  ],
  fields: { type: (o) => o.type ?? '' },
  decodeError: (obj) => secretDecodingError(obj),
  strategy: {
    prepareForCreate(obj) {
      obj.type ??= 'Opaque';
      foldStringData(obj);
    },
    validate: validateSecret,
    prepareForUpdate(obj) {
      obj.type ??= 'Opaque';
      foldStringData(obj);
    },
    validateUpdate: (obj, old) => {
      const errors = [...validateSecret(obj), ...validateObjectMetaUpdate(obj.metadata, old.metadata)];
      if ((obj.type ?? 'Opaque') !== (old.type ?? 'Opaque'))
        errors.push(fieldInvalid('type', obj.type, 'field is immutable'));
      errors.push(...immutableData(obj, old, ['data']));
      return errors;
    },
  },
});

/** Secret `data` values are base64 (Go decodes them into []byte); anything else is a decoding error. */
export function secretDecodingError(obj: KubeObject): string | undefined {
  for (const [k, v] of Object.entries(isObject(obj.data) ? obj.data : {})) {
    if (typeof v === 'string' && !base64.test(v)) return `data[${JSON.stringify(k)}]: illegal base64 data`;
  }
  return undefined;
}

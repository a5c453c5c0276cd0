import {
  dns1123LabelErrors,
  dns1123SubdomainErrors,
  fieldInvalid,
  fieldRequired,
  type FieldError,
  qualifiedNameErrors,
} from '@nodelet/api';
import { isObject } from '../object.js';

/**
 * ObjectMeta validation shared by every kind (apimachinery's ValidateObjectMeta): the name by the kind's
 * rule, label keys and values, annotation keys and total size. Pods use @nodelet/api's validatePod, which
 * includes the same checks.
 */
export type NameRule = (name: string) => string[];

const dns1035Label = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** Problems with `value` as an RFC 1035 label (service names); empty when valid. */
export function dns1035LabelErrors(value: string): string[] {
  const out: string[] = [];
  if (value.length > 63) out.push('must be no more than 63 characters');
  if (!dns1035Label.test(value)) {
    out.push(
      "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic " +
        "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for " +
        "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    );
  }
  return out;
}

/** Path segment names (events, leases): anything but `.`, `..`, `/` and `%`. */
export function pathSegmentNameErrors(value: string): string[] {
  if (value === '.' || value === '..') return [`may not be '${value}'`];
  if (value.includes('/')) return [`may not contain '/'`];
  if (value.includes('%')) return [`may not contain '%'`];
  return [];
}

export const nameRules = {
  subdomain: dns1123SubdomainErrors as NameRule,
  label: dns1123LabelErrors as NameRule,
  dns1035: dns1035LabelErrors as NameRule,
  pathSegment: pathSegmentNameErrors as NameRule,
};

const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export function labelValueErrors(value: string): string[] {
  const out: string[] = [];
  if (value.length > 63) out.push('must be no more than 63 characters');
  if (!labelValue.test(value)) {
    out.push(
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must " +
        "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used " +
        "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    );
  }
  return out;
}

const annotationsLimit = 256 * 1024;

export function validateObjectMeta(meta: unknown, nameRule: NameRule, namespaced: boolean): FieldError[] {
  const errors: FieldError[] = [];
  const m = isObject(meta) ? meta : {};
  if (typeof m.name !== 'string' || m.name === '') {
    errors.push(fieldRequired('metadata.name', 'name or generateName is required'));
  } else {
    for (const msg of nameRule(m.name)) errors.push(fieldInvalid('metadata.name', m.name, msg));
  }
  if (namespaced) {
    if (typeof m.namespace !== 'string' || m.namespace === '')
      errors.push(fieldRequired('metadata.namespace'));
    else
      for (const msg of dns1123LabelErrors(m.namespace))
        errors.push(fieldInvalid('metadata.namespace', m.namespace, msg));
  } else if (typeof m.namespace === 'string' && m.namespace !== '') {
    errors.push({ field: 'metadata.namespace', message: 'Forbidden: not allowed on this type' });
  }
  errors.push(...validateLabels(m.labels, 'metadata.labels'));
  let size = 0;
  for (const [key, value] of Object.entries(isObject(m.annotations) ? m.annotations : {})) {
    for (const msg of qualifiedNameErrors(key.toLowerCase()))
      errors.push(fieldInvalid('metadata.annotations', key, msg));
    size += key.length + (typeof value === 'string' ? value.length : 0);
  }
  if (size > annotationsLimit) {
    errors.push({
      field: 'metadata.annotations',
      message: `Too long: may not be more than ${annotationsLimit} bytes`,
    });
  }
  return errors;
}

export function validateLabels(labels: unknown, path: string): FieldError[] {
  const errors: FieldError[] = [];
  for (const [key, value] of Object.entries(isObject(labels) ? labels : {})) {
    for (const msg of qualifiedNameErrors(key)) errors.push(fieldInvalid(path, key, msg));
    if (typeof value === 'string')
      for (const msg of labelValueErrors(value)) errors.push(fieldInvalid(path, value, msg));
  }
  return errors;
}

/** An update may not change these (apimachinery's ValidateObjectMetaUpdate). */
export function validateObjectMetaUpdate(meta: Record<string, any>, old: Record<string, any>): FieldError[] {
  const errors: FieldError[] = [];
  for (const field of ['name', 'namespace', 'uid', 'creationTimestamp'] as const) {
    if (meta[field] !== old[field]) {
      errors.push(fieldInvalid(`metadata.${field}`, meta[field], 'field is immutable'));
    }
  }
  return errors;
}

import { type FieldError, fieldNotSupported } from './field-error.js';

/** Reading untrusted shapes in validation: a manifest may hold a string where a list belongs. */

export type Obj = Record<string, unknown>;

/** A `fieldNotSupported` error unless `value` is unset or one of `supported`. */
export function oneOf(
  value: unknown,
  field: string,
  supported: readonly string[],
  errors: FieldError[],
): void {
  if (value === undefined || value === null || value === '') return;
  if (typeof value !== 'string' || !supported.includes(value))
    errors.push(fieldNotSupported(field, value, supported));
}

export function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function obj(value: unknown): Obj {
  return isObj(value) ? value : {};
}

export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

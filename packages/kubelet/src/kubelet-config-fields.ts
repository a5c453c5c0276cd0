import type { KubeletConfigValues } from './kubelet-config.js';

/**
 * Readers of KubeletConfiguration fields: each checks its value and sets what it means on the result,
 * or throws an error naming the field.
 */
export type Reader = (value: unknown, field: string, out: KubeletConfigValues, baseDir: string) => void;

export const str = (field: string, value: unknown): string => {
  if (typeof value !== 'string') throw new Error(`field "${field}" must be a string`);
  return value;
};

export const int = (field: string, value: unknown, min: number, max: number): number => {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new Error(`field "${field}" must be an integer from ${min} to ${max}`);
  }
  return value;
};

export const num = (field: string, value: unknown): number => {
  if (typeof value !== 'number' || !(value > 0)) throw new Error(`field "${field}" must be a number above 0`);
  return value;
};

export const positive = (field: string, ms: number): number => {
  if (!(ms > 0)) throw new Error(`field "${field}" must be a duration above 0 such as "10s"`);
  return ms;
};

export const bool = (field: string, value: unknown): boolean => {
  if (typeof value !== 'boolean') throw new Error(`field "${field}" must be true or false`);
  return value;
};

/** Reads a nested mapping field by field; a field it does not know is an error naming its full path. */
export function mapping(
  field: string,
  value: unknown,
  fields: Record<string, (v: unknown, path: string) => void>,
): void {
  if (value === null || value === undefined) return;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new Error(`field "${field}" must be a mapping`);
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const read = fields[k];
    if (!read) {
      throw new Error(`unknown field "${field}.${k}"; known: ${Object.keys(fields).join(', ')}`);
    }
    read(v, `${field}.${k}`);
  }
}

/** A mapping of strings (`cpu: 500m`). */
export function stringMap(v: unknown, field: string): Record<string, string> {
  if (
    typeof v !== 'object' ||
    v === null ||
    Array.isArray(v) ||
    Object.values(v).some((x) => typeof x !== 'string')
  ) {
    throw new Error(`field "${field}" must be a mapping of names to strings (e.g. memory: 500Mi)`);
  }
  return v as Record<string, string>;
}

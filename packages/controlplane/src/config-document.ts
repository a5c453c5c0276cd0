import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';

/**
 * The configuration files kube-apiserver's flags name (EncryptionConfiguration, audit Policy): read
 * whole at start, YAML or JSON, checked field by field. Every error names the file and the field
 * (`resources[0].providers[1].aescbc.keys[0].secret: …`), so the start stops with one clear line.
 */
export type Fail = (field: string, message: string) => never;

export async function readConfigFile(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`${path}: cannot read the ${what}: ${(err as Error).message}`);
  }
}

/** The document's top-level mapping, checked to be of `apiVersion` and `kind`, and its `fail`. */
export function parseConfigDocument(
  text: string,
  path: string,
  type: { apiVersion: string; kind: string },
): { root: Record<string, unknown>; fail: Fail } {
  const fail: Fail = (field, message) => {
    throw new Error(`${path}: ${field}: ${message}`);
  };
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    return fail('(file)', `not YAML or JSON: ${(err as Error).message}`);
  }
  const root = mapping(doc, '(file)', fail);
  if (root.kind !== type.kind) fail('kind', `must be ${type.kind}, got ${JSON.stringify(root.kind)}`);
  if (root.apiVersion !== type.apiVersion)
    fail('apiVersion', `must be ${type.apiVersion}, got ${JSON.stringify(root.apiVersion)}`);
  return { root, fail };
}

export function mapping(value: unknown, field: string, fail: Fail): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail(field, 'must be a mapping');
  return value as Record<string, unknown>;
}

export function list(value: unknown, field: string, fail: Fail): unknown[] {
  if (!Array.isArray(value)) return fail(field, 'must be a list');
  return value;
}

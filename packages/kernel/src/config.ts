import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { ConfigError } from './errors.js';
import { checkPlainSchema } from './plain-schema.js';

/**
 * Configuration files: YAML parsed with positions, validated against a JSON Schema, errors that name
 * the file, the field and what is allowed. Flags override file values (`applyOverrides`).
 */
// For the CommonJS packages loaded on first use.
const require = createRequire(import.meta.url);
let ajv: Ajv | undefined;
const compiled = new WeakMap<object, ValidateFunction>();

/**
 * Validates `value` in place (schema defaults are filled in); throws a ConfigError listing every problem.
 * A plain schema and a valid value need no ajv (`checkPlainSchema`); ajv is loaded when one does.
 */
export function validateConfig<T>(schema: object, value: unknown, origin: string): T {
  if (checkPlainSchema(schema, value) === 'valid') return value as T;
  let validate = compiled.get(schema);
  if (!validate) {
    // ajv is CommonJS, so `require` loads it here, synchronously, only when needed.
    ajv ??= new (require('ajv') as typeof import('ajv')).Ajv({
      allErrors: true,
      useDefaults: true,
      strict: false,
    });
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (!validate(value)) {
    const problems = (validate.errors ?? []).map((e) => describeSchemaError(e));
    throw new ConfigError(`${origin}: ${[...new Set(problems)].join('; ')}`);
  }
  return value as T;
}

function fieldName(e: ErrorObject, extra?: string): string {
  const path = e.instancePath
    .split('/')
    .filter(Boolean)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`))
    .join('')
    .replace(/^\./, '');
  const full = extra ? (path ? `${path}.${extra}` : extra) : path;
  return full || '(top level)';
}

export function describeSchemaError(e: ErrorObject): string {
  const p = e.params as Record<string, any>;
  switch (e.keyword) {
    case 'enum':
      return `field "${fieldName(e)}" must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'additionalProperties':
      return `unknown field "${fieldName(e, p.additionalProperty)}"; remove it or check its spelling`;
    case 'required':
      return `field "${fieldName(e, p.missingProperty)}" is required`;
    case 'type':
      return `field "${fieldName(e)}" must be of type ${p.type}`;
    default:
      return `field "${fieldName(e)}" ${e.message ?? 'is invalid'}`;
  }
}

/** Reads and parses a YAML (or JSON) file; syntax errors name the file, line and column. */
export function readYamlFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${path}: cannot read the file: ${(err as Error).message}`);
  }
  return parseYamlText(text, path);
}

export function parseYamlText(text: string, origin: string): unknown {
  // Loaded on first use, like ajv: a process that reads no YAML file never pays for the package.
  const { parseDocument } = require('yaml') as typeof import('yaml');
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const where = e.linePos?.[0] ? ` (line ${e.linePos[0].line}, column ${e.linePos[0].col})` : '';
    const reason = e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    throw new ConfigError(`${origin}: not valid YAML${where}: ${reason}`);
  }
  return doc.toJS() ?? {};
}

/** Sets dotted paths (`proxy.mode`) on a plain object: how flags override file values. */
export function applyOverrides(target: Record<string, any>, overrides: Record<string, unknown>): void {
  for (const [path, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    const keys = path.split('.');
    let node = target;
    for (const key of keys.slice(0, -1)) {
      if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
      node = node[key];
    }
    node[keys[keys.length - 1]!] = value;
  }
}

/**
 * A check of the plain JSON Schemas most plugins declare (objects of typed fields, enums, bounds), done
 * without ajv: loading ajv and compiling a schema costs a process ~0.1 s of CPU and a few MiB, which
 * `nodelet proxy` paid at each start for five tiny schemas. `validateConfig` asks this first; ajv still
 * decides everything this does not answer — a schema with any other keyword (defaults among them), and
 * every invalid value (so the error messages stay ajv's).
 *
 * 'valid' only when ajv (strict: false) would agree; 'unsupported' when unsure.
 */
export type PlainCheck = 'valid' | 'invalid' | 'unsupported';

/** Keywords that only annotate. */
const ANNOTATIONS = new Set(['title', 'description', '$comment', 'examples']);
const KEYWORDS = new Set([
  'type',
  'enum',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'minimum',
  'maximum',
  'minLength',
]);
const TYPES: Record<string, (v: unknown) => boolean> = {
  string: (v) => typeof v === 'string',
  boolean: (v) => typeof v === 'boolean',
  integer: (v) => Number.isInteger(v),
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  object: (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
  array: (v) => Array.isArray(v),
  null: (v) => v === null,
};

class Unsupported extends Error {}

export function checkPlainSchema(schema: unknown, value: unknown): PlainCheck {
  try {
    return check(schema, value) ? 'valid' : 'invalid';
  } catch (err) {
    if (err instanceof Unsupported) return 'unsupported';
    throw err;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Whether `value` satisfies `schema`; throws Unsupported for anything outside the subset. */
function check(schema: unknown, value: unknown): boolean {
  if (schema === true) return true;
  if (!isObject(schema)) throw new Unsupported();
  for (const key of Object.keys(schema))
    if (!KEYWORDS.has(key) && !ANNOTATIONS.has(key)) throw new Unsupported();
  // Every keyword is looked at even after a failure, so a schema outside the subset is never half-judged.
  let ok = true;
  if (schema.type !== undefined) {
    const is = typeof schema.type === 'string' ? TYPES[schema.type] : undefined;
    if (!is) throw new Unsupported();
    ok = is(value) && ok;
  }
  if (schema.enum !== undefined) {
    const values = schema.enum;
    if (!Array.isArray(values) || values.some((e) => e !== null && typeof e === 'object'))
      throw new Unsupported();
    ok = values.includes(value) && ok;
  }
  ok = checkNumber(schema, value) && ok;
  if (schema.minLength !== undefined) {
    if (!Number.isInteger(schema.minLength)) throw new Unsupported();
    // ajv counts code points, not UTF-16 units.
    if (typeof value === 'string') ok = [...value].length >= (schema.minLength as number) && ok;
  }
  ok = checkObject(schema, value) && ok;
  if (schema.items !== undefined) {
    if (!isObject(schema.items) && schema.items !== true) throw new Unsupported();
    check(schema.items, undefined); // judges the schema itself, also for an empty array
    if (Array.isArray(value)) for (const item of value) ok = check(schema.items, item) && ok;
  }
  return ok;
}

function checkNumber(schema: Record<string, unknown>, value: unknown): boolean {
  let ok = true;
  for (const bound of ['minimum', 'maximum'] as const) {
    const limit = schema[bound];
    if (limit === undefined) continue;
    if (typeof limit !== 'number' || !Number.isFinite(limit)) throw new Unsupported();
    if (typeof value === 'number') ok = (bound === 'minimum' ? value >= limit : value <= limit) && ok;
  }
  return ok;
}

function checkObject(schema: Record<string, unknown>, value: unknown): boolean {
  const { properties, required, additionalProperties: extra } = schema;
  if (properties !== undefined && !isObject(properties)) throw new Unsupported();
  if (required !== undefined && !(Array.isArray(required) && required.every((r) => typeof r === 'string')))
    throw new Unsupported();
  if (extra !== undefined && typeof extra !== 'boolean' && !isObject(extra)) throw new Unsupported();
  // The field schemas are judged even when the value lacks the field: an unsupported one must show.
  for (const field of Object.values(properties ?? {})) check(field, undefined);
  if (isObject(extra)) check(extra, undefined);
  if (!isObject(value)) return true;
  let ok = true;
  // As ajv: a field whose value is undefined is missing for `required` and `properties`, present for
  // `additionalProperties`.
  for (const name of (required as string[] | undefined) ?? []) ok = value[name] !== undefined && ok;
  for (const [name, field] of Object.entries(value)) {
    const declared = properties && Object.hasOwn(properties, name) ? properties[name] : undefined;
    if (declared !== undefined) ok = (field === undefined || check(declared, field)) && ok;
    else if (extra === false) ok = false;
    else if (isObject(extra)) ok = check(extra, field) && ok;
  }
  return ok;
}

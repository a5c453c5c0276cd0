/**
 * JSON Schema validation for tests of other packages (ajv 8, strict), so that each does not need its
 * own copy of ajv: `validateAgainst(schema)(value)` is the list of errors, empty when valid.
 */
import { Ajv } from 'ajv';

export function validateAgainst(schema: object): (value: unknown) => string[] {
  const validate = new Ajv({ allErrors: true, strict: true }).compile(schema);
  return (value) =>
    validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`);
}

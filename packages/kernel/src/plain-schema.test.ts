import test from 'ava';
import { Ajv } from 'ajv';
import { checkPlainSchema } from './plain-schema.js';

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });

// Shaped like the proxy's and its backends' configuration schemas.
const fields = {
  type: 'object',
  additionalProperties: false,
  required: ['nodeName'],
  properties: {
    nodeName: { type: 'string', minLength: 1 },
    nodeIPs: { type: 'array', items: { type: 'string' } },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    bit: { type: 'integer', minimum: 0, maximum: 31 },
    ratio: { type: 'number', maximum: 1 },
    on: { type: 'boolean' },
    mode: { enum: ['auto', 'nft', 'legacy'] },
  },
};

const values: unknown[] = [
  { nodeName: 'n' },
  { nodeName: '' },
  { nodeName: '😀' },
  {},
  { nodeName: undefined },
  { nodeName: 'n', other: 1 },
  { nodeName: 'n', nodeIPs: ['10.0.0.1'], labels: { a: 'b' }, bit: 14, ratio: 0.5, on: true, mode: 'nft' },
  { nodeName: 'n', nodeIPs: [1] },
  { nodeName: 'n', nodeIPs: 'x' },
  { nodeName: 'n', labels: { a: 1 } },
  { nodeName: 'n', labels: [] },
  { nodeName: 'n', bit: 32 },
  { nodeName: 'n', bit: -1 },
  { nodeName: 'n', bit: 1.5 },
  { nodeName: 'n', bit: '1' },
  { nodeName: 'n', ratio: 2 },
  { nodeName: 'n', on: 'yes' },
  { nodeName: 'n', mode: 'ipvs' },
  { nodeName: 'n', mode: undefined },
  null,
  [],
  'text',
  7,
];

test('on the plain subset, the answer is ajv’s for every value', (t) => {
  const validate = ajv.compile(fields);
  for (const value of values) {
    const expected = validate(structuredClone(value)) ? 'valid' : 'invalid';
    t.is(checkPlainSchema(fields, structuredClone(value)), expected, JSON.stringify(value) ?? 'undefined');
  }
});

test('a schema with any other keyword, anywhere, is left to ajv', (t) => {
  const unsupported: unknown[] = [
    { type: 'object', properties: { a: { type: 'string', default: 'x' } } },
    { type: 'object', properties: { a: { type: 'string', pattern: '^a' } } },
    { type: 'object', properties: { a: { $ref: '#/definitions/a' } } },
    { type: ['string', 'null'] },
    { type: 'strnig' },
    { type: 'array', items: [{ type: 'string' }] },
    { type: 'array', items: { type: 'string', format: 'ipv4' } },
    { enum: [{ a: 1 }] },
    { type: 'object', oneOf: [] },
    { type: 'object', additionalProperties: { type: 'string', maxLength: 3 } },
  ];
  for (const schema of unsupported) {
    // Also when the value never reaches the unsupported part.
    t.is(checkPlainSchema(schema, {}), 'unsupported', JSON.stringify(schema));
  }
});

test('annotations are no obstacle', (t) => {
  const schema = { type: 'object', description: 'd', properties: { a: { type: 'string', title: 'A' } } };
  t.is(checkPlainSchema(schema, { a: 'x' }), 'valid');
});

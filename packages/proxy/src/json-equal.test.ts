import test from 'ava';
import { jsonEqual, jsonFingerprint } from './json-equal.js';

test('jsonEqual: the same JSON data, whatever the key order; undefined keys count as absent', (t) => {
  t.true(jsonEqual({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 }));
  t.true(jsonEqual({ a: 1, gone: undefined }, { a: 1 }));
  t.true(jsonEqual({ a: 1 }, { a: 1, gone: undefined }));
  t.false(jsonEqual({ a: 1 }, { a: 1, b: null }));
  t.false(jsonEqual([1, 2], [2, 1]));
  t.false(jsonEqual([1], { 0: 1 }));
  t.false(jsonEqual({ a: [1, 2] }, { a: [1, 2, 3] }));
  t.false(jsonEqual(undefined, {}));
  t.true(jsonEqual('x', 'x'));
  t.false(jsonEqual(1, '1'));
});

test('jsonFingerprint: equal for equal JSON text, different when an object changed in place', (t) => {
  const slice = { endpoints: [{ addresses: ['10.0.0.1'] }] };
  const before = jsonFingerprint(slice);
  t.is(jsonFingerprint({ endpoints: [{ addresses: ['10.0.0.1'] }] }), before);
  slice.endpoints[0]!.addresses.push('10.0.0.2');
  t.not(jsonFingerprint(slice), before);
});

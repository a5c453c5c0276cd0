import test from 'ava';
import { checkJsonDepth, checkParsedDepth, checkYamlDepth, maxBodyDepth } from './body-depth.js';

const tooDeep = { message: /the request body is nested deeper than 500 levels/ };

test('JSON: brackets in strings, escaped quotes and long flat bodies do not count; nesting past the limit does', (t) => {
  t.notThrows(() => checkJsonDepth(JSON.stringify({ a: '['.repeat(10_000), b: 'x\\"{{{{' })));
  t.notThrows(() =>
    checkJsonDepth(JSON.stringify({ items: Array.from({ length: 10_000 }, (_, i) => ({ i })) })),
  );
  t.notThrows(() => checkJsonDepth('['.repeat(maxBodyDepth) + ']'.repeat(maxBodyDepth)));
  t.throws(() => checkJsonDepth('['.repeat(maxBodyDepth + 1)), tooDeep);
  t.throws(() => checkJsonDepth('{"a":'.repeat(200_000)), tooDeep);
});

test('YAML: comments, quoted and block scalars and one-line JSON do not count; flow, sequences and indentation do', (t) => {
  const manifest = [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: x # [[[[[[[[',
    '  annotations:',
    `    a: '${'['.repeat(1000)}'`,
    `    b: "${'{'.repeat(1000)}"`,
    'data:',
    '  script: |',
    ...Array.from({ length: 1000 }, () => '    if [ -n "${x}" ]; then { echo [; }; fi'),
    '  list:',
    ...Array.from({ length: 1000 }, (_, i) => `  - name: n${i}\n    value: [a, {b: c}]`),
  ].join('\n');
  t.notThrows(() => checkYamlDepth(manifest));
  // What kubectl sends for server-side apply: JSON, many keys on one line.
  t.notThrows(() =>
    checkYamlDepth(
      JSON.stringify(Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, { v: [i] }]))),
    ),
  );
  t.throws(() => checkYamlDepth('a: ' + '['.repeat(maxBodyDepth + 1)), tooDeep);
  t.throws(() => checkYamlDepth('a: ' + '- '.repeat(maxBodyDepth + 1) + 'x'), tooDeep);
  t.throws(
    () => checkYamlDepth(Array.from({ length: maxBodyDepth + 1 }, (_, i) => `${' '.repeat(i)}a:`).join('\n')),
    tooDeep,
  );
});

test('a parsed value is measured without recursion (YAML aliases can nest deeper than their text)', (t) => {
  let deep: unknown = 1;
  for (let i = 0; i < 100_000; i++) deep = [deep];
  t.throws(() => checkParsedDepth(deep), tooDeep);
  t.notThrows(() => checkParsedDepth({ a: [{ b: { c: [1, 2, 3] } }] }));
});

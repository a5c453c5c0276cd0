import test from 'ava';
import * as k8s from '@kubernetes/client-node';
import { models } from './gen/schema-models.js';
import { schemaFields } from './schema.js';

// Strict decoding reads a table generated from client-node's model classes, so that decoding does not load
// the library; this proves the table is still the installed library's schema, field for field.
test('the schema table holds every model of the installed client-node with the same fields', (t) => {
  const library = k8s as unknown as Record<string, { attributeTypeMap?: unknown } | undefined>;
  const libraryModels = Object.keys(library).filter((k) => Array.isArray(library[k]?.attributeTypeMap));
  t.true(libraryModels.length > 500);
  t.deepEqual(Object.keys(models).sort(), libraryModels.sort(), 'run npm run gen --workspace @nodelet/api');
  for (const kind of libraryModels) {
    const expected = (
      library[kind]!.attributeTypeMap as { name: string; baseName: string; type: string; format: string }[]
    ).map(({ name, baseName, type, format }) => ({ name, baseName, type, format }));
    t.deepEqual(
      [...schemaFields(kind)!.values()],
      expected,
      `${kind}: run npm run gen --workspace @nodelet/api`,
    );
  }
  t.is(schemaFields('KubeConfig'), undefined);
  t.is(schemaFields('toString'), undefined);
});

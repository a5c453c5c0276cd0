/**
 * The defaults of a served kind whose strategy is mostly metadata (namespaces, nodes, configmaps,
 * secrets, serviceaccounts, leases, endpointslices, events): name and age columns, every verb, metadata
 * validation. Columns follow kubectl's printers for each kind.
 */
import { type KubeObject } from '../object.js';
import { ageColumn, allVerbs, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { age } from './printers.js';
import { validateObjectMeta, validateObjectMetaUpdate } from './meta-validation.js';

export function base(
  t: Pick<ResourceType, 'group' | 'version' | 'kind' | 'plural' | 'singular' | 'namespaced' | 'model'> &
    Partial<ResourceType>,
): ResourceType {
  return {
    listKind: `${t.kind}List`,
    shortNames: [],
    categories: [],
    verbs: allVerbs,
    subresources: [],
    storage: t.plural,
    statusSubresource: false,
    columns: [nameColumn, ageColumn],
    row: (obj, now) => [obj.metadata.name, age(obj, now)],
    fields: {},
    strategy: {},
    ...t,
  };
}

export function metaStrategy(rule: (name: string) => string[], namespaced: boolean) {
  return {
    validate: (obj: KubeObject) => validateObjectMeta(obj.metadata, rule, namespaced),
    validateUpdate: (obj: KubeObject, old: KubeObject) => [
      ...validateObjectMeta(obj.metadata, rule, namespaced),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
    ],
  };
}

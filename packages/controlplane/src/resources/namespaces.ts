/** Namespaces: their phase, the kubernetes.io/metadata.name label, and which may not be deleted. */
import { isObject, type KubeObject } from '../object.js';
import { ageColumn, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { age } from './printers.js';
import { nameRules } from './meta-validation.js';
import { base, metaStrategy } from './resource-base.js';

/** Namespaces that cannot be deleted. */
export const immortalNamespaces = ['default', 'kube-system', 'kube-public'];

export const namespaces: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'Namespace',
  plural: 'namespaces',
  singular: 'namespace',
  namespaced: false,
  model: 'V1Namespace',
  shortNames: ['ns'],
  statusSubresource: true,
  subresources: [
    { name: 'status', kind: 'Namespace', verbs: ['get', 'patch', 'update'] },
    { name: 'finalize', kind: 'Namespace', verbs: ['update'] },
  ],
  columns: [
    nameColumn,
    { name: 'Status', type: 'string', description: 'The status of the namespace', priority: 0 },
    ageColumn,
  ],
  row: (obj, now) => [obj.metadata.name, obj.status?.phase ?? '', age(obj, now)],
  fields: { 'status.phase': (o) => o.status?.phase ?? '' },
  strategy: {
    prepareForCreate(obj) {
      obj.spec = { ...(isObject(obj.spec) ? obj.spec : {}), finalizers: ['kubernetes'] };
      obj.status = { phase: 'Active' };
      namespaceNameLabel(obj);
    },
    ...metaStrategy(nameRules.label, false),
    prepareForUpdate(obj, old) {
      obj.status = old.status;
      obj.spec = old.spec;
      namespaceNameLabel(obj);
    },
  },
});

function namespaceNameLabel(obj: KubeObject): void {
  obj.metadata.labels = { ...(obj.metadata.labels ?? {}), 'kubernetes.io/metadata.name': obj.metadata.name! };
}

import { type ResourceType, ageColumn, allVerbs, nameColumn } from '../apiserver/resource-type.js';
import { isObject, type KubeObject } from '../object.js';
import { age } from './printers.js';
import { nameRules, validateObjectMeta } from './meta-validation.js';
import {
  defaultTemplate,
  podTemplateStrategy,
  templateCells,
  validateCounts,
  validateSelectorAndTemplate,
} from './pod-template.js';

/**
 * apps/v1 ReplicaSets (upstream's pkg/registry/apps/replicaset): `replicas` defaults to 1, the template
 * to a pod's defaults; `status` and `scale` (autoscaling/v1) subresources; `kubectl get rs` prints
 * DESIRED CURRENT READY AGE.
 */
export const scaleSubresource = {
  name: 'scale',
  kind: 'Scale',
  group: 'autoscaling',
  version: 'v1',
  verbs: ['get', 'patch', 'update'],
} as const;

export const wideTemplateColumns = [
  {
    name: 'Containers',
    type: 'string',
    description: 'Names of each container in the template.',
    priority: 1,
  },
  {
    name: 'Images',
    type: 'string',
    description: 'Images referenced by each container in the template.',
    priority: 1,
  },
  {
    name: 'Selector',
    type: 'string',
    description: 'Selector is a label query over pods that should match the replica count.',
    priority: 1,
  },
] as const;

function validateReplicaSet(obj: KubeObject): ReturnType<typeof validateSelectorAndTemplate> {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  const spec = isObject(obj.spec) ? obj.spec : {};
  errors.push(...validateCounts(spec, ['replicas', 'minReadySeconds']));
  errors.push(...validateSelectorAndTemplate(spec, 'replicaset'));
  return errors;
}

function defaults(obj: KubeObject): void {
  if (!isObject(obj.spec)) return;
  obj.spec.replicas ??= 1;
  defaultTemplate(obj.spec);
}

export const replicaSets: ResourceType = {
  group: 'apps',
  version: 'v1',
  kind: 'ReplicaSet',
  listKind: 'ReplicaSetList',
  plural: 'replicasets',
  singular: 'replicaset',
  namespaced: true,
  shortNames: ['rs'],
  categories: ['all'],
  verbs: allVerbs,
  subresources: [{ name: 'status', kind: 'ReplicaSet', verbs: ['get', 'patch', 'update'] }, scaleSubresource],
  model: 'V1ReplicaSet',
  storage: 'replicasets',
  statusSubresource: true,
  columns: [
    nameColumn,
    { name: 'Desired', type: 'integer', description: 'Number of desired pods.', priority: 0 },
    { name: 'Current', type: 'integer', description: 'Number of actual pods.', priority: 0 },
    { name: 'Ready', type: 'integer', description: 'Number of ready pods.', priority: 0 },
    ageColumn,
    ...wideTemplateColumns,
  ],
  row: (obj, now) => [
    obj.metadata.name,
    obj.spec?.replicas ?? 0,
    obj.status?.replicas ?? 0,
    obj.status?.readyReplicas ?? 0,
    age(obj, now),
    ...templateCells(obj),
  ],
  fields: { 'status.replicas': (o) => String(o.status?.replicas ?? 0) },
  strategy: podTemplateStrategy(defaults, validateReplicaSet, () => ({ replicas: 0 })),
};

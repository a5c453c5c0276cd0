import {
  canonicalJson,
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  type FieldError,
} from '@nodelet/api';
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
import { scaleSubresource, wideTemplateColumns } from './replica-sets.js';

/**
 * apps/v1 StatefulSets (upstream's pkg/registry/apps/statefulset and pkg/apis/apps/v1/defaults.go):
 * replicas 1, podManagementPolicy OrderedReady, updateStrategy RollingUpdate with partition 0,
 * revisionHistoryLimit 10, persistentVolumeClaimRetentionPolicy Retain/Retain; `status` and `scale`
 * subresources; `kubectl get sts` prints READY AGE. `volumeClaimTemplates` are refused: this control
 * plane has no persistent volumes to bind the claims to.
 */
const policies = ['OrderedReady', 'Parallel'];
const updateStrategyTypes = ['RollingUpdate', 'OnDelete'];
const retention = ['Retain', 'Delete'];
/** The spec fields an update may change (upstream's ValidateStatefulSetUpdate). */
const mutable = [
  'replicas',
  'ordinals',
  'template',
  'updateStrategy',
  'revisionHistoryLimit',
  'persistentVolumeClaimRetentionPolicy',
  'minReadySeconds',
];

function defaults(obj: KubeObject): void {
  if (!isObject(obj.spec)) return;
  const spec = obj.spec;
  spec.replicas ??= 1;
  spec.podManagementPolicy ??= 'OrderedReady';
  spec.updateStrategy ??= {};
  if (isObject(spec.updateStrategy)) {
    spec.updateStrategy.type ??= 'RollingUpdate';
    if (spec.updateStrategy.type === 'RollingUpdate') {
      spec.updateStrategy.rollingUpdate ??= {};
      if (isObject(spec.updateStrategy.rollingUpdate)) spec.updateStrategy.rollingUpdate.partition ??= 0;
    }
  }
  spec.revisionHistoryLimit ??= 10;
  spec.persistentVolumeClaimRetentionPolicy ??= {};
  if (isObject(spec.persistentVolumeClaimRetentionPolicy)) {
    spec.persistentVolumeClaimRetentionPolicy.whenDeleted ??= 'Retain';
    spec.persistentVolumeClaimRetentionPolicy.whenScaled ??= 'Retain';
  }
  defaultTemplate(spec);
}

function validateStrategies(spec: Record<string, any>): FieldError[] {
  const errors: FieldError[] = [];
  if (!policies.includes(spec.podManagementPolicy))
    errors.push(fieldNotSupported('spec.podManagementPolicy', spec.podManagementPolicy, policies));
  const strategy = isObject(spec.updateStrategy) ? spec.updateStrategy : {};
  if (!updateStrategyTypes.includes(strategy.type))
    errors.push(fieldNotSupported('spec.updateStrategy.type', strategy.type, updateStrategyTypes));
  const ru = strategy.rollingUpdate;
  if (strategy.type === 'OnDelete' && ru !== undefined && ru !== null)
    errors.push(
      fieldInvalid(
        'spec.updateStrategy.rollingUpdate',
        ru,
        "only allowed for updateStrategy 'RollingUpdate'",
      ),
    );
  const partition = isObject(ru) ? ru.partition : undefined;
  if (partition !== undefined && !(Number.isInteger(partition) && partition >= 0))
    errors.push(
      fieldInvalid(
        'spec.updateStrategy.rollingUpdate.partition',
        partition,
        'must be greater than or equal to 0',
      ),
    );
  const policy = isObject(spec.persistentVolumeClaimRetentionPolicy)
    ? spec.persistentVolumeClaimRetentionPolicy
    : {};
  for (const f of ['whenDeleted', 'whenScaled']) {
    if (!retention.includes(policy[f]))
      errors.push(fieldNotSupported(`spec.persistentVolumeClaimRetentionPolicy.${f}`, policy[f], retention));
  }
  return errors;
}

/** The spec with a volume per claim template, as pods would have it, so the template's mounts resolve. */
function withClaimVolumes(spec: Record<string, any>): Record<string, any> {
  const claims: unknown[] = Array.isArray(spec.volumeClaimTemplates) ? spec.volumeClaimTemplates : [];
  const names = claims.map((c) => (isObject(c) && isObject(c.metadata) ? c.metadata.name : undefined));
  if (!isObject(spec.template) || !isObject(spec.template.spec) || names.length === 0) return spec;
  const volumes = [
    ...(Array.isArray(spec.template.spec.volumes) ? spec.template.spec.volumes : []),
    ...names
      .filter((n): n is string => typeof n === 'string')
      .map((name) => ({ name, persistentVolumeClaim: { claimName: name } })),
  ];
  return { ...spec, template: { ...spec.template, spec: { ...spec.template.spec, volumes } } };
}

function validateStatefulSet(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  const spec = isObject(obj.spec) ? obj.spec : {};
  errors.push(
    ...validateCounts(spec, ['replicas', 'minReadySeconds', 'revisionHistoryLimit']),
    ...validateSelectorAndTemplate(withClaimVolumes(spec), 'statefulset'),
    ...validateStrategies(spec),
  );
  const start = isObject(spec.ordinals) ? spec.ordinals.start : undefined;
  if (start !== undefined && !(Number.isInteger(start) && start >= 0))
    errors.push(fieldInvalid('spec.ordinals.start', start, 'must be greater than or equal to 0'));
  if (Array.isArray(spec.volumeClaimTemplates) && spec.volumeClaimTemplates.length > 0)
    errors.push(
      fieldForbidden(
        'spec.volumeClaimTemplates',
        'persistent volumes are not supported by this control plane yet: remove volumeClaimTemplates ' +
          '(an emptyDir or hostPath volume keeps data on the node)',
      ),
    );
  return errors;
}

/** Only `mutable` spec fields may change. */
function validateSpecUpdate(obj: KubeObject, old: KubeObject): FieldError[] {
  const rest = (o: KubeObject) => {
    const spec = { ...(isObject(o.spec) ? o.spec : {}) };
    for (const f of mutable) delete spec[f];
    return canonicalJson(spec);
  };
  if (rest(obj) === rest(old)) return [];
  const list = mutable.slice(0, -1).map((f) => `'${f}'`);
  return [
    fieldForbidden(
      'spec',
      `updates to statefulset spec for fields other than ${list.join(', ')} and '${mutable.at(-1)}' are forbidden`,
    ),
  ];
}

export const statefulSets: ResourceType = {
  group: 'apps',
  version: 'v1',
  kind: 'StatefulSet',
  listKind: 'StatefulSetList',
  plural: 'statefulsets',
  singular: 'statefulset',
  namespaced: true,
  shortNames: ['sts'],
  categories: ['all'],
  verbs: allVerbs,
  subresources: [
    { name: 'status', kind: 'StatefulSet', verbs: ['get', 'patch', 'update'] },
    scaleSubresource,
  ],
  model: 'V1StatefulSet',
  storage: 'statefulsets',
  statusSubresource: true,
  columns: [
    nameColumn,
    { name: 'Ready', type: 'string', description: 'Number of the pod with ready state', priority: 0 },
    ageColumn,
    ...wideTemplateColumns.slice(0, 2),
  ],
  row: (obj, now) => [
    obj.metadata.name,
    `${obj.status?.readyReplicas ?? 0}/${obj.spec?.replicas ?? 0}`,
    age(obj, now),
    ...templateCells(obj).slice(0, 2),
  ],
  fields: {},
  strategy: podTemplateStrategy(
    defaults,
    validateStatefulSet,
    () => ({ replicas: 0, availableReplicas: 0 }),
    validateSpecUpdate,
  ),
};

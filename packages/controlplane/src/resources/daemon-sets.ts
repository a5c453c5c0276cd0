import { fieldInvalid, fieldNotSupported, fieldRequired, type FieldError } from '@nodelet/api';
import { type ResourceType, ageColumn, allVerbs, nameColumn } from '../apiserver/resource-type.js';
import { isObject, type KubeObject } from '../object.js';
import { age, formatLabels } from './printers.js';
import { nameRules, validateObjectMeta } from './meta-validation.js';
import {
  defaultTemplate,
  podTemplateStrategy,
  templateCells,
  validateCounts,
  validateSelectorAndTemplate,
} from './pod-template.js';
import { wideTemplateColumns } from './replica-sets.js';

/**
 * apps/v1 DaemonSets (upstream's pkg/registry/apps/daemonset and pkg/apis/apps/v1/defaults.go):
 * updateStrategy RollingUpdate with maxUnavailable 1 and maxSurge 0, revisionHistoryLimit 10; a `status`
 * subresource; `kubectl get ds` prints DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE.
 */
const updateStrategyTypes = ['RollingUpdate', 'OnDelete'];

function defaults(obj: KubeObject): void {
  if (!isObject(obj.spec)) return;
  const spec = obj.spec;
  spec.updateStrategy ??= {};
  if (isObject(spec.updateStrategy)) {
    spec.updateStrategy.type ??= 'RollingUpdate';
    if (spec.updateStrategy.type === 'RollingUpdate') {
      spec.updateStrategy.rollingUpdate ??= {};
      if (isObject(spec.updateStrategy.rollingUpdate)) {
        spec.updateStrategy.rollingUpdate.maxUnavailable ??= 1;
        spec.updateStrategy.rollingUpdate.maxSurge ??= 0;
      }
    }
  }
  spec.revisionHistoryLimit ??= 10;
  defaultTemplate(spec);
}

/** An IntOrString that is a non-negative count or a percentage of at most 100%. */
export function validateIntOrPercent(value: unknown, field: string): FieldError[] {
  if (typeof value === 'number') {
    return Number.isInteger(value) && value >= 0
      ? []
      : [fieldInvalid(field, value, 'must be greater than or equal to 0')];
  }
  const m = typeof value === 'string' ? /^(\d+)%$/.exec(value) : null;
  if (!m)
    return [
      fieldInvalid(field, value, "a valid percent string must be a numeric string followed by an ending '%'"),
    ];
  return Number(m[1]) > 100 ? [fieldInvalid(field, value, 'must not be greater than 100%')] : [];
}

const isZero = (v: unknown) => v === 0 || v === '0%';

function validateUpdateStrategy(spec: Record<string, any>): FieldError[] {
  const strategy = isObject(spec.updateStrategy) ? spec.updateStrategy : {};
  if (!updateStrategyTypes.includes(strategy.type))
    return [fieldNotSupported('spec.updateStrategy.type', strategy.type, updateStrategyTypes)];
  if (strategy.type !== 'RollingUpdate') return [];
  const ru = strategy.rollingUpdate;
  if (!isObject(ru))
    return [fieldRequired('spec.updateStrategy.rollingUpdate', 'this should be defaulted and never be nil')];
  const path = 'spec.updateStrategy.rollingUpdate';
  const errors = [
    ...validateIntOrPercent(ru.maxUnavailable, `${path}.maxUnavailable`),
    ...validateIntOrPercent(ru.maxSurge, `${path}.maxSurge`),
  ];
  if (errors.length === 0 && isZero(ru.maxUnavailable) && isZero(ru.maxSurge))
    errors.push(
      fieldInvalid(`${path}.maxUnavailable`, ru.maxUnavailable, 'may not be 0 when `maxSurge` is 0'),
    );
  return errors;
}

function validateDaemonSet(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  const spec = isObject(obj.spec) ? obj.spec : {};
  errors.push(
    ...validateCounts(spec, ['minReadySeconds', 'revisionHistoryLimit']),
    ...validateSelectorAndTemplate(spec, 'daemonset'),
    ...validateUpdateStrategy(spec),
  );
  return errors;
}

const count = (description: string) => ({ type: 'integer' as const, description, priority: 0 });

export const daemonSets: ResourceType = {
  group: 'apps',
  version: 'v1',
  kind: 'DaemonSet',
  listKind: 'DaemonSetList',
  plural: 'daemonsets',
  singular: 'daemonset',
  namespaced: true,
  shortNames: ['ds'],
  categories: ['all'],
  verbs: allVerbs,
  subresources: [{ name: 'status', kind: 'DaemonSet', verbs: ['get', 'patch', 'update'] }],
  model: 'V1DaemonSet',
  storage: 'daemonsets',
  statusSubresource: true,
  columns: [
    nameColumn,
    { name: 'Desired', ...count('The desired number of pods.') },
    { name: 'Current', ...count('The current number of pods.') },
    { name: 'Ready', ...count('The number of pods ready.') },
    { name: 'Up-to-date', ...count('The number of pods updated.') },
    { name: 'Available', ...count('The number of pods available.') },
    {
      name: 'Node Selector',
      type: 'string',
      description: 'NodeSelector is a selector which must be true for the pod to fit on a node.',
      priority: 0,
    },
    ageColumn,
    ...wideTemplateColumns,
  ],
  row: (obj, now) => [
    obj.metadata.name,
    obj.status?.desiredNumberScheduled ?? 0,
    obj.status?.currentNumberScheduled ?? 0,
    obj.status?.numberReady ?? 0,
    obj.status?.updatedNumberScheduled ?? 0,
    obj.status?.numberAvailable ?? 0,
    formatLabels(obj.spec?.template?.spec?.nodeSelector),
    age(obj, now),
    ...templateCells(obj),
  ],
  fields: {},
  strategy: podTemplateStrategy(defaults, validateDaemonSet, () => ({
    currentNumberScheduled: 0,
    numberMisscheduled: 0,
    desiredNumberScheduled: 0,
    numberReady: 0,
  })),
};

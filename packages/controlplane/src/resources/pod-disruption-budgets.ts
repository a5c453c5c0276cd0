import { canonicalJson, fieldInvalid, fieldNotSupported, type FieldError } from '@nodelet/api';
import { type ResourceType, ageColumn, allVerbs, nameColumn } from '../apiserver/resource-type.js';
import { labelSelectorFromObject, matchLabels } from '../apiserver/selectors.js';
import { isObject, type KubeObject } from '../object.js';
import { age } from './printers.js';
import {
  nameRules,
  validateLabels,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from './meta-validation.js';

/**
 * policy/v1 PodDisruptionBudgets (upstream's pkg/registry/policy/poddisruptionbudget and
 * pkg/apis/policy/validation): at most one of `minAvailable` / `maxUnavailable`, each a non-negative
 * integer or a percentage up to 100%; a label selector; status owned by the `status` subresource (written
 * by the disruption controller and by evictions). `kubectl get pdb` prints MIN AVAILABLE MAX UNAVAILABLE
 * ALLOWED DISRUPTIONS AGE.
 */
const percent = /^[0-9]+%$/;
const evictionPolicies = ['IfHealthyBudget', 'AlwaysAllow'];
const operators = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

/** ValidatePositiveIntOrPercent + IsNotMoreThan100Percent. */
function validateIntOrPercent(value: unknown, field: string): FieldError[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'number') {
    return Number.isInteger(value) && value >= 0
      ? []
      : [fieldInvalid(field, value, 'must be greater than or equal to 0')];
  }
  if (typeof value !== 'string' || !percent.test(value)) {
    return [
      fieldInvalid(
        field,
        value,
        "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
      ),
    ];
  }
  return Number.parseInt(value, 10) > 100
    ? [fieldInvalid(field, value, 'must not be greater than 100%')]
    : [];
}

function validateSelector(selector: unknown): FieldError[] {
  if (selector === undefined || selector === null) return [];
  if (!isObject(selector)) return [fieldInvalid('spec.selector', selector, 'must be a label selector')];
  const errors = validateLabels(selector.matchLabels, 'spec.selector.matchLabels');
  const exprs: unknown[] = Array.isArray(selector.matchExpressions) ? selector.matchExpressions : [];
  exprs.forEach((e, i) => {
    const path = `spec.selector.matchExpressions[${i}]`;
    const op = isObject(e) ? e.operator : undefined;
    if (!operators.includes(op)) errors.push(fieldNotSupported(`${path}.operator`, op, operators));
    const values = isObject(e) && Array.isArray(e.values) ? e.values : [];
    if ((op === 'In' || op === 'NotIn') && values.length === 0)
      errors.push(
        fieldInvalid(`${path}.values`, values, "must be specified when `operator` is 'In' or 'NotIn'"),
      );
    if ((op === 'Exists' || op === 'DoesNotExist') && values.length > 0)
      errors.push(
        fieldInvalid(
          `${path}.values`,
          values,
          "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
      );
  });
  return errors;
}

function validateBudget(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  const spec = isObject(obj.spec) ? obj.spec : {};
  const has = (v: unknown) => v !== undefined && v !== null;
  if (has(spec.minAvailable) && has(spec.maxUnavailable)) {
    errors.push(fieldInvalid('spec', '', 'minAvailable and maxUnavailable cannot be both set'));
  }
  errors.push(...validateIntOrPercent(spec.minAvailable, 'spec.minAvailable'));
  errors.push(...validateIntOrPercent(spec.maxUnavailable, 'spec.maxUnavailable'));
  errors.push(...validateSelector(spec.selector));
  const policy: unknown = spec.unhealthyPodEvictionPolicy;
  if (has(policy) && !evictionPolicies.includes(policy as string)) {
    errors.push(fieldNotSupported('spec.unhealthyPodEvictionPolicy', String(policy), evictionPolicies));
  }
  return errors;
}

/** The status a new budget starts with: nothing counted yet, so nothing may be disrupted. */
const emptyStatus = () => ({ currentHealthy: 0, desiredHealthy: 0, disruptionsAllowed: 0, expectedPods: 0 });

/** Whether the budget covers `pod` (policy/v1: a missing selector covers nothing, an empty one everything). */
export function budgetSelects(pdb: KubeObject, pod: KubeObject): boolean {
  const selector = pdb.spec?.selector;
  if (!isObject(selector)) return false;
  return matchLabels(labelSelectorFromObject(selector), pod.metadata.labels);
}

const cell = (v: unknown) => (v === undefined || v === null ? 'N/A' : String(v));

export const podDisruptionBudgets: ResourceType = {
  group: 'policy',
  version: 'v1',
  kind: 'PodDisruptionBudget',
  listKind: 'PodDisruptionBudgetList',
  plural: 'poddisruptionbudgets',
  singular: 'poddisruptionbudget',
  namespaced: true,
  shortNames: ['pdb'],
  categories: [],
  verbs: allVerbs,
  subresources: [{ name: 'status', kind: 'PodDisruptionBudget', verbs: ['get', 'patch', 'update'] }],
  model: 'V1PodDisruptionBudget',
  storage: 'poddisruptionbudgets',
  statusSubresource: true,
  columns: [
    nameColumn,
    {
      name: 'Min Available',
      type: 'string',
      description: 'The minimum number of pods that must be available.',
      priority: 0,
    },
    {
      name: 'Max Unavailable',
      type: 'string',
      description: 'The maximum number of pods that may be unavailable.',
      priority: 0,
    },
    {
      name: 'Allowed Disruptions',
      type: 'integer',
      description: 'Calculated number of pods that may be disrupted at this time.',
      priority: 0,
    },
    ageColumn,
  ],
  row: (obj, now) => [
    obj.metadata.name,
    cell(obj.spec?.minAvailable),
    cell(obj.spec?.maxUnavailable),
    obj.status?.disruptionsAllowed ?? 0,
    age(obj, now),
  ],
  fields: {},
  strategy: {
    prepareForCreate(obj) {
      obj.status = emptyStatus();
      obj.metadata.generation = 1;
    },
    validate: (obj) => validateBudget(obj),
    prepareForUpdate(obj, old) {
      const changed = canonicalJson(obj.spec ?? null) !== canonicalJson(old.spec ?? null);
      obj.metadata.generation = (old.metadata.generation ?? 1) + (changed ? 1 : 0);
    },
    validateUpdate: (obj, old) => [
      ...validateBudget(obj),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
    ],
  },
};

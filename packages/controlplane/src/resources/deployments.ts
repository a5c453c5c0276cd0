import {
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  type FieldError,
} from '@nodelet/api';
import { type ResourceType, ageColumn, allVerbs, nameColumn } from '../apiserver/resource-type.js';
import { isObject, type KubeObject } from '../object.js';
import { age } from './printers.js';
import { nameRules, validateObjectMeta, validateObjectMetaUpdate } from './meta-validation.js';
import {
  bumpGeneration,
  defaultTemplate,
  templateCells,
  validateCounts,
  validateSelectorAndTemplate,
  validateSelectorUpdate,
} from './pod-template.js';
import { scaleSubresource, wideTemplateColumns } from './replica-sets.js';

/**
 * apps/v1 Deployments (upstream's pkg/registry/apps/deployment and pkg/apis/apps/v1/defaults.go):
 * replicas 1, RollingUpdate 25%/25%, revisionHistoryLimit 10, progressDeadlineSeconds 600; `status` and
 * `scale` subresources; generation bumped by spec or annotation changes; `kubectl get deploy` prints
 * READY UP-TO-DATE AVAILABLE AGE.
 */
const strategyTypes = ['Recreate', 'RollingUpdate'];

function defaults(obj: KubeObject): void {
  if (!isObject(obj.spec)) return;
  const spec = obj.spec;
  spec.replicas ??= 1;
  spec.strategy ??= {};
  if (isObject(spec.strategy)) {
    spec.strategy.type ??= 'RollingUpdate';
    if (spec.strategy.type === 'RollingUpdate') {
      spec.strategy.rollingUpdate ??= {};
      if (isObject(spec.strategy.rollingUpdate)) {
        spec.strategy.rollingUpdate.maxUnavailable ??= '25%';
        spec.strategy.rollingUpdate.maxSurge ??= '25%';
      }
    }
  }
  spec.revisionHistoryLimit ??= 10;
  spec.progressDeadlineSeconds ??= 600;
  defaultTemplate(spec);
}

const isZero = (v: unknown) => v === 0 || v === '0' || v === '0%';

function validateStrategy(spec: Record<string, any>): FieldError[] {
  const errors: FieldError[] = [];
  const strategy = isObject(spec.strategy) ? spec.strategy : {};
  if (!strategyTypes.includes(strategy.type)) {
    errors.push(fieldNotSupported('spec.strategy.type', strategy.type, strategyTypes));
  }
  const ru = strategy.rollingUpdate;
  if (strategy.type === 'Recreate' && ru !== undefined && ru !== null) {
    errors.push(
      fieldForbidden(
        'spec.strategy.rollingUpdate',
        "may not be specified when strategy `type` is 'Recreate'",
      ),
    );
  }
  if (strategy.type === 'RollingUpdate') {
    if (!isObject(ru))
      errors.push(fieldRequired('spec.strategy.rollingUpdate', 'this should be defaulted and never be nil'));
    else if (isZero(ru.maxUnavailable) && isZero(ru.maxSurge)) {
      errors.push(
        fieldInvalid(
          'spec.strategy.rollingUpdate.maxUnavailable',
          ru.maxUnavailable,
          'may not be 0 when `maxSurge` is 0',
        ),
      );
    }
  }
  return errors;
}

function validateDeployment(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  const spec = isObject(obj.spec) ? obj.spec : {};
  errors.push(
    ...validateCounts(spec, ['replicas', 'minReadySeconds', 'revisionHistoryLimit']),
    ...validateSelectorAndTemplate(spec, 'deployment'),
    ...validateStrategy(spec),
  );
  const deadline = spec.progressDeadlineSeconds;
  if (typeof deadline === 'number' && deadline <= (spec.minReadySeconds ?? 0)) {
    errors.push(
      fieldInvalid('spec.progressDeadlineSeconds', deadline, 'must be greater than minReadySeconds'),
    );
  }
  return errors;
}

export const deployments: ResourceType = {
  group: 'apps',
  version: 'v1',
  kind: 'Deployment',
  listKind: 'DeploymentList',
  plural: 'deployments',
  singular: 'deployment',
  namespaced: true,
  shortNames: ['deploy'],
  categories: ['all'],
  verbs: allVerbs,
  subresources: [{ name: 'status', kind: 'Deployment', verbs: ['get', 'patch', 'update'] }, scaleSubresource],
  model: 'V1Deployment',
  storage: 'deployments',
  statusSubresource: true,
  columns: [
    nameColumn,
    { name: 'Ready', type: 'string', description: 'Number of the pod with ready state', priority: 0 },
    {
      name: 'Up-to-date',
      type: 'string',
      description:
        'Total number of non-terminated pods targeted by this deployment that have the desired template spec.',
      priority: 0,
    },
    {
      name: 'Available',
      type: 'string',
      description:
        'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.',
      priority: 0,
    },
    ageColumn,
    ...wideTemplateColumns,
  ],
  row: (obj, now) => [
    obj.metadata.name,
    `${obj.status?.readyReplicas ?? 0}/${obj.spec?.replicas ?? 0}`,
    obj.status?.updatedReplicas ?? 0,
    obj.status?.availableReplicas ?? 0,
    age(obj, now),
    ...templateCells(obj),
  ],
  fields: {},
  strategy: {
    prepareForCreate(obj) {
      defaults(obj);
      obj.status = {};
      obj.metadata.generation = 1;
    },
    validate: (obj) => validateDeployment(obj),
    prepareForUpdate(obj, old) {
      defaults(obj);
      bumpGeneration(obj, old, true);
    },
    // A status write may also change annotations (the controller's revision annotation), as upstream.
    prepareForStatusUpdate(obj, old) {
      const metadata = { ...old.metadata };
      if (obj.metadata.annotations) metadata.annotations = obj.metadata.annotations;
      else delete metadata.annotations;
      return { ...old, metadata, status: obj.status };
    },
    validateUpdate: (obj, old) => [
      ...validateDeployment(obj),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
      ...validateSelectorUpdate(obj, old),
    ],
  },
};

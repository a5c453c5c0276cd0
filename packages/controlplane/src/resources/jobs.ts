import { type FieldError } from '@nodelet/api';
import { type ResourceType, ageColumn, allVerbs, nameColumn } from '../apiserver/resource-type.js';
import { isObject, type KubeObject } from '../object.js';
import { age, humanDuration } from './printers.js';
import { nameRules, validateObjectMeta } from './meta-validation.js';
import { specStrategy, templateCells } from './pod-template.js';
import { wideTemplateColumns } from './replica-sets.js';
import {
  defaultJobSpec,
  generateSelector,
  validateGeneratedSelector,
  validateJobSpec,
  validateJobSpecUpdate,
} from './job-spec.js';

/**
 * batch/v1 Jobs (upstream's pkg/registry/batch/job): the spec defaulted as SetDefaults_Job, a selector
 * generated from the uid unless `manualSelector`, a `status` subresource; `kubectl get jobs` prints
 * STATUS COMPLETIONS DURATION AGE as upstream's printJob.
 */
function hasCondition(obj: KubeObject, type: string): boolean {
  return (obj.status?.conditions ?? []).some((c: any) => c.type === type && c.status === 'True');
}

/** The STATUS cell: Complete, Failed, Terminating, Suspended, FailureTarget or Running. */
export function jobStatusCell(obj: KubeObject): string {
  if (hasCondition(obj, 'Complete')) return 'Complete';
  if (hasCondition(obj, 'Failed')) return 'Failed';
  if (obj.metadata.deletionTimestamp) return 'Terminating';
  if (hasCondition(obj, 'Suspended')) return 'Suspended';
  if (hasCondition(obj, 'FailureTarget')) return 'FailureTarget';
  return 'Running';
}

/** The COMPLETIONS cell: `succeeded/completions`, or `n/1 of parallelism` for a work queue. */
function completionsCell(obj: KubeObject): string {
  const succeeded = obj.status?.succeeded ?? 0;
  if (typeof obj.spec?.completions === 'number') return `${succeeded}/${obj.spec.completions}`;
  const parallelism = obj.spec?.parallelism ?? 0;
  return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
}

function durationCell(obj: KubeObject, now: number): string {
  const start = Date.parse(obj.status?.startTime ?? '');
  if (!Number.isFinite(start)) return '';
  const end = Date.parse(obj.status?.completionTime ?? '');
  return humanDuration((Number.isFinite(end) ? end : now) - start);
}

function defaults(obj: KubeObject): void {
  if (isObject(obj.spec)) defaultJobSpec(obj.spec);
}

function validateJob(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  const spec = isObject(obj.spec) ? obj.spec : {};
  errors.push(...validateJobSpec(spec));
  errors.push(...validateGeneratedSelector(spec, obj.metadata.name ?? '', obj.metadata.uid ?? ''));
  return errors;
}

export const jobs: ResourceType = {
  group: 'batch',
  version: 'v1',
  kind: 'Job',
  listKind: 'JobList',
  plural: 'jobs',
  singular: 'job',
  namespaced: true,
  shortNames: [],
  categories: ['all'],
  verbs: allVerbs,
  subresources: [{ name: 'status', kind: 'Job', verbs: ['get', 'patch', 'update'] }],
  model: 'V1Job',
  storage: 'jobs',
  statusSubresource: true,
  defaultPropagationPolicy: 'Orphan',
  columns: [
    nameColumn,
    { name: 'Status', type: 'string', description: 'Status of the job.', priority: 0 },
    {
      name: 'Completions',
      type: 'string',
      description: 'The number of pods which reached phase Succeeded.',
      priority: 0,
    },
    { name: 'Duration', type: 'string', description: 'Time required to complete the job.', priority: 0 },
    ageColumn,
    ...wideTemplateColumns,
  ],
  row: (obj, now) => [
    obj.metadata.name,
    jobStatusCell(obj),
    completionsCell(obj),
    durationCell(obj, now),
    age(obj, now),
    ...templateCells(obj),
  ],
  fields: { 'status.successful': (o) => String(o.status?.succeeded ?? 0) },
  strategy: {
    ...specStrategy(defaults, validateJob, (obj, old) =>
      validateJobSpecUpdate(isObject(obj.spec) ? obj.spec : {}, isObject(old.spec) ? old.spec : {}),
    ),
    prepareForCreate(obj) {
      defaults(obj);
      if (isObject(obj.spec)) generateSelector(obj.spec, obj.metadata.name ?? '', obj.metadata.uid ?? '');
      obj.status = {};
      obj.metadata.generation = 1;
    },
  },
};

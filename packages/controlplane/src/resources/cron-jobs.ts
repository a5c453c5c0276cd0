import { fieldInvalid, fieldNotSupported, fieldRequired, type FieldError } from '@nodelet/api';
import { type ResourceType, ageColumn, allVerbs, nameColumn } from '../apiserver/resource-type.js';
import { isObject, type KubeObject } from '../object.js';
import { isKnownTimeZone, parseCronSchedule } from './cron-schedule.js';
import { age } from './printers.js';
import { nameRules, validateObjectMeta, validateLabels } from './meta-validation.js';
import { defaultTemplate, selectorString, specStrategy, validateCounts } from './pod-template.js';
import { wideTemplateColumns } from './replica-sets.js';
import { generateSelector, validateJobSpec, validateTemplateSelector } from './job-spec.js';

/**
 * batch/v1 CronJobs (upstream's pkg/registry/batch/cronjob and pkg/apis/batch/v1/defaults.go):
 * concurrencyPolicy Allow, not suspended, 3 successful and 1 failed Job kept; the schedule and time zone
 * validated as the controller reads them; `kubectl get cronjobs` prints SCHEDULE TIMEZONE SUSPEND ACTIVE
 * LAST SCHEDULE AGE.
 */
const concurrencyPolicies = ['Allow', 'Forbid', 'Replace'];
/** A Job's name is `<cronjob>-<minutes>`: 11 digits and a dash must fit in a 63-character label. */
const maxNameLength = 52;

function defaults(obj: KubeObject): void {
  if (!isObject(obj.spec)) return;
  const spec = obj.spec;
  spec.concurrencyPolicy ??= 'Allow';
  spec.suspend ??= false;
  spec.successfulJobsHistoryLimit ??= 3;
  spec.failedJobsHistoryLimit ??= 1;
  if (isObject(spec.jobTemplate) && isObject(spec.jobTemplate.spec)) defaultTemplate(spec.jobTemplate.spec);
}

function validateSchedule(spec: Record<string, any>): FieldError[] {
  const errors: FieldError[] = [];
  const zone = spec.timeZone;
  if (zone !== undefined && zone !== null) {
    if (typeof zone !== 'string' || zone.includes(' ') || !isKnownTimeZone(zone)) {
      errors.push(fieldInvalid('spec.timeZone', zone, `unknown time zone ${zone}`));
    }
  }
  if (typeof spec.schedule !== 'string' || spec.schedule === '') {
    errors.push(fieldRequired('spec.schedule'));
    return errors;
  }
  if (/(^|\s)(CRON_)?TZ=/.test(spec.schedule)) {
    errors.push(
      fieldInvalid(
        'spec.schedule',
        spec.schedule,
        'cannot use TZ or CRON_TZ in schedule, use timeZone field instead',
      ),
    );
    return errors;
  }
  try {
    parseCronSchedule(spec.schedule);
  } catch (err) {
    errors.push(fieldInvalid('spec.schedule', spec.schedule, (err as Error).message));
  }
  return errors;
}

/** The job template validates as a Job's spec would once its selector is generated. */
function validateJobTemplate(spec: Record<string, any>): FieldError[] {
  if (!isObject(spec.jobTemplate)) return [fieldRequired('spec.jobTemplate')];
  const errors: FieldError[] = [];
  const meta = isObject(spec.jobTemplate.metadata) ? spec.jobTemplate.metadata : {};
  errors.push(...validateLabels(meta.labels, 'spec.jobTemplate.metadata.labels'));
  const jobSpec = structuredClone(isObject(spec.jobTemplate.spec) ? spec.jobTemplate.spec : {});
  const own = validateTemplateSelector(jobSpec);
  generateSelector(jobSpec, 'template', 'template');
  for (const e of [...own, ...validateJobSpec(jobSpec)]) {
    errors.push({ ...e, field: e.field.replace(/^spec\./, 'spec.jobTemplate.spec.') });
  }
  return errors;
}

function validateCronJob(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  const name = obj.metadata.name ?? '';
  if (name.length > maxNameLength) {
    errors.push(fieldInvalid('metadata.name', name, `must be no more than ${maxNameLength} characters`));
  }
  const spec = isObject(obj.spec) ? obj.spec : {};
  errors.push(
    ...validateSchedule(spec),
    ...validateCounts(spec, [
      'startingDeadlineSeconds',
      'successfulJobsHistoryLimit',
      'failedJobsHistoryLimit',
    ]),
    ...validateJobTemplate(spec),
  );
  if (!concurrencyPolicies.includes(spec.concurrencyPolicy)) {
    errors.push(fieldNotSupported('spec.concurrencyPolicy', spec.concurrencyPolicy, concurrencyPolicies));
  }
  return errors;
}

function lastScheduleCell(obj: KubeObject, now: number): string {
  const last = obj.status?.lastScheduleTime;
  return last ? age({ metadata: { creationTimestamp: last } } as KubeObject, now) : '<none>';
}

export const cronJobs: ResourceType = {
  group: 'batch',
  version: 'v1',
  kind: 'CronJob',
  listKind: 'CronJobList',
  plural: 'cronjobs',
  singular: 'cronjob',
  namespaced: true,
  shortNames: ['cj'],
  categories: ['all'],
  verbs: allVerbs,
  subresources: [{ name: 'status', kind: 'CronJob', verbs: ['get', 'patch', 'update'] }],
  model: 'V1CronJob',
  storage: 'cronjobs',
  statusSubresource: true,
  columns: [
    nameColumn,
    {
      name: 'Schedule',
      type: 'string',
      description: 'The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.',
      priority: 0,
    },
    {
      name: 'Timezone',
      type: 'string',
      description:
        'The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.',
      priority: 0,
    },
    {
      name: 'Suspend',
      type: 'boolean',
      description:
        'This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.',
      priority: 0,
    },
    {
      name: 'Active',
      type: 'integer',
      description: 'A list of pointers to currently running jobs.',
      priority: 0,
    },
    {
      name: 'Last Schedule',
      type: 'string',
      description: 'Information when was the last time the job was successfully scheduled.',
      priority: 0,
    },
    ageColumn,
    ...wideTemplateColumns,
  ],
  row: (obj, now) => {
    const containers: Record<string, any>[] = obj.spec?.jobTemplate?.spec?.template?.spec?.containers ?? [];
    return [
      obj.metadata.name,
      obj.spec?.schedule ?? '',
      obj.spec?.timeZone ?? '<none>',
      obj.spec?.suspend === true ? 'True' : 'False',
      Array.isArray(obj.status?.active) ? obj.status.active.length : 0,
      lastScheduleCell(obj, now),
      age(obj, now),
      containers.map((c) => c.name).join(','),
      containers.map((c) => c.image).join(','),
      selectorString(obj.spec?.jobTemplate?.spec?.selector),
    ];
  },
  fields: {},
  strategy: specStrategy(defaults, validateCronJob, () => []),
};

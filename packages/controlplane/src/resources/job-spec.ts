import { canonicalJson, fieldInvalid, fieldNotSupported, fieldRequired, type FieldError } from '@nodelet/api';
import { isObject } from '../object.js';
import { defaultTemplate, validateCounts, validateSelectorAndTemplate } from './pod-template.js';

/**
 * A Job's spec as upstream's pkg/apis/batch (v1 defaults.go, validation.go) has it — shared by Jobs and
 * the job template of CronJobs: defaults, field validation, and what an update may not change.
 */
export const controllerUidLabel = 'batch.kubernetes.io/controller-uid';
export const jobNameLabel = 'batch.kubernetes.io/job-name';
const legacyControllerUidLabel = 'controller-uid';
const legacyJobNameLabel = 'job-name';

const completionModes = ['NonIndexed', 'Indexed'];
const failurePolicyActions = ['FailJob', 'FailIndex', 'Ignore', 'Count'];
const exitCodeOperators = ['In', 'NotIn'];
const maxIndexedCompletions = 100_000;

/** SetDefaults_Job: both counts 1 when neither is set, backoffLimit 6, NonIndexed, not suspended. */
export function defaultJobSpec(spec: Record<string, any>): void {
  if (spec.completions === undefined && spec.parallelism === undefined) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  spec.parallelism ??= 1;
  spec.backoffLimit ??= 6;
  spec.completionMode ??= 'NonIndexed';
  spec.suspend ??= false;
  spec.podReplacementPolicy ??= isObject(spec.podFailurePolicy) ? 'Failed' : 'TerminatingOrFailed';
  defaultTemplate(spec);
}

/**
 * The generated selector (unless `manualSelector`): the Job's uid as `batch.kubernetes.io/controller-uid`,
 * and its name and uid as labels of the template, in the current and the legacy spelling.
 */
export function generateSelector(spec: Record<string, any>, name: string, uid: string): void {
  if (spec.manualSelector === true || !isObject(spec.template)) return;
  spec.template.metadata = isObject(spec.template.metadata) ? spec.template.metadata : {};
  const labels = isObject(spec.template.metadata.labels) ? spec.template.metadata.labels : {};
  for (const key of [legacyJobNameLabel, jobNameLabel]) labels[key] ??= name;
  for (const key of [legacyControllerUidLabel, controllerUidLabel]) labels[key] ??= uid;
  spec.template.metadata.labels = labels;
  spec.selector = isObject(spec.selector) ? spec.selector : {};
  spec.selector.matchLabels = isObject(spec.selector.matchLabels) ? spec.selector.matchLabels : {};
  spec.selector.matchLabels[controllerUidLabel] ??= uid;
}

/** ValidateGeneratedSelector: the labels generation put there are still there and right. */
export function validateGeneratedSelector(
  spec: Record<string, any>,
  name: string,
  uid: string,
): FieldError[] {
  if (spec.manualSelector === true || !isObject(spec.selector)) return [];
  const errors: FieldError[] = [];
  const labels = spec.template?.metadata?.labels ?? {};
  for (const [key, want] of [
    [legacyControllerUidLabel, uid],
    [legacyJobNameLabel, name],
  ] as const) {
    if (labels[key] !== want) {
      errors.push(fieldInvalid(`spec.template.metadata.labels[${key}]`, labels[key], `must be '${want}'`));
    }
  }
  if (spec.selector.matchLabels?.[controllerUidLabel] !== uid) {
    errors.push(fieldInvalid('spec.selector', spec.selector, '`selector` not auto-generated'));
  }
  return errors;
}

function validateFailurePolicy(spec: Record<string, any>): FieldError[] {
  const policy = spec.podFailurePolicy;
  if (policy === undefined || policy === null) return [];
  const path = 'spec.podFailurePolicy';
  const errors: FieldError[] = [];
  if (spec.template?.spec?.restartPolicy !== 'Never') {
    errors.push(
      fieldInvalid(
        'spec.template.spec.restartPolicy',
        spec.template?.spec?.restartPolicy,
        'only "Never" is supported when podFailurePolicy is specified',
      ),
    );
  }
  const rules: unknown[] = Array.isArray(policy.rules) ? policy.rules : [];
  rules.forEach((rule, i) => {
    const at = `${path}.rules[${i}]`;
    if (!isObject(rule)) return errors.push(fieldRequired(at));
    if (!failurePolicyActions.includes(rule.action)) {
      errors.push(fieldNotSupported(`${at}.action`, rule.action, failurePolicyActions));
    }
    const onCodes = rule.onExitCodes;
    const onConditions = rule.onPodConditions;
    const hasCodes = isObject(onCodes);
    const hasConditions = Array.isArray(onConditions);
    if (hasCodes && hasConditions) {
      errors.push(fieldInvalid(at, rule, 'specifying both OnExitCodes and OnPodConditions is not supported'));
    } else if (!hasCodes && !hasConditions) {
      errors.push(fieldInvalid(at, rule, 'specifying one of OnExitCodes and OnPodConditions is required'));
    }
    if (isObject(onCodes)) {
      if (!exitCodeOperators.includes(onCodes.operator)) {
        errors.push(fieldNotSupported(`${at}.onExitCodes.operator`, onCodes.operator, exitCodeOperators));
      }
      const values: unknown[] = Array.isArray(onCodes.values) ? onCodes.values : [];
      if (values.length === 0) errors.push(fieldRequired(`${at}.onExitCodes.values`));
      values.forEach((v, j) => {
        if (v === 0 && onCodes.operator === 'In') {
          errors.push(fieldInvalid(`${at}.onExitCodes.values[${j}]`, v, 'must not be 0 for the In operator'));
        }
      });
    }
  });
  return errors;
}

/** ValidateJobSpec: counts, mode, the selector and a template that restarts OnFailure or Never. */
export function validateJobSpec(spec: Record<string, any>): FieldError[] {
  const errors = validateCounts(spec, [
    'parallelism',
    'completions',
    'activeDeadlineSeconds',
    'backoffLimit',
    'ttlSecondsAfterFinished',
  ]);
  if (typeof spec.activeDeadlineSeconds === 'number' && spec.activeDeadlineSeconds === 0) {
    errors.push(fieldInvalid('spec.activeDeadlineSeconds', 0, 'must be greater than 0'));
  }
  if (spec.completionMode !== undefined && !completionModes.includes(spec.completionMode)) {
    errors.push(fieldNotSupported('spec.completionMode', spec.completionMode, completionModes));
  }
  if (spec.completionMode === 'Indexed') {
    if (typeof spec.completions !== 'number') {
      errors.push(fieldRequired('spec.completions', 'when completion mode is Indexed'));
    } else if (spec.completions > maxIndexedCompletions) {
      errors.push(
        fieldInvalid(
          'spec.completions',
          spec.completions,
          `must be less than or equal to ${maxIndexedCompletions}`,
        ),
      );
    }
  }
  errors.push(
    ...validateSelectorAndTemplate(spec, 'job', {
      restartPolicies: ['OnFailure', 'Never'],
      activeDeadlineSeconds: true,
    }),
    ...validateFailurePolicy(spec),
  );
  return errors;
}

const immutable = ['selector', 'completionMode', 'podFailurePolicy'] as const;

/** ValidateJobSpecUpdate: the selector, mode, failure policy, completions and (unless suspended) template. */
export function validateJobSpecUpdate(spec: Record<string, any>, old: Record<string, any>): FieldError[] {
  const errors: FieldError[] = [];
  const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);
  for (const f of immutable) {
    if (!same(spec[f], old[f])) errors.push(fieldInvalid(`spec.${f}`, spec[f], 'field is immutable'));
  }
  if (!same(spec.completions, old.completions)) {
    errors.push(fieldInvalid('spec.completions', spec.completions, 'field is immutable'));
  }
  if (!same(spec.template, old.template) && !(old.suspend === true && spec.suspend === true)) {
    errors.push(fieldInvalid('spec.template', spec.template, 'field is immutable'));
  }
  return errors;
}

/** A CronJob's job template may not carry a selector unless it selects manually. */
export function validateTemplateSelector(spec: Record<string, any>): FieldError[] {
  if (spec.manualSelector === true || spec.selector === undefined || spec.selector === null) return [];
  return [fieldInvalid('spec.selector', spec.selector, '`selector` will be auto-generated')];
}

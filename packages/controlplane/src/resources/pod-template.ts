import {
  applyPodDefaults,
  canonicalJson,
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  type FieldError,
  type Pod,
  validatePod,
} from '@nodelet/api';
import { isObject, type KubeObject } from '../object.js';
import type { Strategy } from '../apiserver/resource-type.js';
import { labelSelectorFromObject, matchLabels } from '../apiserver/selectors.js';
import { validateLabels, validateObjectMetaUpdate } from './meta-validation.js';

/**
 * What the apps/v1 kinds that stamp out pods share (upstream's pkg/apis/apps/validation and
 * pkg/apis/apps/v1/defaults.go): a label selector that must match the pod template's labels, a template
 * defaulted and validated like a pod that must restart Always, and generation bumped on spec changes.
 */

/** The pod template's defaults: those of a pod, on `spec.template.spec`. */
export function defaultTemplate(spec: Record<string, any>): void {
  if (!isObject(spec.template) || !isObject(spec.template.spec)) return;
  const pod = applyPodDefaults({ spec: spec.template.spec } as Pod);
  spec.template.spec = pod.spec;
}

/** Go's `%#v` of a label map, the value upstream prints when the selector does not match. */
function goLabelMap(labels: unknown): string {
  if (!isObject(labels)) return 'map[string]string(nil)';
  const entries = Object.keys(labels)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(labels[k])}`);
  return `map[string]string{${entries.join(', ')}}`;
}

/** What a kind allows of its pod template: apps/v1 restarts Always; a Job OnFailure or Never, with a deadline. */
export interface TemplateRules {
  restartPolicies: readonly string[];
  activeDeadlineSeconds: boolean;
}

const appsTemplateRules: TemplateRules = { restartPolicies: ['Always'], activeDeadlineSeconds: false };

/**
 * `spec.selector` and `spec.template` of a Deployment, ReplicaSet or Job: the selector required and not
 * empty, the template's labels matching it, the template a valid pod with a restart policy `rules` allow.
 */
export function validateSelectorAndTemplate(
  spec: Record<string, any>,
  kind: string,
  rules: TemplateRules = appsTemplateRules,
): FieldError[] {
  const errors: FieldError[] = [];
  const selector = spec.selector;
  if (!isObject(selector)) {
    errors.push(fieldRequired('spec.selector'));
  } else {
    errors.push(...validateLabels(selector.matchLabels, 'spec.selector.matchLabels'));
    const count =
      Object.keys(isObject(selector.matchLabels) ? selector.matchLabels : {}).length +
      (Array.isArray(selector.matchExpressions) ? selector.matchExpressions.length : 0);
    if (count === 0) {
      errors.push(fieldInvalid('spec.selector', selector, `empty selector is invalid for ${kind}`));
    }
  }
  const template = spec.template;
  if (!isObject(template)) {
    errors.push(fieldRequired('spec.template'));
    return errors;
  }
  const labels = isObject(template.metadata) ? template.metadata.labels : undefined;
  if (isObject(selector) && !matchLabels(labelSelectorFromObject(selector), labels)) {
    errors.push({
      field: 'spec.template.metadata.labels',
      message: `Invalid value: ${goLabelMap(labels)}: \`selector\` does not match template \`labels\``,
    });
  }
  // The template validates as a pod would; a name is not part of a template.
  const meta = isObject(template.metadata) ? template.metadata : {};
  const asPod = { metadata: { ...meta, name: 'template' }, spec: template.spec } as unknown as Pod;
  for (const e of validatePod(asPod)) {
    if (e.field === 'metadata.name' || e.field === 'metadata.namespace') continue;
    errors.push({ ...e, field: `spec.template.${e.field}` });
  }
  const podSpec = isObject(template.spec) ? template.spec : {};
  if (!rules.restartPolicies.includes(podSpec.restartPolicy ?? 'Always')) {
    errors.push(
      fieldNotSupported('spec.template.spec.restartPolicy', podSpec.restartPolicy, rules.restartPolicies),
    );
  }
  if (podSpec.activeDeadlineSeconds !== undefined && !rules.activeDeadlineSeconds) {
    errors.push(
      fieldForbidden(
        'spec.template.spec.activeDeadlineSeconds',
        'activeDeadlineSeconds in ReplicaSet is not Supported',
      ),
    );
  }
  return errors;
}

/** `replicas` and `minReadySeconds` are non-negative. */
export function validateCounts(spec: Record<string, any>, fields: readonly string[]): FieldError[] {
  const errors: FieldError[] = [];
  for (const f of fields) {
    const v = spec[f];
    if (typeof v === 'number' && v < 0) {
      errors.push(fieldInvalid(`spec.${f}`, v, 'must be greater than or equal to 0'));
    }
  }
  return errors;
}

/** apps/v1 selectors are immutable. */
export function validateSelectorUpdate(obj: KubeObject, old: KubeObject): FieldError[] {
  if (canonicalJson(obj.spec?.selector ?? null) === canonicalJson(old.spec?.selector ?? null)) return [];
  return [fieldInvalid('spec.selector', obj.spec?.selector, 'field is immutable')];
}

/** A new generation when the spec changes (and, for Deployments, the annotations), as upstream's strategies. */
export function bumpGeneration(obj: KubeObject, old: KubeObject, withAnnotations: boolean): void {
  const changed =
    canonicalJson(obj.spec ?? null) !== canonicalJson(old.spec ?? null) ||
    (withAnnotations &&
      canonicalJson(obj.metadata.annotations ?? {}) !== canonicalJson(old.metadata.annotations ?? {}));
  obj.metadata.generation = (old.metadata.generation ?? 1) + (changed ? 1 : 0);
}

/** The wide columns' cells: container names, images, and the selector as kubectl prints it. */
export function templateCells(obj: KubeObject): [string, string, string] {
  const containers: Record<string, any>[] = Array.isArray(obj.spec?.template?.spec?.containers)
    ? obj.spec.template.spec.containers
    : [];
  return [
    containers.map((c) => c.name).join(','),
    containers.map((c) => c.image).join(','),
    selectorString(obj.spec?.selector),
  ];
}

/** A LabelSelector as apimachinery's `Selector.String()`: requirements sorted by key. */
export function selectorString(selector: unknown): string {
  if (!isObject(selector)) return '<none>';
  const parts: [string, string][] = [];
  for (const [k, v] of Object.entries(isObject(selector.matchLabels) ? selector.matchLabels : {})) {
    parts.push([k, `${k}=${v}`]);
  }
  for (const e of Array.isArray(selector.matchExpressions) ? selector.matchExpressions : []) {
    const values = [...((e.values as string[]) ?? [])].sort().join(',');
    const text =
      e.operator === 'In'
        ? `${e.key} in (${values})`
        : e.operator === 'NotIn'
          ? `${e.key} notin (${values})`
          : e.operator === 'Exists'
            ? `${e.key}`
            : `!${e.key}`;
    parts.push([e.key, text]);
  }
  if (parts.length === 0) return '<none>';
  return parts
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, t]) => t)
    .join(',');
}

/**
 * The strategy of a kind with a spec and a `status` subresource: defaults on every write, an initial
 * status and generation 1 on create, generation bumped by spec changes, `updateErrors` on top of
 * `validate` (batch/v1 kinds use it as it is).
 */
export function specStrategy(
  defaults: (obj: KubeObject) => void,
  validate: (obj: KubeObject) => FieldError[],
  updateErrors: (obj: KubeObject, old: KubeObject) => FieldError[],
  initialStatus: () => Record<string, unknown> = () => ({}),
): Strategy {
  return {
    prepareForCreate(obj) {
      defaults(obj);
      obj.status = initialStatus();
      obj.metadata.generation = 1;
    },
    validate: (obj) => validate(obj),
    prepareForUpdate(obj, old) {
      defaults(obj);
      bumpGeneration(obj, old, false);
    },
    validateUpdate: (obj, old) => [
      ...validate(obj),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
      ...updateErrors(obj, old),
    ],
  };
}

/**
 * The strategy of an apps/v1 kind that stamps out pods: specStrategy with the selector immutable and
 * the kind's own spec update rules.
 */
export function podTemplateStrategy(
  defaults: (obj: KubeObject) => void,
  validate: (obj: KubeObject) => FieldError[],
  initialStatus: () => Record<string, unknown>,
  validateSpecUpdate: (obj: KubeObject, old: KubeObject) => FieldError[] = () => [],
): Strategy {
  return specStrategy(
    defaults,
    validate,
    (obj, old) => [...validateSelectorUpdate(obj, old), ...validateSpecUpdate(obj, old)],
    initialStatus,
  );
}

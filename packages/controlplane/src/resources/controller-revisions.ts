import { canonicalJson, fieldInvalid, fieldRequired, type FieldError } from '@nodelet/api';
import { ageColumn, nameColumn } from '../apiserver/resource-type.js';
import type { KubeObject } from '../object.js';
import { age } from './printers.js';
import { nameRules, validateObjectMeta, validateObjectMetaUpdate } from './meta-validation.js';
import { base } from './resource-base.js';

/**
 * apps/v1 ControllerRevisions (upstream's pkg/registry/apps/controllerrevision): an immutable snapshot of a
 * DaemonSet's or StatefulSet's pod template (`data`) with its `revision` number. `kubectl get
 * controllerrevisions` prints NAME CONTROLLER REVISION AGE, the controller as `daemonset.apps/<name>`.
 */
function validateRevision(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  const revision = obj.revision;
  if (revision === undefined) errors.push(fieldRequired('revision'));
  else if (typeof revision !== 'number' || !Number.isInteger(revision) || revision < 0)
    errors.push(fieldInvalid('revision', revision, 'must be greater than or equal to 0'));
  return errors;
}

/** `daemonset.apps/fluentd`: the controller reference as kubectl's formatResourceName. */
function controllerCell(obj: KubeObject): string {
  const ref = (obj.metadata.ownerReferences ?? []).find((r: { controller?: boolean }) => r.controller);
  if (!ref) return '<none>';
  const group = String(ref.apiVersion).includes('/') ? String(ref.apiVersion).split('/')[0] : '';
  return `${String(ref.kind).toLowerCase()}${group ? `.${group}` : ''}/${ref.name}`;
}

export const controllerRevisions = base({
  group: 'apps',
  version: 'v1',
  kind: 'ControllerRevision',
  plural: 'controllerrevisions',
  singular: 'controllerrevision',
  namespaced: true,
  model: 'V1ControllerRevision',
  columns: [
    nameColumn,
    { name: 'Controller', type: 'string', description: 'Controller of the object.', priority: 0 },
    { name: 'Revision', type: 'integer', description: 'Revision of the ControllerRevision.', priority: 0 },
    ageColumn,
  ],
  row: (obj, now) => [obj.metadata.name, controllerCell(obj), obj.revision, age(obj, now)],
  strategy: {
    validate: (obj) => validateRevision(obj),
    validateUpdate: (obj, old) => {
      const errors = [...validateRevision(obj), ...validateObjectMetaUpdate(obj.metadata, old.metadata)];
      const data = (o: KubeObject) => canonicalJson(o.data ?? null);
      if (data(obj) !== data(old)) errors.push(fieldInvalid('data', obj.data, 'field is immutable'));
      return errors;
    },
  },
});

/** Leases (coordination.k8s.io), as node heartbeats use them. */
import { fieldInvalid, type FieldError } from '@nodelet/api';
import { isObject, type KubeObject } from '../object.js';
import { ageColumn, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { age } from './printers.js';
import { nameRules, validateObjectMeta, validateObjectMetaUpdate } from './meta-validation.js';
import { base } from './resource-base.js';

export const leases: ResourceType = base({
  group: 'coordination.k8s.io',
  version: 'v1',
  kind: 'Lease',
  plural: 'leases',
  singular: 'lease',
  namespaced: true,
  model: 'V1Lease',
  columns: [
    nameColumn,
    { name: 'Holder', type: 'string', description: 'The holder of the lease.', priority: 0 },
    ageColumn,
  ],
  row: (obj, now) => [obj.metadata.name, obj.spec?.holderIdentity ?? '', age(obj, now)],
  strategy: {
    validate: (obj) => [
      ...validateObjectMeta(obj.metadata, nameRules.subdomain, true),
      ...validateLease(obj),
    ],
    validateUpdate: (obj, old) => [
      ...validateObjectMeta(obj.metadata, nameRules.subdomain, true),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
      ...validateLease(obj),
    ],
  },
});

function validateLease(obj: KubeObject): FieldError[] {
  const errors: FieldError[] = [];
  const spec = isObject(obj.spec) ? obj.spec : {};
  for (const f of ['leaseDurationSeconds', 'leaseTransitions']) {
    if (typeof spec[f] === 'number' && spec[f] < (f === 'leaseDurationSeconds' ? 1 : 0)) {
      errors.push(
        fieldInvalid(
          `spec.${f}`,
          spec[f],
          `must be greater than ${f === 'leaseDurationSeconds' ? 0 : 'or equal to 0'}`,
        ),
      );
    }
  }
  return errors;
}

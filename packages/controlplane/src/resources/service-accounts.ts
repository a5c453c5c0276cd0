/** ServiceAccounts. */
import { ageColumn, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { age } from './printers.js';
import { nameRules } from './meta-validation.js';
import { base, metaStrategy } from './resource-base.js';

export const serviceAccounts: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'ServiceAccount',
  plural: 'serviceaccounts',
  singular: 'serviceaccount',
  namespaced: true,
  model: 'V1ServiceAccount',
  shortNames: ['sa'],
  subresources: [
    { name: 'token', kind: 'TokenRequest', group: 'authentication.k8s.io', version: 'v1', verbs: ['create'] },
  ],
  columns: [
    nameColumn,
    {
      name: 'Secrets',
      type: 'string',
      description:
        'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.',
      priority: 0,
    },
    ageColumn,
  ],
  row: (obj, now) => [obj.metadata.name, (obj.secrets ?? []).length, age(obj, now)],
  strategy: metaStrategy(nameRules.subdomain, true),
});

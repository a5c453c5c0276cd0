/** EndpointSlices (discovery.k8s.io): address types, endpoints and ports. */
import {
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  type FieldError,
  portNameErrors,
} from '@nodelet/api';
import { type KubeObject } from '../object.js';
import { ageColumn, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { age } from './printers.js';
import { nameRules, validateObjectMeta, validateObjectMetaUpdate } from './meta-validation.js';
import { base } from './resource-base.js';

const addressTypes = ['IPv4', 'IPv6', 'FQDN'];

function validateEndpointSlice(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  if (!addressTypes.includes(obj.addressType)) {
    if (obj.addressType === undefined) errors.push(fieldRequired('addressType'));
    else errors.push(fieldNotSupported('addressType', obj.addressType, addressTypes));
  }
  const endpoints = Array.isArray(obj.endpoints) ? obj.endpoints : [];
  if (endpoints.length > 1000)
    errors.push({
      field: 'endpoints',
      message: `Too many: ${endpoints.length}: must have at most 1000 items`,
    });
  endpoints.forEach((e: any, i: number) => {
    const addresses = Array.isArray(e?.addresses) ? e.addresses : [];
    if (addresses.length === 0)
      errors.push(fieldRequired(`endpoints[${i}].addresses`, 'must contain at least 1 address'));
    else if (addresses.length > 100)
      errors.push({ field: `endpoints[${i}].addresses`, message: 'Too many: must have at most 100 items' });
  });
  const ports = Array.isArray(obj.ports) ? obj.ports : [];
  if (ports.length > 20000)
    errors.push({ field: 'ports', message: 'Too many: must have at most 20000 items' });
  ports.forEach((p: any, i: number) => {
    if (typeof p?.name === 'string' && p.name !== '') {
      for (const m of portNameErrors(p.name)) errors.push(fieldInvalid(`ports[${i}].name`, p.name, m));
    }
  });
  return errors;
}

function endpointSliceEndpoints(obj: KubeObject): string {
  const addresses: string[] = [];
  for (const e of obj.endpoints ?? []) for (const a of e?.addresses ?? []) addresses.push(a);
  if (addresses.length === 0) return '<unset>';
  const shown = addresses.slice(0, 3).join(',');
  return addresses.length > 3 ? `${shown} + ${addresses.length - 3} more...` : shown;
}

export const endpointSlices: ResourceType = base({
  group: 'discovery.k8s.io',
  version: 'v1',
  kind: 'EndpointSlice',
  plural: 'endpointslices',
  singular: 'endpointslice',
  namespaced: true,
  model: 'V1EndpointSlice',
  columns: [
    nameColumn,
    {
      name: 'AddressType',
      type: 'string',
      description: 'addressType specifies the type of address carried by this EndpointSlice.',
      priority: 0,
    },
    {
      name: 'Ports',
      type: 'string',
      description: 'ports specifies the list of network ports exposed by each endpoint in this slice.',
      priority: 0,
    },
    {
      name: 'Endpoints',
      type: 'string',
      description: 'endpoints is a list of unique endpoints in this slice.',
      priority: 0,
    },
    ageColumn,
  ],
  row: (obj, now) => {
    const ports = (obj.ports ?? []).map((p: any) => (p?.port === undefined ? '<unset>' : String(p.port)));
    return [
      obj.metadata.name,
      obj.addressType ?? '',
      ports.length ? ports.join(',') : '<unset>',
      endpointSliceEndpoints(obj),
      age(obj, now),
    ];
  },
  strategy: {
    validate: validateEndpointSlice,
    validateUpdate: (obj, old) => {
      const errors = [...validateEndpointSlice(obj), ...validateObjectMetaUpdate(obj.metadata, old.metadata)];
      if (obj.addressType !== old.addressType)
        errors.push(fieldInvalid('addressType', obj.addressType, 'field is immutable'));
      return errors;
    },
  },
});

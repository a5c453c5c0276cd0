import {
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  type FieldError,
  portNameErrors,
} from '@nodelet/api';
import { isObject, type KubeObject } from '../object.js';
import {
  ageColumn,
  allVerbs,
  nameColumn,
  type ResourceType,
  type TableColumn,
} from '../apiserver/resource-type.js';
import { age, since } from './printers.js';
import { nameRules, validateObjectMeta, validateObjectMetaUpdate } from './meta-validation.js';

/**
 * The kinds whose strategy is mostly metadata: namespaces, nodes, configmaps, secrets, serviceaccounts,
 * leases and endpointslices. Columns follow kubectl's printers for each.
 */
export function base(
  t: Pick<ResourceType, 'group' | 'version' | 'kind' | 'plural' | 'singular' | 'namespaced' | 'model'> &
    Partial<ResourceType>,
): ResourceType {
  return {
    listKind: `${t.kind}List`,
    shortNames: [],
    categories: [],
    verbs: allVerbs,
    subresources: [],
    storage: t.plural,
    statusSubresource: false,
    columns: [nameColumn, ageColumn],
    row: (obj, now) => [obj.metadata.name, age(obj, now)],
    fields: {},
    strategy: {},
    ...t,
  };
}

function metaStrategy(rule: (name: string) => string[], namespaced: boolean) {
  return {
    validate: (obj: KubeObject) => validateObjectMeta(obj.metadata, rule, namespaced),
    validateUpdate: (obj: KubeObject, old: KubeObject) => [
      ...validateObjectMeta(obj.metadata, rule, namespaced),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
    ],
  };
}

// ----- namespaces -------------------------------------------------------------------------------------

/** Namespaces that cannot be deleted. */
export const immortalNamespaces = ['default', 'kube-system', 'kube-public'];

export const namespaces: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'Namespace',
  plural: 'namespaces',
  singular: 'namespace',
  namespaced: false,
  model: 'V1Namespace',
  shortNames: ['ns'],
  statusSubresource: true,
  subresources: [
    { name: 'status', kind: 'Namespace', verbs: ['get', 'patch', 'update'] },
    { name: 'finalize', kind: 'Namespace', verbs: ['update'] },
  ],
  columns: [
    nameColumn,
    { name: 'Status', type: 'string', description: 'The status of the namespace', priority: 0 },
    ageColumn,
  ],
  row: (obj, now) => [obj.metadata.name, obj.status?.phase ?? '', age(obj, now)],
  fields: { 'status.phase': (o) => o.status?.phase ?? '' },
  strategy: {
    prepareForCreate(obj) {
      obj.spec = { ...(isObject(obj.spec) ? obj.spec : {}), finalizers: ['kubernetes'] };
      obj.status = { phase: 'Active' };
      namespaceNameLabel(obj);
    },
    ...metaStrategy(nameRules.label, false),
    prepareForUpdate(obj, old) {
      obj.status = old.status;
      obj.spec = old.spec;
      namespaceNameLabel(obj);
    },
  },
});

function namespaceNameLabel(obj: KubeObject): void {
  obj.metadata.labels = { ...(obj.metadata.labels ?? {}), 'kubernetes.io/metadata.name': obj.metadata.name! };
}

// ----- nodes ------------------------------------------------------------------------------------------

const taintEffects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

function nodeStatusCell(node: KubeObject): string {
  const ready = (node.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
  const parts = [
    ready
      ? ready.status === 'True'
        ? 'Ready'
        : ready.status === 'False'
          ? 'NotReady'
          : 'Unknown'
      : 'Unknown',
  ];
  if (node.spec?.unschedulable) parts.push('SchedulingDisabled');
  return parts.join(',');
}

function nodeRoles(node: KubeObject): string {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(node.metadata.labels ?? {})) {
    if (k.startsWith('node-role.kubernetes.io/')) roles.add(k.slice('node-role.kubernetes.io/'.length));
    else if (k === 'kubernetes.io/role' && v) roles.add(v);
  }
  return roles.size ? [...roles].filter(Boolean).sort().join(',') : '<none>';
}

function nodeAddress(node: KubeObject, type: string): string {
  return (node.status?.addresses ?? []).find((a: any) => a.type === type)?.address ?? '<none>';
}

export const nodes: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'Node',
  plural: 'nodes',
  singular: 'node',
  namespaced: false,
  model: 'V1Node',
  shortNames: ['no'],
  statusSubresource: true,
  subresources: [{ name: 'status', kind: 'Node', verbs: ['get', 'patch', 'update'] }],
  columns: [
    nameColumn,
    { name: 'Status', type: 'string', description: 'The status of the node', priority: 0 },
    { name: 'Roles', type: 'string', description: 'The roles of the node', priority: 0 },
    ageColumn,
    { name: 'Version', type: 'string', description: 'Kubelet Version reported by the node.', priority: 0 },
    {
      name: 'Internal-IP',
      type: 'string',
      description: 'List of addresses reachable to the node. Queried from cloud provider, if available.',
      priority: 1,
    },
    {
      name: 'External-IP',
      type: 'string',
      description: 'List of addresses reachable to the node. Queried from cloud provider, if available.',
      priority: 1,
    },
    {
      name: 'OS-Image',
      type: 'string',
      description: 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).',
      priority: 1,
    },
    {
      name: 'Kernel-Version',
      type: 'string',
      description: "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
      priority: 1,
    },
    {
      name: 'Container-Runtime',
      type: 'string',
      description:
        'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).',
      priority: 1,
    },
  ],
  row: (obj, now) => {
    const info = obj.status?.nodeInfo ?? {};
    return [
      obj.metadata.name,
      nodeStatusCell(obj),
      nodeRoles(obj),
      age(obj, now),
      info.kubeletVersion ?? '',
      nodeAddress(obj, 'InternalIP'),
      nodeAddress(obj, 'ExternalIP'),
      info.osImage || '<unknown>',
      info.kernelVersion || '<unknown>',
      info.containerRuntimeVersion || '<unknown>',
    ];
  },
  fields: { 'spec.unschedulable': (o) => String(o.spec?.unschedulable === true) },
  strategy: {
    // Nodes may set status on create: a kubelet registers its node with its status.
    validate: (obj) => [
      ...validateObjectMeta(obj.metadata, nameRules.subdomain, false),
      ...validateTaints(obj),
    ],
    prepareForUpdate(obj, old) {
      obj.status = old.status;
    },
    validateUpdate: (obj, old) => [
      ...validateObjectMeta(obj.metadata, nameRules.subdomain, false),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
      ...validateTaints(obj),
    ],
  },
});

function validateTaints(node: KubeObject): FieldError[] {
  const errors: FieldError[] = [];
  const taints = Array.isArray(node.spec?.taints) ? node.spec.taints : [];
  taints.forEach((t: any, i: number) => {
    if (!isObject(t)) return;
    if (typeof t.key !== 'string' || t.key === '') errors.push(fieldRequired(`spec.taints[${i}].key`));
    if (!taintEffects.includes(t.effect))
      errors.push(fieldNotSupported(`spec.taints[${i}].effect`, t.effect, taintEffects));
  });
  return errors;
}

// ----- configmaps and secrets -------------------------------------------------------------------------

const configKey = /^[-._a-zA-Z0-9]+$/;

function validateKeys(map: unknown, path: string, seen: Set<string>): FieldError[] {
  const errors: FieldError[] = [];
  for (const key of Object.keys(isObject(map) ? map : {})) {
    if (key.length > 253) errors.push(fieldInvalid(path, key, 'must be no more than 253 characters'));
    if (!configKey.test(key)) {
      errors.push(
        fieldInvalid(
          path,
          key,
          "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or " +
            "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
        ),
      );
    } else if (key === '.' || key === '..') errors.push(fieldInvalid(path, key, `must not be '${key}'`));
    if (seen.has(key)) errors.push(fieldInvalid(path, key, 'duplicate of key present in data or binaryData'));
    seen.add(key);
  }
  return errors;
}

const maxDataBytes = 1024 * 1024;

function dataSize(...maps: unknown[]): number {
  let n = 0;
  for (const m of maps) {
    for (const [k, v] of Object.entries(isObject(m) ? m : {}))
      n += k.length + (typeof v === 'string' ? v.length : 0);
  }
  return n;
}

function immutableData(obj: KubeObject, old: KubeObject, fields: string[]): FieldError[] {
  const errors: FieldError[] = [];
  if (old.immutable === true) {
    if (obj.immutable !== true)
      errors.push(fieldForbidden('immutable', 'field is immutable when `immutable` is set'));
    for (const f of fields) {
      if (JSON.stringify(obj[f] ?? {}) !== JSON.stringify(old[f] ?? {})) {
        errors.push(fieldForbidden(f, 'field is immutable when `immutable` is set'));
      }
    }
  }
  return errors;
}

function validateConfigMap(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  const seen = new Set<string>();
  errors.push(...validateKeys(obj.data, 'data', seen), ...validateKeys(obj.binaryData, 'binaryData', seen));
  if (dataSize(obj.data, obj.binaryData) > maxDataBytes) {
    errors.push({ field: '', message: `Too long: must have at most ${maxDataBytes} bytes` });
  }
  return errors;
}

export const configMaps: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  plural: 'configmaps',
  singular: 'configmap',
  namespaced: true,
  model: 'V1ConfigMap',
  shortNames: ['cm'],
  columns: [
    nameColumn,
    { name: 'Data', type: 'integer', description: 'Data contains the configuration data.', priority: 0 },
    ageColumn,
  ],
  row: (obj, now) => [
    obj.metadata.name,
    Object.keys(obj.data ?? {}).length + Object.keys(obj.binaryData ?? {}).length,
    age(obj, now),
  ],
  strategy: {
    validate: validateConfigMap,
    validateUpdate: (obj, old) => [
      ...validateConfigMap(obj),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
      ...immutableData(obj, old, ['data', 'binaryData']),
    ],
  },
});

const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** `stringData` folded into `data` (base64), as upstream's Secret conversion does on every write. */
function foldStringData(obj: KubeObject): void {
  if (isObject(obj.stringData)) {
    const data: Record<string, string> = isObject(obj.data) ? obj.data : {};
    for (const [k, v] of Object.entries(obj.stringData)) {
      if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
    }
    obj.data = data;
  }
  delete obj.stringData;
}

function validateSecret(obj: KubeObject): FieldError[] {
  const errors = validateObjectMeta(obj.metadata, nameRules.subdomain, true);
  errors.push(...validateKeys(obj.data, 'data', new Set()));
  if (dataSize(obj.data) > maxDataBytes) {
    errors.push({ field: 'data', message: `Too long: may not be more than ${maxDataBytes} bytes` });
  }
  return errors;
}

export const secrets: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'Secret',
  plural: 'secrets',
  singular: 'secret',
  namespaced: true,
  model: 'V1Secret',
  columns: [
    nameColumn,
    {
      name: 'Type',
      type: 'string',
      description: 'Used to facilitate programmatic handling of secret data.',
      priority: 0,
    },
    { name: 'Data', type: 'integer', description: 'Data contains the secret data.', priority: 0 },
    ageColumn,
  ],
  row: (obj, now) => [
    obj.metadata.name,
    obj.type ?? 'Opaque',
    Object.keys(obj.data ?? {}).length,
    age(obj, now),
  ],
  fields: { type: (o) => o.type ?? '' },
  decodeError: (obj) => secretDecodingError(obj),
  strategy: {
    prepareForCreate(obj) {
      obj.type ??= 'Opaque';
      foldStringData(obj);
    },
    validate: validateSecret,
    prepareForUpdate(obj) {
      obj.type ??= 'Opaque';
      foldStringData(obj);
    },
    validateUpdate: (obj, old) => {
      const errors = [...validateSecret(obj), ...validateObjectMetaUpdate(obj.metadata, old.metadata)];
      if ((obj.type ?? 'Opaque') !== (old.type ?? 'Opaque'))
        errors.push(fieldInvalid('type', obj.type, 'field is immutable'));
      errors.push(...immutableData(obj, old, ['data']));
      return errors;
    },
  },
});

/** Secret `data` values are base64 (Go decodes them into []byte); anything else is a decoding error. */
export function secretDecodingError(obj: KubeObject): string | undefined {
  for (const [k, v] of Object.entries(isObject(obj.data) ? obj.data : {})) {
    if (typeof v === 'string' && !base64.test(v)) return `data[${JSON.stringify(k)}]: illegal base64 data`;
  }
  return undefined;
}

// ----- serviceaccounts --------------------------------------------------------------------------------

export const serviceAccounts: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'ServiceAccount',
  plural: 'serviceaccounts',
  singular: 'serviceaccount',
  namespaced: true,
  model: 'V1ServiceAccount',
  shortNames: ['sa'],
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

// ----- leases -----------------------------------------------------------------------------------------

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

// ----- endpointslices ---------------------------------------------------------------------------------

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

// ----- events -----------------------------------------------------------------------------------------

const eventColumns: TableColumn[] = [
  {
    name: 'Last Seen',
    type: 'string',
    description: 'Time when last event from the series was seen.',
    priority: 0,
  },
  {
    name: 'Type',
    type: 'string',
    description: 'Type of this event (Normal, Warning), new types could be added in the future.',
    priority: 0,
  },
  {
    name: 'Reason',
    type: 'string',
    description:
      "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    priority: 0,
  },
  { name: 'Object', type: 'string', description: 'The object that this event is about.', priority: 0 },
  { name: 'Subobject', type: 'string', description: 'The subobject that this event is about.', priority: 1 },
  { name: 'Source', type: 'string', description: 'The component reporting this event.', priority: 1 },
  {
    name: 'Message',
    type: 'string',
    description: 'A human-readable description of the status of this operation.',
    priority: 0,
  },
  {
    name: 'First Seen',
    type: 'string',
    description: 'The time at which the event was first recorded.',
    priority: 1,
  },
  { name: 'Count', type: 'string', description: 'The number of times this event has occurred.', priority: 1 },
  {
    name: 'Name',
    type: 'string',
    format: 'name',
    description: 'Name must be unique within a namespace.',
    priority: 1,
  },
];

function eventRow(e: KubeObject, now: number): unknown[] {
  const first = e.firstTimestamp ?? e.eventTime;
  const last = e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? first;
  const o = e.involvedObject ?? {};
  const source = e.source?.component
    ? `${e.source.component}${e.source.host ? `, ${e.source.host}` : ''}`
    : e.reportingComponent || '';
  const count = e.series?.count ?? e.count ?? 1;
  return [
    since(last, now),
    e.type ?? '',
    e.reason ?? '',
    `${String(o.kind ?? '').toLowerCase()}/${o.name ?? ''}`,
    o.fieldPath ?? '',
    source,
    (e.message ?? '').trim(),
    since(first, now),
    String(count),
    e.metadata.name,
  ];
}

function validateEvent(e: KubeObject): FieldError[] {
  const errors = validateObjectMeta(e.metadata, nameRules.pathSegment, true);
  const o = isObject(e.involvedObject) ? e.involvedObject : undefined;
  if (o && typeof o.namespace === 'string' && o.namespace !== '' && o.namespace !== e.metadata.namespace) {
    errors.push(fieldInvalid('involvedObject.namespace', o.namespace, 'does not match event.namespace'));
  }
  if (e.type !== undefined && e.type !== 'Normal' && e.type !== 'Warning') {
    errors.push(fieldNotSupported('type', e.type, ['Normal', 'Warning']));
  }
  return errors;
}

export const coreEvents: ResourceType = base({
  group: '',
  version: 'v1',
  kind: 'Event',
  plural: 'events',
  singular: 'event',
  namespaced: true,
  model: 'CoreV1Event',
  shortNames: ['ev'],
  columns: eventColumns,
  row: eventRow,
  fields: {
    'involvedObject.kind': (o) => o.involvedObject?.kind ?? '',
    'involvedObject.namespace': (o) => o.involvedObject?.namespace ?? '',
    'involvedObject.name': (o) => o.involvedObject?.name ?? '',
    'involvedObject.uid': (o) => o.involvedObject?.uid ?? '',
    'involvedObject.apiVersion': (o) => o.involvedObject?.apiVersion ?? '',
    'involvedObject.resourceVersion': (o) => o.involvedObject?.resourceVersion ?? '',
    'involvedObject.fieldPath': (o) => o.involvedObject?.fieldPath ?? '',
    reason: (o) => o.reason ?? '',
    reportingComponent: (o) => o.reportingComponent ?? '',
    source: (o) => o.source?.component ?? '',
    type: (o) => o.type ?? '',
  },
  strategy: {
    validate: validateEvent,
    validateUpdate: (obj, old) => [
      ...validateEvent(obj),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
    ],
  },
});

/** events.k8s.io/v1 Event from the stored core/v1 Event. */
export function eventToEventsV1(e: KubeObject): KubeObject {
  const out: KubeObject = { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: e.metadata };
  const set = (k: string, v: unknown) => {
    if (v !== undefined && v !== null && v !== '') out[k] = v;
  };
  set('eventTime', e.eventTime ?? null);
  if (!('eventTime' in out)) out.eventTime = null;
  set('series', e.series);
  set('reportingController', e.reportingComponent);
  set('reportingInstance', e.reportingInstance);
  set('action', e.action);
  set('reason', e.reason);
  set('regarding', e.involvedObject);
  set('related', e.related);
  set('note', e.message);
  set('type', e.type);
  set('deprecatedSource', e.source && Object.keys(e.source).length ? e.source : undefined);
  set('deprecatedFirstTimestamp', e.firstTimestamp);
  set('deprecatedLastTimestamp', e.lastTimestamp);
  set('deprecatedCount', e.count);
  return out;
}

/** core/v1 Event (the stored shape) from an events.k8s.io/v1 Event. */
export function eventsV1ToEvent(e: KubeObject): KubeObject {
  const out: KubeObject = { apiVersion: 'v1', kind: 'Event', metadata: e.metadata };
  const set = (k: string, v: unknown) => {
    if (v !== undefined && v !== null && v !== '') out[k] = v;
  };
  set('eventTime', e.eventTime);
  set('series', e.series);
  set('reportingComponent', e.reportingController);
  set('reportingInstance', e.reportingInstance);
  set('action', e.action);
  set('reason', e.reason);
  set('involvedObject', e.regarding ?? {});
  set('related', e.related);
  set('message', e.note);
  set('type', e.type);
  set(
    'source',
    e.deprecatedSource ??
      (e.reportingController ? { component: e.reportingController, host: e.reportingInstance } : undefined),
  );
  set('firstTimestamp', e.deprecatedFirstTimestamp);
  set('lastTimestamp', e.deprecatedLastTimestamp);
  set('count', e.deprecatedCount);
  return out;
}

export const eventsV1: ResourceType = base({
  group: 'events.k8s.io',
  version: 'v1',
  kind: 'Event',
  plural: 'events',
  singular: 'event',
  namespaced: true,
  model: 'EventsV1Event',
  shortNames: ['ev'],
  storage: 'events',
  columns: eventColumns,
  row: eventRow,
  fields: {
    'regarding.kind': (o) => o.involvedObject?.kind ?? '',
    'regarding.namespace': (o) => o.involvedObject?.namespace ?? '',
    'regarding.name': (o) => o.involvedObject?.name ?? '',
    'regarding.uid': (o) => o.involvedObject?.uid ?? '',
    reason: (o) => o.reason ?? '',
    reportingController: (o) => o.reportingComponent ?? '',
    type: (o) => o.type ?? '',
  },
  fromStorage: eventToEventsV1,
  toStorage: eventsV1ToEvent,
  strategy: {
    validate: validateEvent,
    validateUpdate: (obj, old) => [
      ...validateEvent(obj),
      ...validateObjectMetaUpdate(obj.metadata, old.metadata),
    ],
  },
});

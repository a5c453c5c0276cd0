/** Events, core/v1 (the stored shape) and events.k8s.io/v1 (converted on the way in and out). */
import { fieldInvalid, fieldNotSupported, type FieldError } from '@nodelet/api';
import { isObject, type KubeObject } from '../object.js';
import { type ResourceType, type TableColumn } from '../apiserver/resource-type.js';
import { since } from './printers.js';
import { nameRules, validateObjectMeta, validateObjectMetaUpdate } from './meta-validation.js';
import { base } from './resource-base.js';

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

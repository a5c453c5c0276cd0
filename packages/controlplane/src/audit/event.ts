import type { RequestAttributes } from '../authorization/attributes.js';
import type { RequestUser } from '../apiserver/resource-type.js';
import type { AuditLevel, AuditStage } from './policy.js';

/**
 * One line of the audit log: an `audit.k8s.io/v1` Event (upstream's apis/audit/v1/types.go), with its
 * field names and their omitempty rules: what a log shipper or `jq` written for kube-apiserver reads.
 */
export interface AuditUser {
  /** Left out only for a request whose credentials were refused. */
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

/** The bounded fields of a metav1.Status: what upstream copies into `responseStatus`. */
export interface ResponseStatus {
  metadata: Record<string, never>;
  status?: string;
  message?: string;
  reason?: string;
  details?: unknown;
  code: number;
}

export interface AuditEvent {
  kind: 'Event';
  apiVersion: 'audit.k8s.io/v1';
  level: AuditLevel;
  auditID: string;
  stage: AuditStage;
  requestURI: string;
  verb: string;
  user: AuditUser;
  impersonatedUser?: AuditUser;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: ObjectReference;
  responseStatus?: ResponseStatus;
  requestObject?: unknown;
  responseObject?: unknown;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

/** metav1.MicroTime as JSON: RFC 3339 in UTC with six fractional digits (from a fractional ms time). */
export function microTime(ms: number): string {
  const whole = Math.floor(ms);
  const micros = Math.floor((ms - whole) * 1000);
  return `${new Date(whole).toISOString().slice(0, 23)}${String(micros).padStart(3, '0')}Z`;
}

export function auditUser(user: RequestUser): AuditUser {
  return {
    username: user.name,
    ...(user.uid ? { uid: user.uid } : {}),
    ...(user.groups.length ? { groups: [...user.groups] } : {}),
    ...(user.extra && Object.keys(user.extra).length ? { extra: user.extra } : {}),
  };
}

/** The objectRef of a resource request (none for a non-resource one), empty fields left out. */
export function objectReference(attrs: RequestAttributes): ObjectReference | undefined {
  if (!attrs.resourceRequest) return undefined;
  const ref: ObjectReference = {};
  if (attrs.resource) ref.resource = attrs.resource;
  if (attrs.namespace) ref.namespace = attrs.namespace;
  if (attrs.name) ref.name = attrs.name;
  if (attrs.apiGroup) ref.apiGroup = attrs.apiGroup;
  if (attrs.apiVersion) ref.apiVersion = attrs.apiVersion;
  if (attrs.subresource) ref.subresource = attrs.subresource;
  return ref;
}

/** `responseStatus` from the code and, for a Status body (errors), its bounded fields. */
export function responseStatus(code: number, body?: unknown): ResponseStatus {
  const status: Partial<ResponseStatus> = { metadata: {} };
  if (isStatus(body)) {
    if (body.status) status.status = body.status;
    if (body.message) status.message = body.message;
    if (body.reason) status.reason = body.reason;
    if (body.details) status.details = body.details;
  }
  return { ...status, code } as ResponseStatus;
}

/** An Event's fields in upstream's order (the order of types.go), as kube-apiserver writes them. */
export const auditEventFields: readonly (keyof AuditEvent)[] = [
  'kind',
  'apiVersion',
  'level',
  'auditID',
  'stage',
  'requestURI',
  'verb',
  'user',
  'impersonatedUser',
  'sourceIPs',
  'userAgent',
  'objectRef',
  'responseStatus',
  'requestObject',
  'responseObject',
  'requestReceivedTimestamp',
  'stageTimestamp',
  'annotations',
];

/** The event with its fields in upstream's order, empty ones left out. */
export function inSchemaOrder(e: AuditEvent): AuditEvent {
  const ordered: Record<string, unknown> = {};
  for (const field of auditEventFields) if (e[field] !== undefined) ordered[field] = e[field];
  return ordered as unknown as AuditEvent;
}

function isStatus(
  body: unknown,
): body is { status?: string; message?: string; reason?: string; details?: unknown } {
  return typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'Status';
}

/** An object as the log carries it: without metadata.managedFields when the policy says so. */
export function loggedObject(object: unknown, omitManagedFields: boolean): unknown {
  if (!omitManagedFields || typeof object !== 'object' || object === null) return object;
  const o = object as { metadata?: Record<string, unknown>; items?: unknown[] };
  let out: Record<string, unknown> = o as Record<string, unknown>;
  if (o.metadata && 'managedFields' in o.metadata) {
    const { managedFields: _omitted, ...metadata } = o.metadata;
    out = { ...out, metadata };
  }
  if (Array.isArray(o.items)) out = { ...out, items: o.items.map((i) => loggedObject(i, true)) };
  return out;
}

/** A body as JSON, or undefined when it is not (YAML, protobuf, a stream). */
export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

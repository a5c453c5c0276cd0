import type { FieldError } from '@nodelet/api';
import type { KubeObject } from '../object.js';

/**
 * What the server knows about one served resource: its names (for discovery, URLs and messages), its
 * schema (a @kubernetes/client-node model class, for strict decoding and OpenAPI), how it prints as a
 * Table, which fields a field selector may name, and its strategy (defaults, validation, what an update
 * may change) — the parts of upstream's registry/<resource>/strategy.go that a node cluster needs.
 */
/** The authenticated user of a request (a client certificate, a bootstrap or a service-account token). */
export interface RequestUser {
  name: string;
  uid?: string;
  groups: string[];
  /** Further facts the authenticator knows (a service account token's pod and node). */
  extra?: Record<string, string[]>;
}

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

export const allVerbs: readonly Verb[] = [
  'create',
  'delete',
  'deletecollection',
  'get',
  'list',
  'patch',
  'update',
  'watch',
];

export interface TableColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format?: string;
  description: string;
  /** 0: always shown; 1: shown with `-o wide`. */
  priority: number;
}

export interface SubresourceType {
  name: string;
  kind: string;
  group?: string;
  version?: string;
  verbs: readonly Verb[];
}

/** What a strategy may use: the time, and a read view of other objects. */
export interface StrategyContext {
  now(): number;
  /** The current object of another resource (by storage resource name), or undefined. */
  lookup(resource: string, namespace: string, name: string): KubeObject | undefined;
  /** Every object of another resource, for checks across objects (allocations). */
  list(resource: string, namespace?: string): KubeObject[];
}

export interface Strategy {
  /**
   * Fills defaults and server-owned fields of a new object (status reset, allocations chosen, the
   * requesting user of a CertificateSigningRequest).
   */
  prepareForCreate?(obj: KubeObject, ctx: StrategyContext, user?: RequestUser): void;
  /** Field errors of a new object (422 Invalid). */
  validate?(obj: KubeObject, ctx: StrategyContext): FieldError[];
  /** Carries server-owned fields of `old` into an update of the main resource (status, allocations). */
  prepareForUpdate?(obj: KubeObject, old: KubeObject, ctx: StrategyContext): void;
  /** Field errors of an update (immutable fields, plus `validate`). */
  validateUpdate?(obj: KubeObject, old: KubeObject, ctx: StrategyContext): FieldError[];
  /** Builds the object a status update stores from the old object and the body (default: old + body.status). */
  prepareForStatusUpdate?(obj: KubeObject, old: KubeObject, ctx: StrategyContext): KubeObject;
  validateStatusUpdate?(obj: KubeObject, old: KubeObject, ctx: StrategyContext): FieldError[];
  /**
   * The object an update of another writable subresource (a CSR's `approval`) stores, or undefined when
   * the resource has no such writable subresource.
   */
  prepareForSubresourceUpdate?(
    subresource: string,
    obj: KubeObject,
    old: KubeObject,
    ctx: StrategyContext,
  ): KubeObject | undefined;
  validateSubresourceUpdate?(
    subresource: string,
    obj: KubeObject,
    old: KubeObject,
    ctx: StrategyContext,
  ): FieldError[];
  /**
   * Seconds of graceful deletion for `obj` given the requested grace (undefined: the object's default); 0
   * deletes at once. Only resources with graceful deletion (pods) define it.
   */
  gracePeriodSeconds?(obj: KubeObject, requested: number | undefined): number;
}

export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  listKind: string;
  /** The plural resource name: `pods`. */
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: readonly string[];
  categories: readonly string[];
  verbs: readonly Verb[];
  subresources: readonly SubresourceType[];
  /** The @kubernetes/client-node model class of the kind: `V1Pod`. */
  model: string;
  /** The storage key space; two API versions of one kind share it (core and events.k8s.io Events). */
  storage: string;
  /** Whether `.status` is owned by the status subresource (ignored by create/update of the main resource). */
  statusSubresource: boolean;
  /**
   * Nothing is stored: a POST of the collection computes its answer from the body (TokenReview,
   * SelfSubjectReview); the other verbs are not served.
   */
  stateless?: boolean;
  /** Returned on delete: the deleted object (pods, services) rather than a Success Status. */
  returnDeletedObject?: boolean;
  /** The propagation of a DELETE that names none (batch/v1 Jobs: Orphan, for compatibility, as upstream). */
  defaultPropagationPolicy?: 'Orphan';
  columns: readonly TableColumn[];
  row(obj: KubeObject, now: number): unknown[];
  /** Fields a field selector may name, beyond `metadata.name` and `metadata.namespace`. */
  fields: Readonly<Record<string, (obj: KubeObject) => string | undefined>>;
  strategy: Strategy;
  /** Converts a stored object to this API version's shape (events.k8s.io/v1 over core Events). */
  fromStorage?(obj: KubeObject): KubeObject;
  /** A decoding failure schema checks cannot see (Secret data that is not base64), or undefined. */
  decodeError?(obj: KubeObject): string | undefined;
  toStorage?(obj: KubeObject): KubeObject;
}

export function apiVersionOf(t: { group: string; version: string }): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

export function groupResource(t: ResourceType): { group: string; resource: string } {
  return { group: t.group, resource: t.plural };
}

/** The name column every table starts with. */
export const nameColumn: TableColumn = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  priority: 0,
};

export const ageColumn: TableColumn = {
  name: 'Age',
  type: 'string',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  priority: 0,
};

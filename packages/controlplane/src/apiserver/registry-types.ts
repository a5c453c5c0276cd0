/** The options and results of the registry's operations (the query parameters and bodies of REST calls). */
import type { Clock } from '@nodelet/kernel';
import type { AdmissionPlugin } from '../admission/admission.js';
import type { KubeObject } from '../object.js';
import type { RevisionStore } from '../storage/revision-store.js';
import type { FieldValidation, KindIndex } from './decode.js';
import type { RequestUser, ResourceType, StrategyContext } from './resource-type.js';
import type { Status } from './status.js';

export interface ListOptions {
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  limit?: number | undefined;
  continue?: string | undefined;
  resourceVersion?: string | undefined;
  resourceVersionMatch?: string | undefined;
}

export interface WatchOptions extends ListOptions {
  allowWatchBookmarks?: boolean | undefined;
  sendInitialEvents?: boolean | undefined;
}

export interface WriteOptions {
  dryRun?: boolean;
  fieldValidation?: FieldValidation;
  /** Who asks (strategies that record the requestor use it: CertificateSigningRequests). */
  user?: RequestUser;
}

/** A write of the object or, with `subresource`, of one of its subresources (status, scale, …). */
export type SubresourceWriteOptions = WriteOptions & { subresource?: string };

export interface DeleteOptions {
  /** Who asks (admission plugins that restrict deletes read it). */
  user?: RequestUser | undefined;
  gracePeriodSeconds?: number | undefined;
  preconditions?: { uid?: string | undefined; resourceVersion?: string | undefined } | undefined;
  dryRun?: boolean | undefined;
  /** Orphan: the `orphan` finalizer keeps the object until the garbage collector released its dependents. */
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground' | undefined;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** Where a watch delivers its events. `json` is the object already serialized, when nothing converted it. */
export interface WatchSink {
  send(type: WatchEventType, object: KubeObject, json?: string): void;
  /** The watch cannot go on (its start was compacted): the sink sends `status` as an ERROR event and ends. */
  fail(status: Status): void;
}

export interface Watch {
  stop(): void;
}

export interface WriteResult {
  object: KubeObject;
  warnings: string[];
}

export interface DeleteResult {
  /** The deleted object, the object marked for deletion, or a Success Status. */
  body: KubeObject | Status;
  /** false while a graceful deletion or finalizers hold the object. */
  deleted: boolean;
}

/** What the registry's operations share: the store, the clock, the strategies' view and the kinds served. */
export interface RegistryParts {
  readonly store: RevisionStore;
  readonly clock: Clock;
  readonly context: StrategyContext;
  readonly kinds: KindIndex;
  readonly bookmarkIntervalMs: number;
  /** Run on every create, in order, after defaulting and before validation. */
  readonly admission: readonly AdmissionPlugin[];
  byStorage(storage: string): ResourceType;
}

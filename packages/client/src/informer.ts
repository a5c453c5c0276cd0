import type { Clock } from '@nodelet/kernel';
import { objectRef as objectKey } from './kube-api.js';
import { type ListerWatcher, Reflector, type ReflectorOptions } from './reflector.js';

/** What an informer keeps: API objects with metadata. */
export interface KubeObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** An informer's event handlers (upstream `ResourceEventHandler`, plus the moment lists land). */
export interface InformerHandlers<T> {
  added?(obj: T): void;
  updated?(obj: T, old: T): void;
  deleted?(obj: T): void;
  /** After each list's changes were handed over (the first list, and relists). */
  listed?(): void;
}

/**
 * A Reflector feeding a store and event handlers (upstream's informer): a list is diffed against the
 * store, so after a relist (410 Gone, a failure) handlers hear what vanished meanwhile as `deleted` and
 * what changed as `updated`; an object whose resource version did not change is not handed over again.
 */
export class Informer<T extends KubeObject> {
  /** The objects as the API last said, by `namespace/name` (`name` when cluster-scoped). */
  readonly store = new Map<string, T>();
  private readonly reflector: Reflector<T>;
  private synced = false;

  constructor(
    clock: Clock,
    source: ListerWatcher<T>,
    private readonly handlers: InformerHandlers<T>,
    options: ReflectorOptions,
  ) {
    this.reflector = new Reflector(
      clock,
      source,
      {
        replace: (items) => this.replace(items),
        event: (type, obj) => (type === 'DELETED' ? this.remove(obj) : this.upsert(obj)),
      },
      options,
    );
  }

  /** True once the first list has been handed over. */
  get hasSynced(): boolean {
    return this.synced;
  }

  get lists(): number {
    return this.reflector.lists;
  }

  get resourceVersion(): string {
    return this.reflector.resourceVersion;
  }

  start(): void {
    this.reflector.start();
  }

  /** Stops listing and watching; the store is kept (a later start lists afresh). */
  stop(): void {
    this.reflector.stop();
    this.synced = false;
  }

  private replace(items: T[]): void {
    const next = new Map<string, T>();
    for (const obj of items) next.set(objectKey(obj), obj);
    for (const [key, old] of this.store) {
      if (next.has(key)) continue;
      this.store.delete(key);
      this.handlers.deleted?.(old);
    }
    for (const obj of next.values()) this.upsert(obj);
    this.synced = true;
    this.handlers.listed?.();
  }

  private upsert(obj: T): void {
    const key = objectKey(obj);
    const old = this.store.get(key);
    this.store.set(key, obj);
    if (!old) this.handlers.added?.(obj);
    else if (
      old.metadata?.resourceVersion !== obj.metadata?.resourceVersion ||
      !obj.metadata?.resourceVersion
    )
      this.handlers.updated?.(obj, old);
  }

  private remove(obj: T): void {
    this.store.delete(objectKey(obj));
    this.handlers.deleted?.(obj);
  }
}

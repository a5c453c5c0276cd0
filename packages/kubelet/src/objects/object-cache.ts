import { type ListWatchApi, namedObjectListWatcher } from '@nodelet/client';
import type { Clock, Logger, Loop } from '@nodelet/kernel';
import { ObjectNotFoundError } from '@nodelet/volume';
import { ReferencedWatch } from './watch.js';

/** A ConfigMap or a Secret, as far as the cache needs it. */
export interface CachedObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  immutable?: boolean;
}

export interface ObjectCacheOptions {
  kind: 'configmap' | 'secret';
  /** The collection: `configmaps`, `secrets`. */
  resource: string;
  /** The API connection, once there is one. */
  api: () => ListWatchApi | undefined;
  clock: Clock;
  logger: Logger;
  /** How long a read waits for an object's first list (upstream: 1 s). */
  syncTimeoutMs?: number;
  /**
   * A watch nobody read for this long stops until the next read (upstream: 5 × the sync frequency, at
   * least 1 min), so an object only an env var reads at container start is not watched for ever.
   */
  maxIdleMs?: number;
}

/**
 * Upstream's watch-based object cache (pkg/kubelet/util/manager/watch_based_manager.go, the kubelet's
 * `configMapAndSecretChangeDetectionStrategy: Watch`): each object a pod references is watched on its
 * own, by name, while at least one pod references it.
 *
 *   addReference ──(first)──► list + watch metadata.name=<name> ──► store (updates, deletes)
 *   get ──► wait for the first list (bounded) ──► the stored object, or ObjectNotFoundError
 *       └── the object is immutable: its watch stops, the last value is kept for good
 *   deleteReference ──(last)──► the watch stops, the object is forgotten
 *   idle (nobody read it for maxIdleMs) ──► the watch stops; the next get starts it again and waits
 */
export class ObjectCache<T extends CachedObject> {
  private readonly items = new Map<string, ReferencedWatch<T> & { immutable?: boolean }>();
  private recycler?: Loop;
  private readonly syncTimeoutMs: number;
  private readonly maxIdleMs: number;

  constructor(private readonly options: ObjectCacheOptions) {
    this.syncTimeoutMs = options.syncTimeoutMs ?? 1_000;
    this.maxIdleMs = Math.max(options.maxIdleMs ?? 5 * 60_000, 60_000);
  }

  addReference(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    let item = this.items.get(key);
    if (!item) {
      const { api, resource, clock, logger } = this.options;
      item = new ReferencedWatch<T>(
        `${this.options.kind} ${key}`,
        () => {
          const connection = api();
          return connection && namedObjectListWatcher<T>(connection, resource, namespace, name);
        },
        clock,
        logger,
      );
      this.items.set(key, item);
      item.start();
      this.recycler ??= clock.loop(() => this.stopIdle(), { period: 60_000, initialDelay: 60_000 });
    }
    item.refs++;
  }

  deleteReference(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const item = this.items.get(key);
    if (!item || --item.refs > 0) return;
    item.stop();
    this.items.delete(key);
    if (this.items.size === 0) {
      this.recycler?.stop();
      this.recycler = undefined;
    }
  }

  /** The object as last seen; waits for its first list when the watch has only just started. */
  async get(namespace: string, name: string): Promise<T> {
    const { kind, resource } = this.options;
    const key = `${namespace}/${name}`;
    const item = this.items.get(key);
    if (!item) throw new Error(`object "${namespace}"/"${name}" not registered`);
    item.lastAccess = this.options.clock.now();
    if (!item.immutable) {
      if (!item.start()) {
        throw new Error(`couldn't get ${kind} ${key}: the kubelet is not connected to the API server yet`);
      }
      await item.waitSynced(this.syncTimeoutMs, resource);
    }
    const object = this.find(item, name);
    if (!object) throw new ObjectNotFoundError(kind, namespace, name);
    if (object.immutable === true && !item.immutable) {
      // Immutable: it can never change again, so it is not watched any more (upstream's stop).
      item.immutable = true;
      item.stop();
      this.options.logger.debug('Stopped watching for changes - object is immutable', { [kind]: key });
    }
    return object;
  }

  /** The objects watched now, as `namespace/name` (for tests and metrics). */
  watched(): string[] {
    return [...this.items].filter(([, item]) => item.running).map(([key]) => key);
  }

  stop(): void {
    for (const item of this.items.values()) item.stop();
    this.items.clear();
    this.recycler?.stop();
    this.recycler = undefined;
  }

  private find(item: ReferencedWatch<T>, name: string): T | undefined {
    for (const object of item.values()) if (object.metadata?.name === name) return object;
    return undefined;
  }

  /** Stops the watches nobody read for `maxIdleMs` (only once listed: a list in flight is not wasted). */
  private stopIdle(): void {
    const now = this.options.clock.now();
    for (const [key, item] of this.items) {
      if (item.running && item.synced && now - item.lastAccess > this.maxIdleMs) {
        item.stop();
        this.options.logger.debug('Not read for a long time, stopped watching for changes', {
          object: key,
          maxIdleMs: this.maxIdleMs,
        });
      }
    }
  }
}

import type { Clock, Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { apiVersionOf } from '../apiserver/resource-type.js';
import { ApiError } from '../apiserver/status.js';
import type { OwnerReference } from './pod-control.js';
import { WorkQueue } from './work-queue.js';

/**
 * A small garbage collector (upstream's pkg/controller/garbagecollector, for the owners this control plane
 * has: Deployments, ReplicaSets, DaemonSets, StatefulSets, CronJobs and Jobs):
 *
 * - background cascading deletion: once an owner is gone, each dependent (ReplicaSets, pods,
 *   ControllerRevisions) none of whose owners exists any more is deleted; one that still has another
 *   owner only loses the dangling reference;
 * - orphaning: an owner deleted with `propagationPolicy: Orphan` carries the `orphan` finalizer; its
 *   dependents lose their references to it, then the finalizer is removed and the owner goes;
 * - foreground deletion: an owner deleted with `propagationPolicy: Foreground` carries the
 *   `foregroundDeletion` finalizer and stays while its dependents are deleted — a dependent that has
 *   dependents of its own in the foreground too — and goes once no dependent whose reference to it has
 *   `blockOwnerDeletion` is left.
 *
 * An object of any served kind holding one of these finalizers is finished (a kind without dependents
 * here loses it at once). On start every dependent and every deleting owner is checked once, so
 * deletions made while the collector was down are finished.
 */
const owners = ['deployments', 'replicasets', 'daemonsets', 'statefulsets', 'cronjobs', 'jobs'];
const dependents = ['replicasets', 'jobs', 'pods', 'controllerrevisions'];
const finalizerKeys: Record<string, string> = { orphan: 'orphan', foregroundDeletion: 'foreground' };

export class GarbageCollector {
  private readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];
  /** Owners deleting in the foreground, by uid: their `foreground/…` key (pod writes look here, not in the store). */
  private readonly waiting = new Map<string, string>();

  constructor(
    private readonly registry: Registry,
    clock: Clock,
    logger: Logger,
  ) {
    // Keys: `dependent/<storage>/<ns>/<name>` to re-check an object, `orphan/…` and `foreground/…` to
    // finish an owner's deletion.
    this.queue = new WorkQueue('garbage-collector', (k) => this.sync(k), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    const storages = new Set(this.registry.types.filter((t) => !t.stateless).map((t) => t.storage));
    for (const storage of storages) {
      this.unsubscribe.push(
        store.subscribe(storage, (e) => {
          this.enqueueFinalizing(storage, e.object, e.op === 'delete');
          if (e.op === 'delete' && owners.includes(storage)) this.enqueueDependents(e.namespace, e.object);
          // A dependent that changed or went may unblock an owner deleting in the foreground.
          if (dependents.includes(storage)) this.enqueueWaitingOwners(e.object);
        }),
      );
    }
    for (const storage of dependents) {
      for (const { object } of store.listAll(storage)) {
        if (object.metadata.ownerReferences?.length)
          this.queue.add(`dependent/${storage}/${object.metadata.namespace}/${object.metadata.name}`);
      }
    }
    for (const storage of storages) {
      for (const { object } of store.listAll(storage)) this.enqueueFinalizing(storage, object);
    }
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
    this.queue.stop();
    this.waiting.clear();
  }

  private enqueueFinalizing(storage: string, obj: KubeObject, deleted = false): void {
    const uid = obj.metadata.uid ?? '';
    if (deleted || !waitingForDependents(obj)) this.waiting.delete(uid);
    if (deleted || !obj.metadata.deletionTimestamp) return;
    for (const f of obj.metadata.finalizers ?? []) {
      const what = finalizerKeys[f];
      if (!what) continue;
      const key = `${what}/${storage}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
      if (what === 'foreground') this.waiting.set(uid, key);
      this.queue.add(key);
    }
  }

  private enqueueDependents(namespace: string, owner: KubeObject): void {
    for (const { storage, object } of this.dependentsOf(namespace, owner.metadata.uid))
      this.queue.add(`dependent/${storage}/${namespace}/${object.metadata.name}`);
  }

  private enqueueWaitingOwners(dependent: KubeObject): void {
    for (const ref of refs(dependent)) {
      const key = this.waiting.get(ref.uid);
      if (key) this.queue.add(key);
    }
  }

  private dependentsOf(
    namespace: string,
    uid: string | undefined,
  ): { storage: string; object: KubeObject }[] {
    const out: { storage: string; object: KubeObject }[] = [];
    for (const storage of dependents) {
      for (const { object } of this.registry.store.listAll(storage, namespace)) {
        if (refs(object).some((r) => r.uid === uid)) out.push({ storage, object });
      }
    }
    return out;
  }

  sync(key: string): void {
    const [what, storage, namespace, name] = key.split('/') as [string, string, string, string];
    const obj = this.registry.store.get(storage, namespace, name)?.object;
    if (!obj) return;
    if (what === 'orphan') this.orphanDependents(storage, obj);
    else if (what === 'foreground') this.deleteDependentsFirst(storage, obj);
    else this.collect(storage, obj);
  }

  /** The owner a reference names, if it exists with that uid; undefined when gone or of an unknown kind. */
  private owner(namespace: string, ref: OwnerReference): { storage: string; object: KubeObject } | undefined {
    const t = this.registry.types.find((x) => x.kind === ref.kind && apiVersionOf(x) === ref.apiVersion);
    if (!t) return undefined;
    const object = this.registry.store.get(t.storage, t.namespaced ? namespace : '', ref.name)?.object;
    return object?.metadata.uid === ref.uid ? { storage: t.storage, object } : undefined;
  }

  /** Whether a reference's owner is known to be absent (an owner of a kind not served cannot be checked). */
  private dangling(namespace: string, ref: OwnerReference): boolean {
    const served = this.registry.types.some((x) => x.kind === ref.kind && apiVersionOf(x) === ref.apiVersion);
    return served && !this.owner(namespace, ref);
  }

  /** attemptToDeleteItem: a dependent whose owners are gone or deleting in the foreground is deleted. */
  private collect(storage: string, obj: KubeObject): void {
    const namespace = obj.metadata.namespace ?? '';
    const all = refs(obj);
    if (all.length === 0) return;
    const waiting = all.filter((r) => {
      const o = this.owner(namespace, r);
      return o !== undefined && waitingForDependents(o.object);
    });
    const solid = all.filter((r) => !waiting.includes(r) && !this.dangling(namespace, r));
    if (solid.length === all.length) return;
    if (solid.length > 0) {
      this.setRefs(storage, obj, solid);
      return;
    }
    // Under an owner deleting in the foreground, a dependent with dependents of its own goes the same way.
    const foreground = waiting.length > 0 && this.dependentsOf(namespace, obj.metadata.uid).length > 0;
    try {
      this.registry.delete(this.registry.byStorage(storage), namespace, obj.metadata.name!, {
        propagationPolicy: 'Background',
        preconditions: { uid: obj.metadata.uid },
        ...(foreground ? { propagationPolicy: 'Foreground' as const } : {}),
      });
    } catch (err) {
      if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
    }
  }

  /** processDeletingDependentsItem: deletes the owner's dependents; drops the finalizer when none blocks. */
  private deleteDependentsFirst(storage: string, owner: KubeObject): void {
    const namespace = owner.metadata.namespace ?? '';
    const deps = this.dependentsOf(namespace, owner.metadata.uid);
    for (const { storage: s, object } of deps) {
      if (!object.metadata.deletionTimestamp)
        this.queue.add(`dependent/${s}/${namespace}/${object.metadata.name}`);
    }
    const blocking = deps.some(({ object }) =>
      refs(object).some((r) => r.uid === owner.metadata.uid && r.blockOwnerDeletion === true),
    );
    if (!blocking) this.removeFinalizer(storage, owner, 'foregroundDeletion');
  }

  private orphanDependents(storage: string, owner: KubeObject): void {
    const namespace = owner.metadata.namespace ?? '';
    for (const { storage: dep, object } of this.dependentsOf(namespace, owner.metadata.uid)) {
      this.setRefs(
        dep,
        object,
        refs(object).filter((r) => r.uid !== owner.metadata.uid),
      );
    }
    this.removeFinalizer(storage, owner, 'orphan');
  }

  private removeFinalizer(storage: string, owner: KubeObject, finalizer: string): void {
    const finalizers = (owner.metadata.finalizers ?? []).filter((f: string) => f !== finalizer);
    const body = { ...owner, metadata: { ...owner.metadata, finalizers } };
    this.registry.update(
      this.registry.byStorage(storage),
      owner.metadata.namespace ?? '',
      owner.metadata.name!,
      body,
    );
  }

  private setRefs(storage: string, obj: KubeObject, next: OwnerReference[]): void {
    this.registry.store.update(storage, obj.metadata.namespace ?? '', obj.metadata.name!, (o) => {
      if (next.length) o.metadata.ownerReferences = next;
      else delete o.metadata.ownerReferences;
      return o;
    });
  }
}

function refs(obj: KubeObject): OwnerReference[] {
  return (obj.metadata.ownerReferences ?? []) as OwnerReference[];
}

/** An owner deleting in the foreground, waiting for its dependents. */
function waitingForDependents(obj: KubeObject): boolean {
  return !!obj.metadata.deletionTimestamp && (obj.metadata.finalizers ?? []).includes('foregroundDeletion');
}

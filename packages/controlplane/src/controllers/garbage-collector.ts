import type { Clock, Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { apiVersionOf } from '../apiserver/resource-type.js';
import { ApiError } from '../apiserver/status.js';
import type { OwnerReference } from './pod-control.js';
import { WorkQueue } from './work-queue.js';

/**
 * A small garbage collector (upstream's pkg/controller/garbagecollector, for the owners this control plane
 * has: Deployments, ReplicaSets, CronJobs and Jobs):
 *
 * - background cascading deletion: once an owner is gone, each dependent (ReplicaSets, pods) none of whose
 *   owners exists any more is deleted; one that still has another owner only loses the dangling reference;
 * - orphaning: an owner deleted with `propagationPolicy: Orphan` carries the `orphan` finalizer; its
 *   dependents lose their references to it, then the finalizer is removed and the owner goes.
 *
 * Foreground deletion (the `foregroundDeletion` finalizer) is not implemented: it deletes in the background.
 * On start every dependent is checked once, so deletions made while the collector was down are finished.
 */
const owners = ['deployments', 'replicasets', 'cronjobs', 'jobs'];
const dependents = ['replicasets', 'jobs', 'pods'];

export class GarbageCollector {
  private readonly queue: WorkQueue;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly registry: Registry,
    clock: Clock,
    logger: Logger,
  ) {
    // Keys: `dependent/<storage>/<ns>/<name>` to re-check an object, `orphan/<storage>/<ns>/<name>`.
    this.queue = new WorkQueue('garbage-collector', (k) => this.sync(k), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    for (const storage of owners) {
      this.unsubscribe.push(
        store.subscribe(storage, (e) => {
          const uid = e.object.metadata.uid;
          if (e.op === 'delete') this.enqueueDependents(e.namespace, uid);
          else if (e.object.metadata.deletionTimestamp && e.object.metadata.finalizers?.includes('orphan'))
            this.queue.add(`orphan/${storage}/${e.namespace}/${e.name}`);
        }),
      );
    }
    for (const storage of dependents) {
      for (const { object } of store.listAll(storage)) {
        if (object.metadata.ownerReferences?.length)
          this.queue.add(`dependent/${storage}/${object.metadata.namespace}/${object.metadata.name}`);
      }
    }
    for (const storage of owners) {
      for (const { object: o } of store.listAll(storage)) {
        if (o.metadata.deletionTimestamp && o.metadata.finalizers?.includes('orphan'))
          this.queue.add(`orphan/${storage}/${o.metadata.namespace}/${o.metadata.name}`);
      }
    }
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
    this.queue.stop();
  }

  private enqueueDependents(namespace: string, uid: string | undefined): void {
    for (const storage of dependents) {
      for (const { object } of this.registry.store.listAll(storage, namespace)) {
        if (refs(object).some((r) => r.uid === uid))
          this.queue.add(`dependent/${storage}/${namespace}/${object.metadata.name}`);
      }
    }
  }

  sync(key: string): void {
    const [what, storage, namespace, name] = key.split('/') as [string, string, string, string];
    const obj = this.registry.store.get(storage, namespace, name)?.object;
    if (!obj) return;
    if (what === 'orphan') this.orphanDependents(storage, obj);
    else this.collect(storage, obj);
  }

  /** Whether the object a reference names exists, with that uid. */
  private exists(namespace: string, ref: OwnerReference): boolean {
    const t = this.registry.types.find((x) => x.kind === ref.kind && apiVersionOf(x) === ref.apiVersion);
    // An owner of a kind this server does not serve cannot be checked: keep the dependent.
    if (!t) return true;
    const owner = this.registry.store.get(t.storage, t.namespaced ? namespace : '', ref.name)?.object;
    return owner?.metadata.uid === ref.uid;
  }

  private collect(storage: string, obj: KubeObject): void {
    const namespace = obj.metadata.namespace ?? '';
    const all = refs(obj);
    if (all.length === 0) return;
    const live = all.filter((r) => this.exists(namespace, r));
    if (live.length === all.length) return;
    if (live.length > 0) {
      this.setRefs(storage, obj, live);
      return;
    }
    try {
      this.registry.delete(this.registry.byStorage(storage), namespace, obj.metadata.name!, {
        propagationPolicy: 'Background',
        preconditions: { uid: obj.metadata.uid },
      });
    } catch (err) {
      if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
    }
  }

  private orphanDependents(storage: string, owner: KubeObject): void {
    const namespace = owner.metadata.namespace ?? '';
    for (const dep of dependents) {
      for (const { object } of this.registry.store.listAll(dep, namespace)) {
        const all = refs(object);
        if (all.some((r) => r.uid === owner.metadata.uid)) {
          this.setRefs(
            dep,
            object,
            all.filter((r) => r.uid !== owner.metadata.uid),
          );
        }
      }
    }
    const finalizers = (owner.metadata.finalizers ?? []).filter((f: string) => f !== 'orphan');
    const body = { ...owner, metadata: { ...owner.metadata, finalizers } };
    this.registry.update(this.registry.byStorage(storage), namespace, owner.metadata.name!, body);
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

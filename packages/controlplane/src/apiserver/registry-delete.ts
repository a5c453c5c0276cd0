/** DELETE: preconditions, graceful deletion, finalizers, terminating namespaces and collections. */
import { isObject, rfc3339, type KubeObject } from '../object.js';
import { StoreError } from '../storage/revision-store.js';
import { ns, parseRevisionOr, toApi } from './registry-helpers.js';
import { listObjects } from './registry-list.js';
import type { DeleteOptions, DeleteResult, ListOptions, RegistryParts } from './registry-types.js';
import { apiVersionOf, groupResource, type ResourceType } from './resource-type.js';
import { ApiError, conflict, forbidden, invalid, notFound, successStatus, type Status } from './status.js';

/** The finalizer a propagation policy leaves for the garbage collector. */
const gcFinalizers: Record<string, string | undefined> = {
  Orphan: 'orphan',
  Foreground: 'foregroundDeletion',
};

export function deleteObject(
  p: RegistryParts,
  t: ResourceType,
  namespace: string,
  name: string,
  options: DeleteOptions = {},
): DeleteResult {
  const key = ns(t, namespace);
  const current = p.store.get(t.storage, key, name);
  if (!current) throw notFound(groupResource(t), name);
  const obj = current.object;
  const pre = options.preconditions;
  if (pre?.uid && pre.uid !== obj.metadata.uid) {
    throw conflict(
      groupResource(t),
      name,
      `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${obj.metadata.uid}`,
    );
  }
  if (pre?.resourceVersion && parseRevisionOr(pre.resourceVersion) !== current.rev) {
    throw conflict(
      groupResource(t),
      name,
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.rev}`,
    );
  }
  if (options.gracePeriodSeconds !== undefined && options.gracePeriodSeconds < 0) {
    throw invalid('DeleteOptions', 'meta.k8s.io', '', [
      {
        field: 'gracePeriodSeconds',
        message: `Invalid value: ${options.gracePeriodSeconds}: must be greater than or equal to 0`,
      },
    ]);
  }
  const request = { user: options.user, dryRun: options.dryRun === true, name };
  for (const plugin of p.admission) plugin.admitDelete?.(t, obj, request);
  if (t.storage === 'namespaces') return deleteNamespace(p, t, obj, current.rev, options);

  const grace = t.strategy.gracePeriodSeconds?.(obj, options.gracePeriodSeconds) ?? 0;
  // The garbage collector finishes these: it orphans the dependents, or deletes them first. A kind may
  // default to another policy than Background (batch/v1 Jobs orphan their pods, as upstream).
  const policy = options.propagationPolicy ?? t.defaultPropagationPolicy ?? 'Background';
  const gcFinalizer = t.storage === 'pods' ? undefined : gcFinalizers[policy];
  const finalizers = (obj.metadata.finalizers ?? []).length > 0 || gcFinalizer !== undefined;
  if (grace > 0 || finalizers) {
    // Graceful deletion or finalizers: the object stays, marked, until its node or its finalizers let go.
    const existing = obj.metadata.deletionGracePeriodSeconds;
    if (obj.metadata.deletionTimestamp && existing !== undefined && grace >= existing) {
      return { body: toApi(t, obj), deleted: false }; // a second delete may only shorten the grace
    }
    if (options.dryRun) return { body: toApi(t, obj), deleted: false };
    const now = p.clock.now();
    const stored = p.store.update(
      t.storage,
      key,
      name,
      (o) => {
        o.metadata.deletionTimestamp = rfc3339(now + grace * 1000);
        o.metadata.deletionGracePeriodSeconds = grace;
        if (gcFinalizer && !(o.metadata.finalizers ?? []).includes(gcFinalizer)) {
          o.metadata.finalizers = [...(o.metadata.finalizers ?? []), gcFinalizer];
        }
        return o;
      },
      current.rev,
    );
    return { body: toApi(t, stored.object), deleted: false };
  }
  if (options.dryRun) return { body: deletedBody(t, obj), deleted: true };
  const removed = p.store.delete(t.storage, key, name, current.rev);
  return { body: deletedBody(t, removed.object), deleted: true };
}

function deletedBody(t: ResourceType, obj: KubeObject): KubeObject | Status {
  if (t.returnDeletedObject) return toApi(t, obj);
  return successStatus({
    name: obj.metadata.name!,
    ...(t.group ? { group: t.group } : {}),
    kind: t.plural,
    uid: obj.metadata.uid!,
  });
}

/** Namespaces terminate: marked now, removed by the namespace controller once empty. */
function deleteNamespace(
  p: RegistryParts,
  t: ResourceType,
  obj: KubeObject,
  rev: number,
  options: DeleteOptions,
): DeleteResult {
  const name = obj.metadata.name!;
  if (['default', 'kube-system', 'kube-public'].includes(name)) {
    throw forbidden(groupResource(t), name, 'this namespace may not be deleted');
  }
  if (obj.metadata.deletionTimestamp || options.dryRun) return { body: toApi(t, obj), deleted: false };
  const stored = p.store.update(
    'namespaces',
    '',
    name,
    (o) => {
      o.metadata.deletionTimestamp = rfc3339(p.clock.now());
      o.metadata.deletionGracePeriodSeconds = 0;
      o.status = { ...(o.status ?? {}), phase: 'Terminating' };
      return o;
    },
    rev,
  );
  return { body: toApi(t, stored.object), deleted: false };
}

export function deleteCollection(
  p: RegistryParts,
  t: ResourceType,
  namespace: string | undefined,
  list: ListOptions,
  options: DeleteOptions,
): KubeObject {
  const { items } = listObjects(p, t, namespace, { ...list, limit: undefined, continue: undefined });
  const deleted: KubeObject[] = [];
  for (const item of items as KubeObject[]) {
    try {
      const r = deleteObject(p, t, item.metadata.namespace ?? '', item.metadata.name!, options);
      if (isObject(r.body) && (r.body as KubeObject).metadata?.name) deleted.push(r.body as KubeObject);
      else deleted.push(item);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
  return {
    apiVersion: apiVersionOf(t),
    kind: t.listKind,
    metadata: { resourceVersion: String(p.store.revision) },
    items: deleted,
  };
}

/** Removes an object at once, whatever its grace period or finalizers (controllers finishing a deletion). */
export function forceRemove(p: RegistryParts, storage: string, namespace: string, name: string): void {
  try {
    p.store.delete(storage, namespace, name);
  } catch (err) {
    if (!(err instanceof StoreError && err.code === 'NotFound')) throw err;
  }
}

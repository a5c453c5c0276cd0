/**
 * CREATE, UPDATE (of the object or a subresource), PATCH and pods/binding: decoding, the strategies'
 * preparation and validation, optimistic concurrency, and the NamespaceLifecycle check.
 */
import { randomUUID } from 'node:crypto';
import { canonicalJson, type FieldError } from '@nodelet/api';
import { isObject, rfc3339, type KubeObject } from '../object.js';
import { decodeObject } from './decode.js';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, type PatchType } from './patch.js';
import {
  copyOrDelete,
  mustBeValid,
  ns,
  parseRevisionOr,
  randomSuffix,
  toApi,
  translateStoreError,
} from './registry-helpers.js';
import type { RegistryParts, WriteOptions, WriteResult, SubresourceWriteOptions } from './registry-types.js';
import { groupResource, type ResourceType } from './resource-type.js';
import {
  ApiError,
  badRequest,
  conflict,
  forbidden,
  invalid,
  notFound,
  staleObject,
  successStatus,
  type Status,
} from './status.js';

export function createObject(
  p: RegistryParts,
  t: ResourceType,
  namespace: string,
  body: unknown,
  options: WriteOptions = {},
): WriteResult {
  const { object, warnings } = decodeObject(body, t, options.fieldValidation ?? 'Warn', p.kinds);
  const obj = t.toStorage ? t.toStorage(object) : object;
  const meta = obj.metadata;
  if (t.namespaced) {
    if (meta.namespace && namespace && meta.namespace !== namespace) {
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    meta.namespace = namespace || meta.namespace;
  } else {
    delete meta.namespace;
  }
  if (meta.resourceVersion) throw badRequest('resourceVersion should not be set on objects to be created');
  const requestName = meta.name || (typeof meta.generateName === 'string' ? meta.generateName : '');
  if (!meta.name && typeof meta.generateName === 'string' && meta.generateName) {
    meta.name = meta.generateName + randomSuffix();
  }
  if (t.namespaced && meta.namespace) checkNamespaceOpen(p, t, meta.namespace, meta.name ?? '');
  meta.uid = randomUUID();
  meta.creationTimestamp = rfc3339(p.clock.now());
  delete meta.deletionTimestamp;
  delete meta.deletionGracePeriodSeconds;
  delete meta.selfLink;
  delete meta.managedFields;
  t.strategy.prepareForCreate?.(obj, p.context, options.user);
  const request = { user: options.user, dryRun: options.dryRun === true, name: requestName };
  for (const plugin of p.admission) plugin.admitCreate(t, obj, p.context, request);
  mustBeValid(t, obj, t.strategy.validate?.(obj, p.context) ?? []);
  if (options.dryRun) return { object: toApi(t, obj), warnings };
  try {
    const stored = p.store.create(t.storage, meta.namespace ?? '', meta.name!, () => obj);
    return { object: toApi(t, stored.object), warnings };
  } catch (err) {
    throw translateStoreError(t, err, meta.name!);
  }
}

/** Upstream's NamespaceLifecycle admission: no content in a missing or terminating namespace. */
function checkNamespaceOpen(p: RegistryParts, t: ResourceType, namespace: string, name: string): void {
  const nsObj = p.store.get('namespaces', '', namespace)?.object;
  if (!nsObj) throw notFound({ group: '', resource: 'namespaces' }, namespace);
  if (nsObj.metadata.deletionTimestamp || nsObj.status?.phase === 'Terminating') {
    throw forbidden(
      groupResource(t),
      name,
      `unable to create new content in namespace ${namespace} because it is being terminated`,
    );
  }
}

/** PUT: the decoded body replaces the object (or a subresource of it). */
export function updateObject(
  p: RegistryParts,
  t: ResourceType,
  namespace: string,
  name: string,
  body: unknown,
  options: SubresourceWriteOptions,
): WriteResult {
  const { object, warnings } = decodeObject(body, t, options.fieldValidation ?? 'Warn', p.kinds);
  const obj = t.toStorage ? t.toStorage(object) : object;
  if (obj.metadata.name && obj.metadata.name !== name) {
    throw badRequest(
      `the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`,
    );
  }
  if (t.namespaced && obj.metadata.namespace && obj.metadata.namespace !== ns(t, namespace)) {
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  return { object: replace(p, t, namespace, name, obj, options), warnings };
}

/** PATCH: the patch applied to the current object, then stored as an update would. */
export function patchObject(
  p: RegistryParts,
  t: ResourceType,
  namespace: string,
  name: string,
  type: PatchType,
  patch: unknown,
  options: SubresourceWriteOptions,
): WriteResult {
  if (type === 'apply') {
    throw new ApiError(
      415,
      'UnsupportedMediaType',
      'server-side apply (application/apply-patch+yaml) is not supported by this server; use client-side kubectl apply',
    );
  }
  const current = p.store.get(t.storage, ns(t, namespace), name);
  if (!current) throw notFound(groupResource(t), name);
  const versioned = toApi(t, current.object);
  let patched: unknown;
  switch (type) {
    case 'json':
      patched = applyJsonPatch(versioned, patch);
      break;
    case 'merge':
      patched = applyMergePatch(versioned, patch);
      break;
    case 'strategic':
      patched = applyStrategicMergePatch(versioned, patch, t.model);
      break;
  }
  if (isObject(patched) && isObject(patched.metadata)) {
    // A patch that does not mention resourceVersion applies to whatever is current.
    if (patched.metadata.resourceVersion === undefined)
      patched.metadata.resourceVersion = String(current.rev);
  }
  const { object, warnings } = decodeObject(patched, t, options.fieldValidation ?? 'Warn', p.kinds);
  const obj = t.toStorage ? t.toStorage(object) : object;
  if (obj.metadata.name !== name)
    throw badRequest(
      `the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`,
    );
  return { object: replace(p, t, namespace, name, obj, options), warnings };
}

function replace(
  p: RegistryParts,
  t: ResourceType,
  namespace: string,
  name: string,
  obj: KubeObject,
  options: SubresourceWriteOptions,
): KubeObject {
  const key = ns(t, namespace);
  const current = p.store.get(t.storage, key, name);
  if (!current) throw notFound(groupResource(t), name);
  const old = current.object;
  const meta = obj.metadata;
  if (meta.resourceVersion !== undefined && meta.resourceVersion !== '') {
    if (parseRevisionOr(meta.resourceVersion) !== current.rev)
      throw conflict(groupResource(t), name, staleObject);
  }
  if (meta.uid && meta.uid !== old.metadata.uid) {
    throw conflict(
      groupResource(t),
      name,
      `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${old.metadata.uid}`,
    );
  }
  meta.name = name;
  if (t.namespaced) meta.namespace = key;
  else delete meta.namespace;
  meta.uid = old.metadata.uid;
  meta.creationTimestamp = old.metadata.creationTimestamp;
  copyOrDelete(meta, old.metadata, 'deletionTimestamp');
  copyOrDelete(meta, old.metadata, 'deletionGracePeriodSeconds');
  copyOrDelete(meta, old.metadata, 'generation');
  delete meta.managedFields;
  delete meta.selfLink;

  let next: KubeObject;
  // Validated after admission, which may change the object (upstream: mutating admission, then validation).
  let validate: () => FieldError[];
  if (options.subresource === 'status') {
    next = t.strategy.prepareForStatusUpdate
      ? t.strategy.prepareForStatusUpdate(obj, structuredClone(old), p.context)
      : { ...structuredClone(old), status: obj.status };
    next.metadata.resourceVersion = old.metadata.resourceVersion;
    validate = () => t.strategy.validateStatusUpdate?.(next, old, p.context) ?? [];
  } else if (options.subresource) {
    const sub = options.subresource;
    const prepared = t.strategy.prepareForSubresourceUpdate?.(sub, obj, structuredClone(old), p.context);
    if (!prepared) throw notFound(groupResource(t), `${name}/${sub}`);
    next = prepared;
    next.metadata.resourceVersion = old.metadata.resourceVersion;
    validate = () => t.strategy.validateSubresourceUpdate?.(sub, next, old, p.context) ?? [];
  } else {
    if (t.statusSubresource) obj.status = old.status;
    t.strategy.prepareForUpdate?.(obj, structuredClone(old), p.context);
    next = obj;
    validate = () =>
      t.strategy.validateUpdate?.(next, old, p.context) ?? t.strategy.validate?.(next, p.context) ?? [];
  }
  const request = {
    user: options.user,
    dryRun: options.dryRun === true,
    name,
    subresource: options.subresource ?? '',
  };
  for (const plugin of p.admission) plugin.admitUpdate?.(t, next, old, p.context, request);
  mustBeValid(t, next, validate());
  next.metadata.resourceVersion = old.metadata.resourceVersion;
  const unchanged = canonicalJson(next) === canonicalJson(old);
  // An unchanged object is not written again, unless it is stored under an old encryption key.
  if (unchanged && !p.store.isStale(t.storage, key, name)) return toApi(t, old);
  if (options.dryRun) return toApi(t, next);
  // An object being deleted goes once its last finalizer is removed (and no grace period runs).
  const finalizing =
    next.metadata.deletionTimestamp &&
    (next.metadata.finalizers ?? []).length === 0 &&
    !next.metadata.deletionGracePeriodSeconds;
  try {
    if (finalizing) {
      const removed = p.store.delete(t.storage, key, name, current.rev, () => next);
      return toApi(t, removed.object);
    }
    const stored = p.store.update(t.storage, key, name, () => next, current.rev);
    return toApi(t, stored.object);
  } catch (err) {
    throw translateStoreError(t, err, name);
  }
}

/** `pods/binding`: assigns a pending pod to a node (the scheduler's write). */
export function bindPod(p: RegistryParts, namespace: string, name: string, binding: unknown): Status {
  const pods = p.byStorage('pods');
  if (
    !isObject(binding) ||
    !isObject(binding.target) ||
    typeof binding.target.name !== 'string' ||
    !binding.target.name
  ) {
    throw invalid('Binding', '', name, [{ field: 'target.name', message: 'Required value' }]);
  }
  const node = binding.target.name as string;
  const uid = isObject(binding.metadata) ? binding.metadata.uid : undefined;
  const current = p.store.get('pods', namespace, name);
  if (!current) throw notFound(groupResource(pods), name);
  const pod = current.object;
  if (uid && uid !== pod.metadata.uid) {
    throw conflict(
      groupResource(pods),
      name,
      `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${pod.metadata.uid}`,
    );
  }
  if (pod.metadata.deletionTimestamp) {
    throw conflict(groupResource(pods), name, 'pod is being deleted, cannot be assigned to a host');
  }
  if (pod.spec?.nodeName) {
    throw conflict(
      groupResource(pods),
      name,
      `pod ${name} is already assigned to node "${pod.spec.nodeName}"`,
    );
  }
  const now = rfc3339(p.clock.now());
  p.store.update(
    'pods',
    namespace,
    name,
    (p) => {
      p.spec.nodeName = node;
      const conditions: Record<string, any>[] = (p.status?.conditions ?? []).filter(
        (c: any) => c.type !== 'PodScheduled',
      );
      conditions.push({
        type: 'PodScheduled',
        status: 'True',
        lastProbeTime: null,
        lastTransitionTime: now,
      });
      p.status = { ...(p.status ?? {}), conditions };
      return p;
    },
    current.rev,
  );
  return { ...successStatus(), code: 201 };
}

/**
 * The `scale` subresource (autoscaling/v1 Scale) of Deployments and ReplicaSets, as upstream's
 * ScaleREST: a GET reads `spec.replicas`, `status.replicas` and the selector of the object; a PUT or a
 * PATCH of the Scale writes `spec.replicas` back through an ordinary update of the object (so the
 * strategy bumps its generation and the resourceVersion precondition holds).
 */
import { fieldInvalid } from '@nodelet/api';
import { isObject, type KubeObject } from '../object.js';
import { selectorString } from '../resources/pod-template.js';
import { applyJsonPatch, applyMergePatch, type PatchType } from './patch.js';
import type { Registry } from './registry.js';
import type { RequestUser, ResourceType } from './resource-type.js';
import { badRequest, invalid } from './status.js';

export function scaleOf(obj: KubeObject): KubeObject {
  const m = obj.metadata;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    spec: { replicas: obj.spec?.replicas ?? 0 },
    status: {
      replicas: obj.status?.replicas ?? 0,
      selector: selectorString(obj.spec?.selector).replace('<none>', ''),
    },
  };
}

export interface ScaleWrite {
  user?: RequestUser | undefined;
  dryRun?: boolean;
}

/** Stores `scale.spec.replicas` on the object; returns the new Scale. */
export function updateScale(
  registry: Registry,
  t: ResourceType,
  namespace: string,
  name: string,
  scale: unknown,
  options: ScaleWrite,
): KubeObject {
  if (!isObject(scale) || !isObject(scale.spec)) throw badRequest('the body is not a Scale');
  const current = registry.get(t, namespace, name);
  const replicas = scale.spec.replicas ?? 0;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
    throw invalid('Scale', 'autoscaling', name, [
      fieldInvalid('spec.replicas', replicas, 'must be greater than or equal to 0'),
    ]);
  }
  const next = structuredClone(current);
  next.spec = { ...(next.spec ?? {}), replicas };
  const rv = isObject(scale.metadata) ? scale.metadata.resourceVersion : undefined;
  if (typeof rv === 'string' && rv) next.metadata.resourceVersion = rv;
  const { object } = registry.update(t, namespace, name, next, {
    ...(options.user ? { user: options.user } : {}),
    dryRun: options.dryRun === true,
  });
  return scaleOf(object);
}

/** A patch of the Scale: applied to the current Scale, then stored as a PUT would. */
export function patchScale(
  registry: Registry,
  t: ResourceType,
  namespace: string,
  name: string,
  type: PatchType,
  patch: unknown,
  options: ScaleWrite,
): KubeObject {
  const current = scaleOf(registry.get(t, namespace, name));
  // A Scale has no lists, so a strategic merge patch is a merge patch.
  const patched = type === 'json' ? applyJsonPatch(current, patch) : applyMergePatch(current, patch);
  if (isObject(patched) && isObject(patched.metadata) && patch && isObject(patch)) {
    const given = isObject(patch.metadata) ? patch.metadata.resourceVersion : undefined;
    if (given === undefined) delete patched.metadata.resourceVersion;
  }
  return updateScale(registry, t, namespace, name, patched, options);
}

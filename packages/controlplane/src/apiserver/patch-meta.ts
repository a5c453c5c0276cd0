import { schemaFields } from '@nodelet/api';

/**
 * How strategic merge patch treats the lists of the served kinds: the `patchStrategy`/`patchMergeKey`
 * struct tags of the upstream Go types (k8s.io/api), by @kubernetes/client-node model class and field.
 * Lists not named here are atomic: a patch replaces them. The OpenAPI documents publish the same table as
 * `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`, so kubectl computes the patches this
 * server applies.
 */
export interface PatchMeta {
  /** `merge`, `retainKeys`, `merge,retainKeys` or `replace`. */
  strategy: string;
  /** The field that identifies an element of a list of objects. */
  mergeKey?: string;
}

const container: Record<string, PatchMeta> = {
  ports: { strategy: 'merge', mergeKey: 'containerPort' },
  env: { strategy: 'merge', mergeKey: 'name' },
  volumeMounts: { strategy: 'merge', mergeKey: 'mountPath' },
  volumeDevices: { strategy: 'merge', mergeKey: 'devicePath' },
};

export const patchMetaTable: Readonly<Record<string, Readonly<Record<string, PatchMeta>>>> = {
  V1ObjectMeta: {
    finalizers: { strategy: 'merge' },
    ownerReferences: { strategy: 'merge', mergeKey: 'uid' },
  },
  V1PodSpec: {
    containers: { strategy: 'merge', mergeKey: 'name' },
    initContainers: { strategy: 'merge', mergeKey: 'name' },
    ephemeralContainers: { strategy: 'merge', mergeKey: 'name' },
    volumes: { strategy: 'merge,retainKeys', mergeKey: 'name' },
    imagePullSecrets: { strategy: 'merge', mergeKey: 'name' },
    hostAliases: { strategy: 'merge', mergeKey: 'ip' },
    topologySpreadConstraints: { strategy: 'merge', mergeKey: 'topologyKey' },
    schedulingGates: { strategy: 'merge', mergeKey: 'name' },
    resourceClaims: { strategy: 'merge,retainKeys', mergeKey: 'name' },
  },
  V1Container: container,
  V1EphemeralContainer: container,
  V1PodStatus: {
    conditions: { strategy: 'merge', mergeKey: 'type' },
    podIPs: { strategy: 'merge', mergeKey: 'ip' },
    hostIPs: { strategy: 'merge', mergeKey: 'ip' },
    resourceClaimStatuses: { strategy: 'merge,retainKeys', mergeKey: 'name' },
  },
  V1ContainerStatus: {
    allocatedResourcesStatus: { strategy: 'merge', mergeKey: 'name' },
  },
  V1NodeSpec: {
    podCIDRs: { strategy: 'merge' },
  },
  V1NodeStatus: {
    conditions: { strategy: 'merge', mergeKey: 'type' },
    addresses: { strategy: 'merge', mergeKey: 'type' },
  },
  V1NamespaceStatus: {
    conditions: { strategy: 'merge', mergeKey: 'type' },
  },
  V1ServiceSpec: {
    ports: { strategy: 'merge', mergeKey: 'port' },
  },
  V1ServiceStatus: {
    conditions: { strategy: 'merge', mergeKey: 'type' },
  },
  V1ServiceAccount: {
    secrets: { strategy: 'merge', mergeKey: 'name' },
    imagePullSecrets: { strategy: 'merge', mergeKey: 'name' },
  },
};

export function patchMeta(model: string | undefined, field: string): PatchMeta | undefined {
  return model ? patchMetaTable[model]?.[field] : undefined;
}

const arrayType = /^Array<(.+)>$/;
const mapType = /^\{ \[key: string\]: (.+); \}$/;

/**
 * The model class of a field's value (`V1PodSpec`, `containers` → `V1Container`, the element type for a
 * list); undefined for scalars, maps and unknown fields.
 */
export function fieldModel(model: string | undefined, field: string): string | undefined {
  if (!model) return undefined;
  const attr = schemaFields(model)?.get(field);
  if (!attr) return undefined;
  let type = attr.type;
  const arr = arrayType.exec(type);
  if (arr) type = arr[1]!;
  if (mapType.test(type)) return undefined;
  return schemaFields(type) ? type : undefined;
}

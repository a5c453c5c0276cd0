import { isObject, type KubeObject } from '../object.js';
import { groupResource, type ResourceType } from '../apiserver/resource-type.js';
import { forbidden, notFound } from '../apiserver/status.js';
import { nodeIdentity } from '../authorization/node-authorizer.js';
import type { RevisionStore } from '../storage/revision-store.js';
import {
  isMirrorPod,
  mirrorPodAnnotation,
  type AdmissionPlugin,
  type AdmissionRequest,
  type AdmissionUpdate,
} from './admission.js';
import { podConfigMapNames, podSecretNames } from './pod-references.js';

/**
 * Upstream's NodeRestriction admission (plugin/pkg/admission/noderestriction): what the Node authorizer
 * cannot see because it is in the object. A kubelet (`system:node:<name>` in `system:nodes`) may
 *
 * - create only mirror pods, bound to itself, owned by its Node (controller reference with the Node's
 *   UID), referencing no ServiceAccount, Secret, ConfigMap, ClusterTrustBundle or PVC — so a node cannot
 *   use a static pod to read what it was not given; delete only pods bound to itself; update the status
 *   only of pods bound to itself, without touching their labels;
 * - create and change only its own Node, never its taints, nor labels under `node-restriction.kubernetes.io/`
 *   or `kubernetes.io`/`k8s.io` labels other than the kubelet's own;
 * - create and change only its own Lease in kube-node-lease;
 * - ask tokens only for pods bound to itself (tokenRequestAllowed, used by TokenRequest).
 *
 * Requests of other users are not restricted here.
 */
type Obj = Record<string, any>;

const nodeRestrictionNamespace = 'node-restriction.kubernetes.io';
/** The labels a kubelet sets on its Node (k8s.io/kubelet/pkg/apis: IsKubeletLabel). */
const kubeletLabels = new Set([
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
]);
const kubeletLabelNamespaces = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

const labelNamespace = (key: string) => (key.includes('/') ? key.slice(0, key.indexOf('/')) : '');
const within = (ns: string, domain: string) => ns === domain || ns.endsWith(`.${domain}`);

function isKubeletLabel(key: string): boolean {
  if (kubeletLabels.has(key)) return true;
  return kubeletLabelNamespaces.some((d) => within(labelNamespace(key), d));
}

/** Labels added, removed or changed between two label maps that a node may not touch, sorted. */
export function forbiddenNodeLabels(next: Obj | undefined, old: Obj | undefined): string[] {
  const a = next ?? {};
  const b = old ?? {};
  const modified = new Set<string>();
  for (const k of Object.keys(a)) if (!(k in b) || a[k] !== b[k]) modified.add(k);
  for (const k of Object.keys(b)) if (!(k in a) || a[k] !== b[k]) modified.add(k);
  return [...modified]
    .filter((key) => {
      const ns = labelNamespace(key);
      if (within(ns, nodeRestrictionNamespace)) return true;
      return (within(ns, 'kubernetes.io') || within(ns, 'k8s.io')) && !isKubeletLabel(key);
    })
    .sort();
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export class NodeRestrictionAdmission implements AdmissionPlugin {
  readonly name = 'NodeRestriction';

  constructor(private readonly store?: RevisionStore) {}

  admitCreate(t: ResourceType, obj: KubeObject, _ctx: unknown, request: AdmissionRequest): void {
    const node = request.user && nodeIdentity(request.user);
    if (node === undefined || node === '') return;
    const refuse = (why: string) => forbidden(groupResource(t), request.name, why);
    switch (t.storage) {
      case 'pods':
        return this.admitPodCreate(node, obj, refuse);
      case 'nodes':
        if (obj.metadata.name !== node)
          throw refuse(`node "${node}" is not allowed to modify node "${obj.metadata.name}"`);
        return this.checkLabels(node, obj.metadata.labels, undefined, refuse, 'set the following labels');
      case 'leases':
        if (obj.metadata.namespace !== 'kube-node-lease')
          throw refuse('can only access leases in the "kube-node-lease" system namespace');
        if (obj.metadata.name !== node)
          throw refuse('can only access node lease with the same name as the requesting node');
    }
  }

  admitUpdate(
    t: ResourceType,
    next: KubeObject,
    old: KubeObject,
    _ctx: unknown,
    request: AdmissionUpdate,
  ): void {
    const node = request.user && nodeIdentity(request.user);
    if (node === undefined || node === '') return;
    const refuse = (why: string) => forbidden(groupResource(t), request.name, why);
    switch (t.storage) {
      case 'pods':
        if (request.subresource !== 'status')
          throw refuse(
            `unexpected operation "UPDATE", node "${node}" can only create and delete mirror pods`,
          );
        if ((old.spec as Obj | undefined)?.nodeName !== node)
          throw refuse(`node "${node}" can only update pod status for pods with spec.nodeName set to itself`);
        if (!sameJson(old.metadata.labels ?? {}, next.metadata.labels ?? {}))
          throw refuse(`node "${node}" cannot update labels through pod status`);
        return;
      case 'nodes': {
        if (old.metadata.name !== node)
          throw refuse(`node "${node}" is not allowed to modify node "${old.metadata.name}"`);
        if (!sameJson((next.spec as Obj | undefined)?.taints, (old.spec as Obj | undefined)?.taints))
          throw refuse(`node "${node}" is not allowed to modify taints`);
        const labels = forbiddenNodeLabels(next.metadata.labels, old.metadata.labels);
        if (labels.length > 0) throw refuse(`is not allowed to modify labels: ${labels.join(', ')}`);
        return;
      }
      case 'leases':
        if (old.metadata.namespace !== 'kube-node-lease')
          throw refuse('can only access leases in the "kube-node-lease" system namespace');
        if (old.metadata.name !== node)
          throw refuse('can only access node lease with the same name as the requesting node');
    }
  }

  admitDelete(t: ResourceType, old: KubeObject, request: AdmissionRequest): void {
    const node = request.user && nodeIdentity(request.user);
    if (node === undefined || node === '') return;
    const refuse = (why: string) => forbidden(groupResource(t), request.name, why);
    switch (t.storage) {
      case 'pods':
        if ((old.spec as Obj | undefined)?.nodeName !== node)
          throw refuse(`node "${node}" can only delete pods with spec.nodeName set to itself`);
        return;
      case 'nodes':
        if (old.metadata.name !== node)
          throw refuse(`node "${node}" is not allowed to modify node "${old.metadata.name}"`);
        return;
      case 'leases':
        if (old.metadata.namespace !== 'kube-node-lease' || old.metadata.name !== node)
          throw refuse('can only access node lease with the same name as the requesting node');
    }
  }

  private checkLabels(
    node: string,
    next: Obj | undefined,
    old: Obj | undefined,
    refuse: (why: string) => Error,
    what: string,
  ): void {
    const labels = forbiddenNodeLabels(next, old);
    if (labels.length > 0) throw refuse(`node "${node}" is not allowed to ${what}: ${labels.join(', ')}`);
  }

  private admitPodCreate(node: string, pod: KubeObject, refuse: (why: string) => Error): void {
    if (!isMirrorPod(pod))
      throw refuse(
        `pod does not have "${mirrorPodAnnotation}" annotation, node "${node}" can only create mirror pods`,
      );
    const spec: Obj = isObject(pod.spec) ? (pod.spec as Obj) : {};
    if (spec.nodeName !== node)
      throw refuse(`node "${node}" can only create pods with spec.nodeName set to itself`);
    this.checkOwner(node, pod, refuse);
    if (spec.serviceAccountName)
      throw refuse(`node "${node}" can not create pods that reference a service account`);
    if (podSecretNames(spec).length > 0)
      throw refuse(`node "${node}" can not create pods that reference secrets`);
    if (podConfigMapNames(spec).length > 0)
      throw refuse(`node "${node}" can not create pods that reference configmaps`);
    const volumes = Array.isArray(spec.volumes) ? (spec.volumes as Obj[]) : [];
    if (volumes.some((v) => (v?.projected?.sources ?? []).some((s: Obj) => s?.clusterTrustBundle)))
      throw refuse(`node "${node}" can not create pods that reference clustertrustbundles`);
    if (volumes.some((v) => v?.persistentVolumeClaim))
      throw refuse(`node "${node}" can not create pods that reference persistentvolumeclaims`);
  }

  /** A mirror pod is owned by its Node: one controller reference naming the Node and its UID. */
  private checkOwner(node: string, pod: KubeObject, refuse: (why: string) => Error): void {
    const owners = (pod.metadata.ownerReferences ?? []) as Obj[];
    if (owners.length > 1)
      throw refuse(`node "${node}" can only create pods with a single owner reference set to itself`);
    const owner = owners[0];
    if (!owner || owner.apiVersion !== 'v1' || owner.kind !== 'Node' || owner.name !== node)
      throw refuse(`node "${node}" can only create pods with an owner reference set to itself`);
    if (owner.controller !== true)
      throw refuse(`node "${node}" can only create pods with a controller owner reference set to itself`);
    if (owner.blockOwnerDeletion === true)
      throw refuse(`node "${node}" must not set blockOwnerDeletion on an owner reference`);
    if (!this.store) return;
    const found = this.store.get('nodes', '', node)?.object;
    if (!found) throw notFound({ group: '', resource: 'nodes' }, node);
    if (owner.uid !== found.metadata.uid)
      throw refuse(`node ${node} UID mismatch: expected ${owner.uid} got ${found.metadata.uid}`);
  }
}

/**
 * Why a node may not have a token bound to `boundObjectRef` (upstream's admitServiceAccount), or
 * undefined when it may: the token must be bound to a pod, by UID, that is scheduled on the node.
 */
export function nodeTokenRefusal(
  node: string,
  ref: Obj | undefined,
  namespace: string,
  store: RevisionStore,
): { status: 403 | 404; message: string } | undefined {
  if (!ref || ref.apiVersion !== 'v1' || ref.kind !== 'Pod' || !ref.name)
    return { status: 403, message: 'node requested token not bound to a pod' };
  if (!ref.uid) return { status: 403, message: 'node requested token with a pod binding without a uid' };
  const pod = store.get('pods', namespace, String(ref.name))?.object;
  if (!pod) return { status: 404, message: `pods "${ref.name}" not found` };
  if (ref.uid !== pod.metadata.uid) {
    return {
      status: 403,
      message: `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
    };
  }
  if ((pod.spec as Obj | undefined)?.nodeName !== node)
    return { status: 403, message: 'node requested token bound to a pod scheduled on a different node' };
  return undefined;
}

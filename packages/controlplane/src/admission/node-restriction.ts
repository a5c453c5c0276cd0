import { isObject, type KubeObject } from '../object.js';
import type { ResourceType } from '../apiserver/resource-type.js';
import { forbidden } from '../apiserver/status.js';
import { isMirrorPod, type AdmissionPlugin, type AdmissionRequest } from './admission.js';
import { podConfigMapNames, podSecretNames } from './pod-references.js';

/**
 * The pod-creation part of upstream's NodeRestriction admission (plugin/pkg/admission/noderestriction)
 * that concerns mirror pods: a kubelet (a user `system:node:<name>` in `system:nodes`) creates the
 * mirror pod of a static pod on its own node, and that pod may reference no other API object — no
 * ServiceAccount, Secret, ConfigMap, ClusterTrustBundle or PersistentVolumeClaim — so a node cannot use a
 * static pod to read what it was not given. Pods created by other users, and a node's other requests,
 * are not restricted here (nodelet has no authorization yet).
 */
type Obj = Record<string, any>;

export class NodeRestrictionAdmission implements AdmissionPlugin {
  readonly name = 'NodeRestriction';

  admitCreate(t: ResourceType, pod: KubeObject, _ctx: unknown, request: AdmissionRequest): void {
    const user = request.user;
    if (t.storage !== 'pods' || !user?.name.startsWith('system:node:')) return;
    if (!user.groups.includes('system:nodes') || !isMirrorPod(pod) || !isObject(pod.spec)) return;
    const node = user.name.slice('system:node:'.length);
    const spec = pod.spec as Obj;
    const refuse = (why: string) => forbidden({ group: '', resource: 'pods' }, request.name, why);
    if (spec.nodeName !== node)
      throw refuse(`node "${node}" can only create pods with spec.nodeName set to itself`);
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
}

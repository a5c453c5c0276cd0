import { defaultVolumeFileMode } from '@nodelet/api';
import { isObject, type KubeObject } from '../object.js';
import type { ResourceType, StrategyContext } from '../apiserver/resource-type.js';
import { randomSuffix } from '../apiserver/registry-helpers.js';
import { forbidden } from '../apiserver/status.js';
import { isMirrorPod, type AdmissionPlugin, type AdmissionRequest } from './admission.js';
import { podSecretNames } from './pod-references.js';

/**
 * Upstream's ServiceAccount admission plugin (plugin/pkg/admission/serviceaccount), on pod creation:
 *
 * - `spec.serviceAccountName` defaults to `default`; a pod naming a ServiceAccount that does not exist
 *   is refused (403);
 * - unless `automountServiceAccountToken: false` (the pod's choice first, then its ServiceAccount's),
 *   every container and init container that mounts nothing at /var/run/secrets/kubernetes.io/serviceaccount
 *   gets a read-only mount there of a projected volume `kube-api-access-<5 chars>`: a bound token (the
 *   kubelet asks TokenRequest for it), the cluster CA (the `kube-root-ca.crt` ConfigMap) and the
 *   namespace (downward API);
 * - a pod without `imagePullSecrets` gets its ServiceAccount's;
 * - mirror pods are not changed (the kubelet would see a spec other than its static pod's) and are
 *   refused when they name a ServiceAccount, a Secret or a token projection.
 */
export const defaultServiceAccountName = 'default';
export const serviceAccountVolumePrefix = 'kube-api-access';
export const serviceAccountTokenMountPath = '/var/run/secrets/kubernetes.io/serviceaccount';
/** 1 h + 7 s: the expiry upstream asks for, which TokenRequest turns into a one-year token with `warnafter`. */
export const warnOnlyBoundTokenExpirationSeconds = 60 * 60 + 7;

export interface ServiceAccountAdmissionOptions {
  /**
   * Makes the namespace's `default` ServiceAccount now when it is missing (the controller that makes it
   * may not have run yet for a namespace created a moment ago: upstream retries the lookup for that case).
   */
  ensureDefaultServiceAccount?: (namespace: string) => void;
  /** The 5-character suffix of the volume name (tests pass a fixed one). */
  suffix?: () => string;
}

type Obj = Record<string, any>;

export class ServiceAccountAdmission implements AdmissionPlugin {
  readonly name = 'ServiceAccount';

  constructor(private readonly options: ServiceAccountAdmissionOptions = {}) {}

  admitCreate(t: ResourceType, pod: KubeObject, ctx: StrategyContext, request: AdmissionRequest): void {
    if (t.storage !== 'pods' || !isObject(pod.spec)) return;
    const spec = pod.spec as Obj;
    const refuse = (why: string) => forbidden({ group: '', resource: 'pods' }, request.name, why);
    if (isMirrorPod(pod)) {
      if (spec.serviceAccountName) throw refuse('a mirror pod may not reference service accounts');
      if (podSecretNames(spec).length > 0) throw refuse('a mirror pod may not reference secrets');
      const projections = (spec.volumes ?? []).flatMap((v: Obj) => v?.projected?.sources ?? []);
      if (projections.some((s: Obj) => s?.serviceAccountToken))
        throw refuse('a mirror pod may not use ServiceAccountToken volume projections');
      return;
    }
    const namespace = pod.metadata.namespace ?? '';
    spec.serviceAccountName ||= defaultServiceAccountName;
    spec.serviceAccount = spec.serviceAccountName;
    const name = spec.serviceAccountName as string;
    let sa = ctx.lookup('serviceaccounts', namespace, name);
    if (!sa && name === defaultServiceAccountName) {
      this.options.ensureDefaultServiceAccount?.(namespace);
      sa = ctx.lookup('serviceaccounts', namespace, name);
    }
    if (!sa) {
      throw refuse(
        `error looking up service account ${namespace}/${name}: serviceaccount "${name}" not found`,
      );
    }
    if (shouldAutomount(sa, spec)) this.mountToken(spec);
    if (!Array.isArray(spec.imagePullSecrets) || spec.imagePullSecrets.length === 0) {
      const fromAccount = (Array.isArray(sa.imagePullSecrets) ? sa.imagePullSecrets : []) as Obj[];
      if (fromAccount.length > 0) spec.imagePullSecrets = fromAccount.map((r) => ({ name: r.name }));
    }
  }

  private mountToken(spec: Obj): void {
    const volumes: Obj[] = Array.isArray(spec.volumes) ? spec.volumes : [];
    const existing = volumes.find(
      (v) => typeof v?.name === 'string' && v.name.startsWith(`${serviceAccountVolumePrefix}-`),
    );
    const volumeName =
      (existing?.name as string | undefined) ??
      `${serviceAccountVolumePrefix}-${(this.options.suffix ?? randomSuffix)()}`;
    let needed = false;
    for (const key of ['initContainers', 'containers']) {
      for (const c of Array.isArray(spec[key]) ? (spec[key] as Obj[]) : []) {
        if (!isObject(c)) continue;
        const mounts: Obj[] = Array.isArray(c.volumeMounts) ? c.volumeMounts : [];
        // A container that mounts something at the path keeps it.
        if (mounts.some((m) => m?.mountPath === serviceAccountTokenMountPath)) continue;
        c.volumeMounts = [
          ...mounts,
          { name: volumeName, readOnly: true, mountPath: serviceAccountTokenMountPath },
        ];
        needed = true;
      }
    }
    if (needed && !existing)
      spec.volumes = [...volumes, { name: volumeName, projected: tokenVolumeSource() }];
  }
}

/** The pod's `automountServiceAccountToken` wins, then the ServiceAccount's; the default is to mount. */
function shouldAutomount(sa: KubeObject, spec: Obj): boolean {
  if (typeof spec.automountServiceAccountToken === 'boolean') return spec.automountServiceAccountToken;
  if (typeof sa.automountServiceAccountToken === 'boolean') return sa.automountServiceAccountToken;
  return true;
}

/** The projected source of `kube-api-access-*`, with its defaults written out as upstream does. */
export function tokenVolumeSource(): Obj {
  return {
    defaultMode: defaultVolumeFileMode,
    sources: [
      { serviceAccountToken: { path: 'token', expirationSeconds: warnOnlyBoundTokenExpirationSeconds } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      {
        downwardAPI: {
          items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
        },
      },
    ],
  };
}

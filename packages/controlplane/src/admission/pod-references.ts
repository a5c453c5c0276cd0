/**
 * The Secrets and ConfigMaps a pod spec names (upstream's podutil.VisitPodSecretNames and
 * VisitPodConfigmapNames over all containers: regular, init and ephemeral), for the admission checks
 * that refuse mirror pods which reference them.
 */
type Obj = Record<string, any>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);

function containers(spec: Obj): Obj[] {
  return [...list(spec.initContainers), ...list(spec.containers), ...list(spec.ephemeralContainers)];
}

const named = (...names: unknown[]): string[] =>
  names.filter((n): n is string => typeof n === 'string' && n !== '');

/** Names of the Secrets the pod spec refers to, in any place a pod may name one. */
export function podSecretNames(spec: Obj): string[] {
  const out = named(...list(spec.imagePullSecrets).map((r) => r.name));
  for (const c of containers(spec)) {
    out.push(...named(...list(c.envFrom).map((e) => e.secretRef?.name)));
    out.push(...named(...list(c.env).map((e) => e.valueFrom?.secretKeyRef?.name)));
  }
  for (const v of list(spec.volumes)) {
    out.push(
      ...named(
        v.azureFile?.secretName,
        v.cephfs?.secretRef?.name,
        v.cinder?.secretRef?.name,
        v.flexVolume?.secretRef?.name,
        v.rbd?.secretRef?.name,
        v.secret?.secretName,
        v.scaleIO?.secretRef?.name,
        v.iscsi?.secretRef?.name,
        v.storageos?.secretRef?.name,
        v.csi?.nodePublishSecretRef?.name,
      ),
    );
    out.push(...named(...list(v.projected?.sources).map((s) => s.secret?.name)));
  }
  return out;
}

/** Names of the ConfigMaps the pod spec refers to. */
export function podConfigMapNames(spec: Obj): string[] {
  const out: string[] = [];
  for (const c of containers(spec)) {
    out.push(...named(...list(c.envFrom).map((e) => e.configMapRef?.name)));
    out.push(...named(...list(c.env).map((e) => e.valueFrom?.configMapKeyRef?.name)));
  }
  for (const v of list(spec.volumes)) {
    out.push(...named(v.configMap?.name));
    out.push(...named(...list(v.projected?.sources).map((s) => s.configMap?.name)));
  }
  return out;
}

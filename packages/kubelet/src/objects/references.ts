import type { Container, Pod, Volume } from '@nodelet/api';

/**
 * The ConfigMaps and Secrets a pod names (upstream podutil.VisitPodConfigmapNames and
 * VisitPodSecretNames): what the kubelet must watch while the pod runs. Every container counts (init,
 * regular and ephemeral: env and envFrom), every volume source that names one, and, for Secrets, the
 * pod's imagePullSecrets. Empty names (which validation once let through) are skipped.
 */
export function podConfigMapNames(pod: Pod): Set<string> {
  const names = new Set<string>();
  for (const c of allContainers(pod)) {
    for (const env of c.env ?? []) add(names, env.valueFrom?.configMapKeyRef?.name);
    for (const from of c.envFrom ?? []) add(names, from.configMapRef?.name);
  }
  for (const v of pod.spec?.volumes ?? []) {
    add(names, v.configMap?.name);
    for (const s of v.projected?.sources ?? []) add(names, s.configMap?.name);
  }
  return names;
}

export function podSecretNames(pod: Pod): Set<string> {
  const names = new Set<string>();
  for (const ref of pod.spec?.imagePullSecrets ?? []) add(names, ref.name);
  for (const c of allContainers(pod)) {
    for (const env of c.env ?? []) add(names, env.valueFrom?.secretKeyRef?.name);
    for (const from of c.envFrom ?? []) add(names, from.secretRef?.name);
  }
  for (const v of pod.spec?.volumes ?? []) for (const name of volumeSecretNames(v)) add(names, name);
  return names;
}

/** The Secrets a volume source names (the in-tree sources upstream visits, including legacy ones). */
function volumeSecretNames(v: Volume): (string | undefined)[] {
  return [
    v.secret?.secretName,
    ...(v.projected?.sources ?? []).map((s) => s.secret?.name),
    v.azureFile?.secretName,
    v.cephfs?.secretRef?.name,
    v.cinder?.secretRef?.name,
    v.flexVolume?.secretRef?.name,
    v.rbd?.secretRef?.name,
    v.scaleIO?.secretRef?.name,
    v.iscsi?.secretRef?.name,
    v.storageos?.secretRef?.name,
    v.csi?.nodePublishSecretRef?.name,
  ];
}

function allContainers(pod: Pod): Pick<Container, 'env' | 'envFrom'>[] {
  const spec = pod.spec;
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? []), ...(spec?.ephemeralContainers ?? [])];
}

function add(names: Set<string>, name: string | undefined): void {
  if (name) names.add(name);
}

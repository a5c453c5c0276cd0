import type { KubeObject } from '../object.js';
import { revisionHashLabel } from './controller-history.js';
import { isPodAvailable, isPodReady, podFromTemplate, type OwnerReference } from './pod-control.js';

/**
 * A StatefulSet pod's stable identity and health (upstream's pkg/controller/statefulset/stateful_set_utils.go):
 * the name `<set>-<ordinal>`, the `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`
 * labels, `spec.hostname` = the name and `spec.subdomain` = the governing Service, the revision it was
 * made from in `controller-revision-hash` (the revision's name).
 */
export const podNameLabel = 'statefulset.kubernetes.io/pod-name';
export const podIndexLabel = 'apps.kubernetes.io/pod-index';

/** The ordinal of a pod named `<set>-<n>` for this set, or undefined. */
export function ordinalOf(set: KubeObject, pod: KubeObject): number | undefined {
  const m = /^(.*)-([0-9]+)$/.exec(pod.metadata.name ?? '');
  if (!m || m[1] !== set.metadata.name) return undefined;
  const n = Number(m[2]);
  return Number.isSafeInteger(n) ? n : undefined;
}

export const podName = (set: KubeObject, ordinal: number) => `${set.metadata.name}-${ordinal}`;

/** Whether the pod carries its identity: labels, hostname and subdomain (identityMatches). */
export function identityMatches(set: KubeObject, pod: KubeObject, ordinal: number): boolean {
  const name = podName(set, ordinal);
  return (
    pod.metadata.name === name &&
    pod.metadata.labels?.[podNameLabel] === name &&
    pod.metadata.labels?.[podIndexLabel] === String(ordinal) &&
    (pod.spec?.hostname ?? '') === name &&
    (pod.spec?.subdomain ?? '') === (set.spec?.serviceName ?? '')
  );
}

/** The pod with its identity restored (updateIdentity), for an update. */
export function withIdentity(set: KubeObject, pod: KubeObject, ordinal: number): KubeObject {
  const next = structuredClone(pod);
  const name = podName(set, ordinal);
  next.metadata.labels = {
    ...(next.metadata.labels ?? {}),
    [podNameLabel]: name,
    [podIndexLabel]: String(ordinal),
  };
  next.spec = { ...(next.spec ?? {}), hostname: name };
  if (set.spec?.serviceName) next.spec.subdomain = set.spec.serviceName;
  else delete next.spec.subdomain;
  return next;
}

/** The pod for `ordinal` from `template`, labelled with `revision` (newVersionedStatefulSetPod). */
export function newStatefulSetPod(
  set: KubeObject,
  template: Record<string, any>,
  ordinal: number,
  revision: string,
  owner: OwnerReference,
): KubeObject {
  const pod = podFromTemplate(template, set.metadata.name!, owner) as KubeObject;
  delete pod.metadata.generateName;
  pod.metadata.name = podName(set, ordinal);
  pod.metadata.labels = { ...(pod.metadata.labels ?? {}), [revisionHashLabel]: revision };
  return withIdentity(set, pod, ordinal);
}

export const revisionOfPod = (pod: KubeObject): string | undefined =>
  pod.metadata.labels?.[revisionHashLabel];

/** Phase set: the API server made it (isCreated). */
export const isCreated = (pod: KubeObject) => !!pod.status?.phase;
export const isTerminating = (pod: KubeObject) => !!pod.metadata.deletionTimestamp;
export const isFinished = (pod: KubeObject) =>
  pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded';
export const isRunningAndReady = (pod: KubeObject) => pod.status?.phase === 'Running' && isPodReady(pod);

export function isRunningAndAvailable(pod: KubeObject, minReadySeconds: number, now: number): boolean {
  return pod.status?.phase === 'Running' && isPodAvailable(pod, minReadySeconds, now);
}

/** Running, ready for minReadySeconds and not terminating (isHealthy with availability). */
export function isHealthy(pod: KubeObject, minReadySeconds: number, now: number): boolean {
  return isRunningAndAvailable(pod, minReadySeconds, now) && !isTerminating(pod);
}

import type { KubeObject } from '../object.js';
import { revisionHashLabel } from './controller-history.js';
import { isPodAvailable, isPodReady, podFromTemplate, type OwnerReference } from './pod-control.js';

/**
 * A StatefulSet pod's stable identity and health (upstream's pkg/controller/statefulset/stateful_set_utils.go):
 * the name `<set>-<ordinal>`, the `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`
 * labels, `spec.hostname` = the name and `spec.subdomain` = the governing Service (when it names one), the revision it was
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

/** The labels that name a pod's place in its set. */
export function identityLabels(set: KubeObject, ordinal: number): Record<string, string> {
  return { [podNameLabel]: podName(set, ordinal), [podIndexLabel]: String(ordinal) };
}

/**
 * Whether the pod carries its identity labels (identityMatches). Hostname and subdomain are set when the
 * pod is made and are immutable after, so only the labels are checked and restored.
 */
export function identityMatches(set: KubeObject, pod: KubeObject, ordinal: number): boolean {
  const labels = pod.metadata.labels ?? {};
  return (
    pod.metadata.name === podName(set, ordinal) &&
    Object.entries(identityLabels(set, ordinal)).every(([k, v]) => labels[k] === v)
  );
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
  pod.metadata.labels = {
    ...(pod.metadata.labels ?? {}),
    [revisionHashLabel]: revision,
    ...identityLabels(set, ordinal),
  };
  pod.spec = { ...(pod.spec ?? {}), hostname: pod.metadata.name };
  if (set.spec?.serviceName) pod.spec.subdomain = set.spec.serviceName;
  return pod;
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

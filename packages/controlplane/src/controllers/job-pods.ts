import type { KubeObject } from '../object.js';
import { podFromTemplate, type OwnerReference } from './pod-control.js';

/**
 * What the Job controller reads from and writes onto its pods (upstream's pkg/controller/job:
 * indexed_job_utils.go, pod_failure_policy.go, backoff_utils.go): completion indexes, the failure policy's
 * verdict on a failed pod, when a pod finished, and the backoff before a failed pod is replaced.
 */
export const completionIndexKey = 'batch.kubernetes.io/job-completion-index';
/** Held on each pod of a Job until the Job has counted it (see job-tracking.ts). */
export const trackingFinalizer = 'batch.kubernetes.io/job-tracking';

/** The delay before re-creating pods after `failures` failures since the last success: 10 s doubling, 6 min cap. */
export const podFailureBackoff = { initialMs: 10_000, maxMs: 360_000 };

export function backoffDelay(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(podFailureBackoff.maxMs, podFailureBackoff.initialMs * 2 ** Math.min(failures - 1, 30));
}

/** The completion index a pod of an Indexed Job carries, or undefined. */
export function podIndex(pod: KubeObject, completions: number): number | undefined {
  const text = pod.metadata.annotations?.[completionIndexKey] ?? pod.metadata.labels?.[completionIndexKey];
  if (typeof text !== 'string' || !/^\d+$/.test(text)) return undefined;
  const i = Number(text);
  return i < completions ? i : undefined;
}

/** `status.completedIndexes`: sorted indexes as intervals, `1,3-5,7`. */
export function formatIndexes(indexes: Iterable<number>): string {
  const sorted = [...new Set(indexes)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/**
 * A pod of `job`: from its template, owned by it, held by the tracking finalizer; for an Indexed Job named `<job>-<index>-…`, with the
 * index as annotation, label and `JOB_COMPLETION_INDEX`, and hostname `<job>-<index>`.
 */
export function jobPod(job: KubeObject, owner: OwnerReference, index?: number): object {
  const name = job.metadata.name!;
  const pod = podFromTemplate(job.spec?.template ?? {}, name, owner) as KubeObject;
  pod.metadata.finalizers = [...(pod.metadata.finalizers ?? []), trackingFinalizer];
  if (index === undefined) return pod;
  const value = String(index);
  pod.metadata.generateName = `${name}-${value}-`;
  pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), [completionIndexKey]: value };
  pod.metadata.labels = { ...(pod.metadata.labels ?? {}), [completionIndexKey]: value };
  pod.spec.hostname ??= `${name}-${value}`;
  const env = {
    name: 'JOB_COMPLETION_INDEX',
    valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: `metadata.annotations['${completionIndexKey}']` } },
  };
  for (const c of [...(pod.spec.initContainers ?? []), ...(pod.spec.containers ?? [])]) {
    if ((c.env ?? []).some((e: { name: string }) => e.name === env.name)) continue;
    c.env = [...(c.env ?? []), structuredClone(env)];
  }
  return pod;
}

/** When a finished pod finished: its last container's finishedAt, or its Ready condition's last change. */
export function podFinishedAt(pod: KubeObject): number | undefined {
  let latest: number | undefined;
  for (const s of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
    const t = Date.parse(s.state?.terminated?.finishedAt ?? '');
    if (Number.isFinite(t) && (latest === undefined || t > latest)) latest = t;
  }
  if (latest !== undefined) return latest;
  const ready = (pod.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
  const t = Date.parse(ready?.lastTransitionTime ?? '');
  return Number.isFinite(t) ? t : undefined;
}

export type FailureVerdict =
  { action: 'FailJob'; message: string } | { action: 'Ignore' } | { action: 'Count' };

function exitCodeMatches(requirement: Record<string, any>, code: number): boolean {
  const values: number[] = Array.isArray(requirement.values) ? requirement.values : [];
  return requirement.operator === 'NotIn' ? !values.includes(code) : values.includes(code);
}

/**
 * The podFailurePolicy's verdict on a failed pod (matchPodFailurePolicy): the first rule whose exit
 * codes match a terminated container's non-zero code, or whose pod condition the pod has; no match counts.
 */
export function failurePolicyVerdict(job: KubeObject, pod: KubeObject): FailureVerdict {
  const rules: Record<string, any>[] = job.spec?.podFailurePolicy?.rules ?? [];
  const where = `${pod.metadata.namespace}/${pod.metadata.name}`;
  const statuses: Record<string, any>[] = [
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.containerStatuses ?? []),
  ];
  for (const [i, rule] of rules.entries()) {
    if (rule.onExitCodes) {
      const req = rule.onExitCodes;
      const hit = statuses.find((s) => {
        const code = s.state?.terminated?.exitCode;
        if (typeof code !== 'number' || code === 0) return false;
        if (req.containerName && req.containerName !== s.name) return false;
        return exitCodeMatches(req, code);
      });
      if (!hit) continue;
      if (rule.action === 'FailJob') {
        const code = hit.state.terminated.exitCode;
        return {
          action: 'FailJob',
          message: `Container ${hit.name} for pod ${where} failed with exit code ${code} matching FailJob rule at index ${i}`,
        };
      }
      return rule.action === 'Ignore' ? { action: 'Ignore' } : { action: 'Count' };
    }
    for (const want of rule.onPodConditions ?? []) {
      const has = (pod.status?.conditions ?? []).some(
        (c: any) => c.type === want.type && c.status === (want.status ?? 'True'),
      );
      if (!has) continue;
      if (rule.action === 'FailJob') {
        return {
          action: 'FailJob',
          message: `Pod ${where} has condition ${want.type} matching FailJob rule at index ${i}`,
        };
      }
      return rule.action === 'Ignore' ? { action: 'Ignore' } : { action: 'Count' };
    }
  }
  return { action: 'Count' };
}

/** Container restarts of the pods still running (pastBackoffLimitOnFailure, restartPolicy OnFailure). */
export function activeRestarts(pods: KubeObject[]): number {
  let n = 0;
  for (const p of pods) {
    if (p.status?.phase !== 'Running' && p.status?.phase !== 'Pending' && p.status?.phase !== undefined)
      continue;
    for (const s of [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])]) {
      n += s.restartCount ?? 0;
    }
  }
  return n;
}

import { rfc3339, type KubeObject } from '../object.js';

/**
 * A Job's conditions as upstream's job controller writes them (k8s ≥ 1.31): the interim
 * `SuccessCriteriaMet` / `FailureTarget` as soon as the outcome is known, the terminal `Complete` /
 * `Failed` once no pod of the Job runs; `Suspended` flips True and back to False.
 */
export interface JobCondition {
  type: string;
  status: 'True' | 'False';
  reason?: string;
  message?: string;
  lastProbeTime?: string;
  lastTransitionTime?: string;
}

export const reasons = {
  completions: { reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods' },
  backoffLimit: { reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' },
  deadline: { reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' },
  suspended: { reason: 'JobSuspended', message: 'Job suspended' },
  resumed: { reason: 'JobResumed', message: 'Job resumed' },
} as const;

export function findCondition(status: Record<string, any>, type: string): JobCondition | undefined {
  return ((status.conditions ?? []) as JobCondition[]).find((c) => c.type === type);
}

export function hasTrueCondition(status: Record<string, any> | undefined, type: string): boolean {
  return findCondition(status ?? {}, type)?.status === 'True';
}

/** Whether the Job has finished: Complete or Failed. */
export function isJobFinished(job: KubeObject): boolean {
  return hasTrueCondition(job.status, 'Complete') || hasTrueCondition(job.status, 'Failed');
}

/** When a finished Job finished: its completionTime, or when it became Failed. */
export function jobFinishedAt(job: KubeObject): number | undefined {
  const done = Date.parse(job.status?.completionTime ?? '');
  if (Number.isFinite(done)) return done;
  const failed = findCondition(job.status ?? {}, 'Failed');
  const t = Date.parse(failed?.status === 'True' ? (failed.lastTransitionTime ?? '') : '');
  return Number.isFinite(t) ? t : undefined;
}

/** Sets condition `type` (keeping its transition time when the status does not change). */
export function setCondition(
  status: Record<string, any>,
  type: string,
  value: 'True' | 'False',
  why: { reason: string; message: string },
  now: number,
): void {
  const conditions: JobCondition[] = status.conditions ?? [];
  const existing = conditions.find((c) => c.type === type);
  const at = rfc3339(now);
  if (existing) {
    if (existing.status === value && existing.reason === why.reason) return;
    Object.assign(existing, { status: value, ...why, lastProbeTime: at, lastTransitionTime: at });
  } else {
    conditions.push({ type, status: value, ...why, lastProbeTime: at, lastTransitionTime: at });
  }
  status.conditions = conditions;
}

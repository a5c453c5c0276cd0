import type { Clock, Logger } from '@nodelet/kernel';
import { rfc3339, type KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import {
  formatInZone,
  localTimeZone,
  parseCronSchedule,
  type CronSchedule,
} from '../resources/cron-schedule.js';
import type { EventRecorder } from './event-recorder.js';
import { controllerRef, controllerRefOf } from './pod-control.js';
import { hasTrueCondition, isJobFinished } from './job-status.js';
import { writeStatusIfChanged } from './status-write.js';
import { KeyedController } from './keyed-controller.js';
import { longestWaitMs } from './work-queue.js';

/**
 * The CronJob controller (upstream's pkg/controller/cronjob, the v2 controller): at each scheduled time
 * creates a Job `<cronjob>-<scheduled time in minutes since the epoch>` from the job template, and comes
 * back at the next one on the clock.
 *
 * - Only the most recent missed time runs (counted from lastScheduleTime or creation, and no earlier than
 *   `startingDeadlineSeconds` ago); more than 100 missed starts is a TooManyMissedTimes event.
 * - concurrencyPolicy: Allow runs Jobs side by side, Forbid skips a time while one runs (JobAlreadyActive),
 *   Replace deletes the running ones first.
 * - Status: `active` (its running Jobs), `lastScheduleTime`, `lastSuccessfulTime`; finished Jobs beyond
 *   successful/failedJobsHistoryLimit are deleted, oldest first. `suspend` stops new Jobs only.
 */
const apiVersion = 'batch/v1';
const kind = 'CronJob';
const tooManyMissed = 100;
const scheduledAnnotation = 'batch.kubernetes.io/cronjob-scheduled-timestamp';

export class CronJobController extends KeyedController {
  /** The one wake-up per CronJob at its next scheduled time (replaced, never stacked). */
  private readonly wakeups = new Map<string, () => void>();

  constructor(registry: Registry, clock: Clock, logger: Logger, events?: EventRecorder) {
    super(registry, clock, logger, events, 'cronjobs', 'cronjob');
  }

  protected override watchMore(): (() => void)[] {
    return [this.registry.store.subscribe('jobs', (e) => this.enqueueControllerOf(e, kind, 'batch'))];
  }

  override stop(): void {
    for (const cancel of this.wakeups.values()) cancel();
    this.wakeups.clear();
    super.stop();
  }

  /** One step: reconciles the CronJob `namespace/name`'s Jobs with its schedule and writes its status. */
  sync(key: string): void {
    this.wakeups.get(key)?.();
    this.wakeups.delete(key);
    const [namespace, name] = key.split('/') as [string, string];
    const cj = this.registry.store.get('cronjobs', namespace, name)?.object;
    if (!cj) return;
    const owned = this.registry.store
      .listAll('jobs', namespace)
      .map((s) => s.object)
      .filter((j) => controllerRefOf(j)?.uid === cj.metadata.uid);
    const status: Record<string, any> = structuredClone(cj.status ?? {});
    this.reconcileActive(cj, status, owned);
    if (!cj.metadata.deletionTimestamp) {
      const next = this.schedule(cj, status, owned);
      this.cleanupHistory(cj, owned);
      if (next !== undefined) this.wakeAt(key, next);
    }
    this.writeStatus(cj, status);
  }

  /** `status.active` as its Jobs are: finished and vanished ones out, running unlisted ones in. */
  private reconcileActive(cj: KubeObject, status: Record<string, any>, owned: KubeObject[]): void {
    const active: Record<string, any>[] = status.active ?? [];
    const byUid = new Map(owned.map((j) => [j.metadata.uid, j]));
    const kept = active.filter((ref) => {
      const job = byUid.get(ref.uid);
      if (!job) {
        this.events?.record(cj, 'Normal', 'MissingJob', `Active job went missing: ${ref.name}`);
        return false;
      }
      if (!isJobFinished(job)) return true;
      const condition = hasTrueCondition(job.status, 'Complete') ? 'Complete' : 'Failed';
      this.events?.record(
        cj,
        'Normal',
        'SawCompletedJob',
        `Saw completed job: ${job.metadata.name}, condition: ${condition}`,
      );
      return false;
    });
    for (const job of owned) {
      if (!isJobFinished(job) && !kept.some((r) => r.uid === job.metadata.uid)) kept.push(jobRef(job));
      const done = Date.parse(job.status?.completionTime ?? '');
      if (hasTrueCondition(job.status, 'Complete') && Number.isFinite(done)) {
        const last = Date.parse(status.lastSuccessfulTime ?? '');
        if (!Number.isFinite(last) || done > last) status.lastSuccessfulTime = rfc3339(done);
      }
    }
    if (kept.length) status.active = kept;
    else delete status.active;
  }

  /** Starts the Job due now, if any; returns when to come back (the next scheduled time), if ever. */
  private schedule(cj: KubeObject, status: Record<string, any>, owned: KubeObject[]): number | undefined {
    const spec = cj.spec ?? {};
    const zone: string = spec.timeZone ?? localTimeZone();
    let sched: CronSchedule;
    try {
      sched = parseCronSchedule(spec.schedule ?? '', zone);
    } catch (err) {
      const reason = spec.timeZone ? 'UnknownTimeZone' : 'UnparseableSchedule';
      this.events?.record(
        cj,
        'Warning',
        reason,
        `unparseable schedule: ${spec.schedule}: ${(err as Error).message}`,
      );
      return undefined;
    }
    const now = this.clock.now();
    const next = sched.next(now);
    if (spec.suspend) return undefined;
    const scheduled = this.mostRecent(cj, sched, now);
    if (scheduled === undefined) return next;
    const deadline = spec.startingDeadlineSeconds;
    if (typeof deadline === 'number' && scheduled + deadline * 1000 < now) {
      this.events?.record(
        cj,
        'Warning',
        'MissSchedule',
        `Missed scheduled time to start a job: ${rfc3339(scheduled)}`,
      );
      return next;
    }
    const jobName = `${cj.metadata.name}-${Math.floor(scheduled / 60_000)}`;
    const active: Record<string, any>[] = status.active ?? [];
    if (active.some((r) => r.name === jobName) || Date.parse(status.lastScheduleTime ?? '') === scheduled)
      return next;
    if (spec.concurrencyPolicy === 'Forbid' && active.length > 0) {
      this.events?.record(
        cj,
        'Normal',
        'JobAlreadyActive',
        'Not starting job because prior execution is running and concurrency policy is Forbid',
      );
      return next;
    }
    if (spec.concurrencyPolicy === 'Replace') {
      for (const ref of active) {
        const job = owned.find((j) => j.metadata.uid === ref.uid);
        if (job) this.deleteJob(cj, job);
      }
      delete status.active;
    }
    const created = this.createJob(cj, jobName, scheduled, zone);
    if (!created) return next;
    status.active = [...(status.active ?? []), jobRef(created)];
    status.lastScheduleTime = rfc3339(scheduled);
    return next;
  }

  /** The latest scheduled time not yet started (mostRecentScheduleTime), counting the ones missed. */
  private mostRecent(cj: KubeObject, sched: CronSchedule, now: number): number | undefined {
    let earliest = Date.parse(cj.status?.lastScheduleTime ?? cj.metadata.creationTimestamp ?? '');
    if (!Number.isFinite(earliest)) earliest = now;
    const deadline = cj.spec?.startingDeadlineSeconds;
    if (typeof deadline === 'number') earliest = Math.max(earliest, now - deadline * 1000);
    const t1 = sched.next(earliest);
    if (t1 === undefined || t1 > now) return undefined;
    const t2 = sched.next(t1);
    if (t2 === undefined || t2 > now) return t1;
    const interval = Math.max(1000, Math.round((t2 - t1) / 1000) * 1000);
    const missed = Math.floor((now - t1) / interval) + 1;
    if (missed > tooManyMissed) {
      this.events?.record(
        cj,
        'Warning',
        'TooManyMissedTimes',
        `too many missed start times: ${missed}. Set or decrease .spec.startingDeadlineSeconds or check clock skew`,
      );
    }
    return sched.prev(now);
  }

  private createJob(cj: KubeObject, name: string, scheduled: number, zone: string): KubeObject | undefined {
    const template = cj.spec?.jobTemplate ?? {};
    const body = {
      apiVersion,
      kind: 'Job',
      metadata: {
        name,
        ...(template.metadata?.labels ? { labels: { ...template.metadata.labels } } : {}),
        annotations: {
          ...(template.metadata?.annotations ?? {}),
          [scheduledAnnotation]: formatInZone(scheduled, zone),
        },
        ownerReferences: [controllerRef(cj, apiVersion, kind)],
      },
      spec: structuredClone(template.spec ?? {}),
    };
    try {
      const { object } = this.registry.create(this.registry.byStorage('jobs'), cj.metadata.namespace!, body);
      this.events?.record(cj, 'Normal', 'SuccessfulCreate', `Created job ${name}`);
      return object;
    } catch (err) {
      if (err instanceof ApiError && err.code === 409) {
        // Made by an earlier sync or someone else: ours only if this CronJob controls it.
        const existing = this.registry.store.get('jobs', cj.metadata.namespace!, name)?.object;
        return existing && controllerRefOf(existing)?.uid === cj.metadata.uid ? existing : undefined;
      }
      this.events?.record(cj, 'Warning', 'FailedCreate', `Error creating job: ${(err as Error).message}`);
      if (err instanceof ApiError && err.code === 403) return undefined;
      throw err;
    }
  }

  /** Deletes finished Jobs beyond the history limits, the oldest (by start time) first. */
  private cleanupHistory(cj: KubeObject, owned: KubeObject[]): void {
    const limits: [string, number | undefined][] = [
      ['Complete', cj.spec?.successfulJobsHistoryLimit],
      ['Failed', cj.spec?.failedJobsHistoryLimit],
    ];
    for (const [condition, limit] of limits) {
      if (typeof limit !== 'number') continue;
      const finished = owned.filter((j) => hasTrueCondition(j.status, condition)).sort(byStartTime);
      for (const job of finished.slice(0, Math.max(0, finished.length - limit))) this.deleteJob(cj, job);
    }
  }

  private deleteJob(cj: KubeObject, job: KubeObject): void {
    try {
      this.registry.delete(this.registry.byStorage('jobs'), job.metadata.namespace!, job.metadata.name!, {
        propagationPolicy: 'Background',
      });
      this.events?.record(cj, 'Normal', 'SuccessfulDelete', `Deleted job ${job.metadata.name}`);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }

  private wakeAt(key: string, at: number): void {
    // 100 ms past the scheduled time, as upstream, so the time has surely come; at most a day ahead.
    const cancel = this.clock.setTimeout(
      () => {
        this.wakeups.delete(key);
        this.queue.add(key);
      },
      Math.min(longestWaitMs, Math.max(0, at - this.clock.now()) + 100),
    );
    this.wakeups.set(key, cancel);
  }

  private writeStatus(cj: KubeObject, status: Record<string, any>): void {
    writeStatusIfChanged(this.registry, 'cronjobs', cj, status);
  }
}

function jobRef(job: KubeObject): Record<string, string> {
  return {
    kind: 'Job',
    namespace: job.metadata.namespace!,
    name: job.metadata.name!,
    uid: job.metadata.uid!,
    apiVersion,
    resourceVersion: job.metadata.resourceVersion!,
  };
}

/** Oldest first; a Job that has not started counts as the newest (upstream's byJobStartTime). */
function byStartTime(a: KubeObject, b: KubeObject): number {
  const ta = Date.parse(a.status?.startTime ?? '');
  const tb = Date.parse(b.status?.startTime ?? '');
  const fa = Number.isFinite(ta);
  const fb = Number.isFinite(tb);
  if (fa !== fb) return fa ? -1 : 1;
  if (!fa || ta === tb) return (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');
  return ta - tb;
}

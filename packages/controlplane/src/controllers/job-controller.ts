import type { Clock, Logger } from '@nodelet/kernel';
import { rfc3339, type KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import type { EventRecorder } from './event-recorder.js';
import { controllerRef, controllerRefOf, deletionOrder, isPodActive, isPodReady } from './pod-control.js';
import {
  activeRestarts,
  backoffDelay,
  failurePolicyVerdict,
  formatIndexes,
  jobPod,
  podFinishedAt,
  podIndex,
} from './job-pods.js';
import { hasTrueCondition, isJobFinished, reasons, setCondition } from './job-status.js';
import { countReleased, isTracked, parseIndexes, recordFinished, trackingFinalizer } from './job-tracking.js';
import { writeStatusIfChanged } from './status-write.js';
import { KeyedController } from './keyed-controller.js';

/**
 * The Job controller (upstream's pkg/controller/job): runs a Job's pods to completion.
 *
 * - Keeps up to `parallelism` pods running while completions remain (Indexed: one pod per index not yet
 *   succeeded, `<job>-<index>-…`); a failed pod is replaced after a backoff on the clock (10 s doubling
 *   to 6 min, counted from the last failure since the last success).
 * - Counts each finished pod once, through the job-tracking finalizer and `uncountedTerminatedPods`
 *   (job-tracking.ts); `podFailurePolicy` decides whether a failed pod fails the Job, is ignored or counts.
 * - Outcome: `FailureTarget` (BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy) or
 *   `SuccessCriteriaMet` (CompletionsReached); then its running pods are deleted, and once none is left,
 *   `Failed` or `Complete` (with completionTime). `suspend` deletes the running pods and resets startTime.
 */
const apiVersion = 'batch/v1';
const kind = 'Job';

interface Counts {
  active: KubeObject[];
  terminating: number;
  /** Succeeded pods counted (Indexed: completed indexes). */
  succeeded: number;
  succeededIndexes: Set<number>;
  /** Failed pods counted. */
  failedCount: number;
  /** The failed pods still present, for the backoff. */
  failed: KubeObject[];
  failJob?: string;
  lastSuccess: number;
}

export class JobController extends KeyedController {
  /** When a failed pod with no finish time was first seen (its backoff counts from then). */
  private readonly firstSeenFailed = new Map<string, number>();

  constructor(registry: Registry, clock: Clock, logger: Logger, events?: EventRecorder) {
    super(registry, clock, logger, events, 'jobs', 'job');
  }

  protected override watchMore(): (() => void)[] {
    return [this.registry.store.subscribe('pods', (e) => this.enqueueControllerOf(e, kind, 'batch'))];
  }

  /** One step: moves the Job `namespace/name` towards its outcome and writes its status. */
  sync(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    let job = this.registry.store.get('jobs', namespace, name)?.object;
    const owned = (uid: string | undefined) =>
      this.registry.store
        .listAll('pods', namespace)
        .map((s) => s.object)
        .filter((p) => {
          const ref = controllerRefOf(p);
          return ref?.kind === kind && ref.name === name && (uid === undefined || ref.uid === uid);
        });
    if (!job || isJobFinished(job) || job.metadata.deletionTimestamp) {
      // Nothing more to count: every pod of this name that the finalizer holds is let go.
      this.release(owned(undefined).filter(isTracked));
      return;
    }
    const now = this.clock.now();
    let pods = owned(job.metadata.uid);
    const status: Record<string, any> = structuredClone(job.status ?? {});
    const indexes = parseIndexes(status.completedIndexes);
    const release = recordFinished(job, pods, status, indexes);
    if (job.spec?.completionMode === 'Indexed') this.setIndexes(status, indexes);
    if (release.length > 0) {
      writeStatusIfChanged(this.registry, 'jobs', job, status);
      job = this.registry.store.get('jobs', namespace, name)?.object;
      if (!job) return;
      this.release(release);
      pods = owned(job.metadata.uid);
    }
    const stillTracked = new Set(pods.filter(isTracked).map((p) => p.metadata.uid));
    countReleased(status, (uid) => stillTracked.has(uid));
    const counts = this.count(job, pods, status, now);
    if (!job.metadata.deletionTimestamp) this.decide(job, status, counts, now);
    this.writeStatus(job, status, counts);
    const deadline = job.spec?.activeDeadlineSeconds;
    const started = Date.parse(status.startTime ?? '');
    if (typeof deadline === 'number' && Number.isFinite(started) && !isJobFinished({ ...job, status })) {
      this.queue.addAfter(key, Math.max(0, started + deadline * 1000 - now));
    }
  }

  /** Running pods, and the failed pods and last success the backoff is measured from. */
  private count(job: KubeObject, pods: KubeObject[], status: Record<string, any>, now: number): Counts {
    const indexed = job.spec?.completionMode === 'Indexed';
    const c: Counts = {
      active: [],
      terminating: 0,
      succeeded: 0,
      succeededIndexes: parseIndexes(status.completedIndexes),
      failedCount: status.failed ?? 0,
      failed: [],
      lastSuccess: 0,
    };
    c.succeeded = indexed ? c.succeededIndexes.size : (status.succeeded ?? 0);
    for (const pod of pods) {
      const phase = pod.status?.phase;
      if (phase === 'Succeeded') {
        c.lastSuccess = Math.max(c.lastSuccess, podFinishedAt(pod) ?? 0);
      } else if (phase === 'Failed') {
        const verdict = failurePolicyVerdict(job, pod);
        if (verdict.action === 'Ignore') continue;
        if (verdict.action === 'FailJob') c.failJob ??= verdict.message;
        c.failed.push(pod);
        const uid = pod.metadata.uid!;
        if (podFinishedAt(pod) === undefined && !this.firstSeenFailed.has(uid))
          this.firstSeenFailed.set(uid, now);
      } else if (pod.metadata.deletionTimestamp) c.terminating++;
      else if (isPodActive(pod)) c.active.push(pod);
    }
    return c;
  }

  private setIndexes(status: Record<string, any>, indexes: Set<number>): void {
    const text = formatIndexes(indexes);
    if (text) status.completedIndexes = text;
    else delete status.completedIndexes;
  }

  /** Removes the tracking finalizer from `pods` (a pod being deleted then goes). */
  private release(pods: KubeObject[]): void {
    const podType = this.registry.byStorage('pods');
    for (const pod of pods) {
      const current = this.registry.store.get('pods', pod.metadata.namespace!, pod.metadata.name!)?.object;
      if (!current || !isTracked(current)) continue;
      const finalizers = (current.metadata.finalizers ?? []).filter((f: string) => f !== trackingFinalizer);
      const metadata: KubeObject['metadata'] = { ...current.metadata, finalizers };
      if (finalizers.length === 0) delete metadata.finalizers;
      try {
        this.registry.update(podType, pod.metadata.namespace!, pod.metadata.name!, { ...current, metadata });
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
  }

  /** Conditions, pod creation and deletion: everything but the counts. */
  private decide(job: KubeObject, status: Record<string, any>, c: Counts, now: number): void {
    const spec = job.spec ?? {};
    const failed = c.failedCount;
    if (!spec.suspend && !status.startTime) status.startTime = rfc3339(now);
    if (!hasTrueCondition(status, 'FailureTarget') && !hasTrueCondition(status, 'SuccessCriteriaMet')) {
      const started = Date.parse(status.startTime ?? '');
      const pastDeadline =
        typeof spec.activeDeadlineSeconds === 'number' &&
        Number.isFinite(started) &&
        now - started >= spec.activeDeadlineSeconds * 1000;
      const backoffLimit: number = spec.backoffLimit ?? 6;
      const restarts = spec.template?.spec?.restartPolicy === 'OnFailure' ? activeRestarts(c.active) : 0;
      const pastBackoff = failed > backoffLimit || (restarts > 0 && restarts >= Math.max(backoffLimit, 1));
      const done =
        typeof spec.completions === 'number'
          ? c.succeeded >= spec.completions
          : c.succeeded > 0 && c.active.length === 0;
      if (c.failJob)
        setCondition(
          status,
          'FailureTarget',
          'True',
          { reason: 'PodFailurePolicy', message: c.failJob },
          now,
        );
      else if (pastBackoff) setCondition(status, 'FailureTarget', 'True', reasons.backoffLimit, now);
      else if (pastDeadline && !spec.suspend)
        setCondition(status, 'FailureTarget', 'True', reasons.deadline, now);
      else if (done) setCondition(status, 'SuccessCriteriaMet', 'True', reasons.completions, now);
    }
    const failing = status.conditions?.find((x: any) => x.type === 'FailureTarget' && x.status === 'True');
    const succeeding = hasTrueCondition(status, 'SuccessCriteriaMet');
    if (failing || succeeding) {
      this.deletePods(job, c.active);
      c.terminating += c.active.length;
      c.active = [];
      if (c.terminating > 0) return;
      if (failing) {
        setCondition(status, 'Failed', 'True', { reason: failing.reason, message: failing.message }, now);
        this.events?.record(job, 'Warning', failing.reason, failing.message);
      } else {
        setCondition(status, 'Complete', 'True', reasons.completions, now);
        status.completionTime = rfc3339(now);
        this.events?.record(job, 'Normal', 'Completed', 'Job completed');
      }
      return;
    }
    if (spec.suspend) {
      this.deletePods(job, c.active);
      c.terminating += c.active.length;
      c.active = [];
      if (!hasTrueCondition(status, 'Suspended')) {
        setCondition(status, 'Suspended', 'True', reasons.suspended, now);
        delete status.startTime;
        this.events?.record(job, 'Normal', 'Suspended', 'Job suspended');
      }
      return;
    }
    if (hasTrueCondition(status, 'Suspended')) {
      setCondition(status, 'Suspended', 'False', reasons.resumed, now);
      this.events?.record(job, 'Normal', 'Resumed', 'Job resumed');
    }
    this.managePods(job, c, now);
  }

  /** Creates or deletes pods so that as many run as parallelism and the remaining completions allow. */
  private managePods(job: KubeObject, c: Counts, now: number): void {
    const spec = job.spec ?? {};
    const parallelism: number = spec.parallelism ?? 1;
    const remaining =
      typeof spec.completions === 'number'
        ? spec.completions - c.succeeded
        : c.succeeded > 0
          ? 0
          : parallelism;
    const want = Math.max(0, Math.min(parallelism, remaining));
    if (c.active.length > want) {
      const surplus = deletionOrder(c.active).slice(0, c.active.length - want);
      this.deletePods(job, surplus);
      c.active = c.active.filter((p) => !surplus.includes(p));
      c.terminating += surplus.length;
      return;
    }
    if (c.active.length === want) return;
    const since = c.failed.filter((p) => this.finishedAt(p) > c.lastSuccess);
    if (since.length > 0) {
      const last = Math.max(...since.map((p) => this.finishedAt(p)));
      const wait = last + backoffDelay(since.length) - now;
      if (wait > 0) {
        this.queue.addAfter(`${job.metadata.namespace}/${job.metadata.name}`, wait);
        return;
      }
    }
    const indexes = this.pendingIndexes(job, c, want - c.active.length);
    const podType = this.registry.byStorage('pods');
    const ref = controllerRef(job, apiVersion, kind);
    for (const index of indexes) {
      try {
        const { object } = this.registry.create(podType, job.metadata.namespace!, jobPod(job, ref, index));
        c.active.push(object);
        this.events?.record(job, 'Normal', 'SuccessfulCreate', `Created pod: ${object.metadata.name}`);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        this.events?.record(job, 'Warning', 'FailedCreate', `Error creating: ${message}`);
        if (err instanceof ApiError && err.code === 403) return;
        throw err;
      }
    }
  }

  /** `n` slots to fill: for an Indexed Job the lowest indexes neither succeeded nor running. */
  private pendingIndexes(job: KubeObject, c: Counts, n: number): (number | undefined)[] {
    if (job.spec?.completionMode !== 'Indexed') return Array.from({ length: n }, () => undefined);
    const completions: number = job.spec.completions;
    const taken = new Set(c.succeededIndexes);
    for (const p of c.active) {
      const i = podIndex(p, completions);
      if (i !== undefined) taken.add(i);
    }
    const out: number[] = [];
    for (let i = 0; i < completions && out.length < n; i++) if (!taken.has(i)) out.push(i);
    return out;
  }

  private finishedAt(pod: KubeObject): number {
    return podFinishedAt(pod) ?? this.firstSeenFailed.get(pod.metadata.uid!) ?? 0;
  }

  /**
   * Deletes pods the Job no longer wants (suspend, surplus, the Job's end). As upstream's deleteJobPods,
   * each is let go first (the tracking finalizer removed), so it never counts as failed — also after a
   * restart of the controller, with nothing to remember in memory.
   */
  private deletePods(job: KubeObject, pods: KubeObject[]): void {
    const podType = this.registry.byStorage('pods');
    for (const pod of pods) {
      try {
        this.release([pod]);
        this.registry.delete(podType, pod.metadata.namespace!, pod.metadata.name!);
        this.events?.record(job, 'Normal', 'SuccessfulDelete', `Deleted pod: ${pod.metadata.name}`);
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
  }

  private writeStatus(job: KubeObject, status: Record<string, any>, c: Counts): void {
    for (const field of ['active', 'succeeded', 'failed'] as const) {
      const n = field === 'active' ? c.active.length : (status[field] ?? 0);
      if (n > 0) status[field] = n;
      else delete status[field];
    }
    status.ready = c.active.filter(isPodReady).length;
    status.terminating = c.terminating;
    writeStatusIfChanged(this.registry, 'jobs', job, status);
  }
}

import type { KubeObject } from '../object.js';
import { failurePolicyVerdict, podIndex, trackingFinalizer } from './job-pods.js';

/**
 * Counting a Job's finished pods exactly once (upstream's job tracking with finalizers): the controller
 * creates pods with the `batch.kubernetes.io/job-tracking` finalizer, so none can vanish uncounted. A
 * pod that finished is (1) recorded by uid in `status.uncountedTerminatedPods` (its index already in
 * `completedIndexes`), (2) let go — the finalizer removed — and (3) moved from there into `succeeded` or
 * `failed`. A restart between the steps repeats the step it was in, never counting a pod twice.
 */
export { trackingFinalizer };

export const isTracked = (pod: KubeObject): boolean =>
  (pod.metadata.finalizers ?? []).includes(trackingFinalizer);

interface Uncounted {
  succeeded?: string[];
  failed?: string[];
}

/** `1,3-5,7` → {1, 3, 4, 5, 7}. */
export function parseIndexes(text: string | undefined): Set<number> {
  const out = new Set<number>();
  for (const part of (text ?? '').split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) continue;
    const last = Number(m[2] ?? m[1]);
    for (let i = Number(m[1]); i <= last; i++) out.add(i);
  }
  return out;
}

/**
 * Whether a pod has finished, and how: its phase, or Failed for a pod being deleted before it succeeded
 * (isPodFailed: it may never reach a phase; with a podFailurePolicy only an unscheduled one, which
 * upstream's pod garbage collector would mark Failed).
 */
function finishedPhase(job: KubeObject, pod: KubeObject): 'Succeeded' | 'Failed' | undefined {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return phase;
  if (!pod.metadata.deletionTimestamp) return undefined;
  return job.spec?.podFailurePolicy && pod.spec?.nodeName ? undefined : 'Failed';
}

/**
 * Step 1: the finished pods still holding the finalizer go into `status.uncountedTerminatedPods` (an
 * Indexed Job's succeeded index into `indexes`); returns every finished pod to let go — also those that
 * count for nothing (ignored by the failure policy, or out of the Job's indexes).
 */
export function recordFinished(
  job: KubeObject,
  pods: KubeObject[],
  status: Record<string, any>,
  indexes: Set<number>,
): KubeObject[] {
  const uncounted: Uncounted = status.uncountedTerminatedPods ?? {};
  const known = new Set([...(uncounted.succeeded ?? []), ...(uncounted.failed ?? [])]);
  const indexed = job.spec?.completionMode === 'Indexed';
  const release: KubeObject[] = [];
  for (const pod of pods) {
    const phase = finishedPhase(job, pod);
    if (!phase || !isTracked(pod)) continue;
    release.push(pod);
    const uid = pod.metadata.uid!;
    // Pods the controller deleted itself (suspend, surplus, the Job's end) were let go first: not here.
    if (known.has(uid)) continue;
    if (phase === 'Succeeded') {
      const index = indexed ? podIndex(pod, job.spec?.completions ?? 0) : undefined;
      if (indexed && index === undefined) continue;
      if (index !== undefined) indexes.add(index);
      uncounted.succeeded = [...(uncounted.succeeded ?? []), uid];
    } else if (failurePolicyVerdict(job, pod).action !== 'Ignore') {
      uncounted.failed = [...(uncounted.failed ?? []), uid];
    }
  }
  status.uncountedTerminatedPods = uncounted;
  return release;
}

/** Step 3: the uids whose pods no longer hold the finalizer (or are gone) move into the counters. */
export function countReleased(status: Record<string, any>, stillTracked: (uid: string) => boolean): void {
  const uncounted: Uncounted = status.uncountedTerminatedPods ?? {};
  for (const field of ['succeeded', 'failed'] as const) {
    const waiting = uncounted[field] ?? [];
    const counted = waiting.filter((uid) => !stillTracked(uid));
    status[field] = (status[field] ?? 0) + counted.length;
    const left = waiting.filter((uid) => stillTracked(uid));
    if (left.length) uncounted[field] = left;
    else delete uncounted[field];
  }
  status.uncountedTerminatedPods = uncounted;
}

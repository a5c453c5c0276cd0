import type { KubeObject } from '../object.js';
import { rfc3339 } from '../object.js';
import { scaledValue } from './deployment-util.js';
import { isPodReady } from './pod-control.js';

/**
 * The arithmetic of a PodDisruptionBudget's status (upstream's pkg/controller/disruption and
 * component-helpers/apps/poddisruptionbudget), as pure functions the controller and the eviction handler
 * share.
 */

/** How long an evicted pod counts as disrupted before the controller assumes its deletion never came. */
export const deletionTimeoutMs = 2 * 60_000;

export interface ExpectedCount {
  expectedPods: number;
  desiredHealthy: number;
}

/**
 * getExpectedPodCount: an integer minAvailable is the desired count over the selected pods; a percentage
 * minAvailable or any maxUnavailable is scaled against `scale()` — the sum of the pods' controllers'
 * replicas (which throws when a pod has no controller the server knows).
 */
export function expectedCount(pdb: KubeObject, pods: KubeObject[], scale: () => number): ExpectedCount {
  const { minAvailable, maxUnavailable } = pdb.spec ?? {};
  if (maxUnavailable !== undefined && maxUnavailable !== null) {
    const expectedPods = scale();
    const desiredHealthy = Math.max(0, expectedPods - scaledValue(maxUnavailable, expectedPods, true));
    return { expectedPods, desiredHealthy };
  }
  if (typeof minAvailable === 'number') return { expectedPods: pods.length, desiredHealthy: minAvailable };
  if (typeof minAvailable === 'string') {
    const expectedPods = scale();
    return { expectedPods, desiredHealthy: scaledValue(minAvailable, expectedPods, true) };
  }
  return { expectedPods: 0, desiredHealthy: 0 };
}

/**
 * buildDisruptedPodMap: the evictions still expected to turn into deletions (pods not yet marked deleted,
 * evicted less than the deletion timeout ago), and when the oldest of them times out.
 */
export function pendingDisruptions(
  pdb: KubeObject,
  pods: KubeObject[],
  now: number,
): { disruptedPods: Record<string, string>; recheckAt: number | undefined } {
  const recorded: Record<string, string> = pdb.status?.disruptedPods ?? {};
  const disruptedPods: Record<string, string> = {};
  let recheckAt: number | undefined;
  for (const pod of pods) {
    if (pod.metadata.deletionTimestamp) continue;
    const at = recorded[pod.metadata.name!];
    if (at === undefined) continue;
    const expires = Date.parse(at) + deletionTimeoutMs;
    // Due exactly now counts as expired, so the recheck at that instant makes progress.
    if (expires <= now) continue;
    disruptedPods[pod.metadata.name!] = at;
    if (recheckAt === undefined || expires < recheckAt) recheckAt = expires;
  }
  return { disruptedPods, recheckAt };
}

/** countHealthyPods: Ready, not being deleted, not just evicted. */
export function countHealthy(pods: KubeObject[], disruptedPods: Record<string, string>, now: number): number {
  return pods.filter((pod) => {
    if (pod.metadata.deletionTimestamp) return false;
    const at = disruptedPods[pod.metadata.name!];
    if (at !== undefined && Date.parse(at) + deletionTimeoutMs > now) return false;
    return isPodReady(pod);
  }).length;
}

/**
 * The `DisruptionAllowed` condition for `status` (UpdateDisruptionAllowedCondition): True/SufficientPods
 * when a disruption is allowed, False/InsufficientPods otherwise; the transition time moves only when the
 * status does (meta.SetStatusCondition).
 */
export function disruptionAllowedCondition(
  pdb: KubeObject,
  status: Record<string, any>,
  now: number,
  failure?: string,
): Record<string, unknown>[] {
  const allowed = (status.disruptionsAllowed ?? 0) > 0 && failure === undefined;
  const next = {
    type: 'DisruptionAllowed',
    status: allowed ? 'True' : 'False',
    reason: failure !== undefined ? 'SyncFailed' : allowed ? 'SufficientPods' : 'InsufficientPods',
    message: failure ?? '',
    observedGeneration: status.observedGeneration ?? pdb.status?.observedGeneration ?? 0,
  };
  const conditions: Record<string, any>[] = Array.isArray(status.conditions) ? status.conditions : [];
  const old = conditions.find((c) => c.type === 'DisruptionAllowed');
  const lastTransitionTime = old && old.status === next.status ? old.lastTransitionTime : rfc3339(now);
  const condition = { ...next, lastTransitionTime };
  return old
    ? conditions.map((c) => (c.type === 'DisruptionAllowed' ? condition : c))
    : [...conditions, condition];
}

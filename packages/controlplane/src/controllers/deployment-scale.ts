import type { KubeObject } from '../object.js';
import { desiredReplicasAnnotation, maxReplicasAnnotation, resolveFenceposts } from './deployment-util.js';

/**
 * Upstream's `scale` of a Deployment (pkg/controller/deployment/sync.go) as a pure function: the new size
 * of each ReplicaSet when spec.replicas changed. One active ReplicaSet (or none: the newest) simply takes
 * spec.replicas; a saturated new one leaves the old ones at zero; otherwise, for RollingUpdate, the
 * replicas to add (or remove) are shared in proportion to each ReplicaSet's size against the
 * `max-replicas` it was last scaled for, leftovers to the largest.
 */
const specOf = (rs: KubeObject): number => rs.spec?.replicas ?? 0;
const created = (rs: KubeObject): number => Date.parse(rs.metadata.creationTimestamp ?? '') || 0;

/** isScalingEvent: an active ReplicaSet was last sized for another spec.replicas. */
export function isScalingEvent(d: KubeObject, all: KubeObject[]): boolean {
  return all.some((rs) => {
    const desired = rs.metadata.annotations?.[desiredReplicasAnnotation];
    return specOf(rs) > 0 && desired !== undefined && Number(desired) !== (d.spec?.replicas ?? 1);
  });
}

function maxSurge(d: KubeObject): number {
  return d.spec?.strategy?.type === 'RollingUpdate' ? resolveFenceposts(d).maxSurge : 0;
}

/** getReplicaSetFraction: how many replicas `rs` gains (or loses) at the Deployment's new size. */
function fraction(rs: KubeObject, d: KubeObject): number {
  const replicas = d.spec?.replicas ?? 1;
  if (replicas === 0) return -specOf(rs);
  let before = Number(rs.metadata.annotations?.[maxReplicasAnnotation] ?? 0) || 0;
  if (before === 0) before = d.status?.replicas ?? 0;
  if (before === 0) return 0;
  return Math.round((specOf(rs) * (replicas + maxSurge(d))) / before) - specOf(rs);
}

/** Target sizes by ReplicaSet uid; empty when nothing is to be scaled. */
export function scaleTargets(
  d: KubeObject,
  newRS: KubeObject | undefined,
  old: KubeObject[],
): Map<string, number> {
  const out = new Map<string, number>();
  const replicas = d.spec?.replicas ?? 1;
  const all = newRS ? [...old, newRS] : old;
  if (all.length === 0) return out;
  const active = all.filter((rs) => specOf(rs) > 0);
  // FindActiveOrLatest.
  const latest = newRS ?? [...old].sort((a, b) => created(b) - created(a))[0]!;
  const only = active.length === 1 ? active[0] : active.length === 0 ? latest : undefined;
  if (only) {
    if (specOf(only) !== replicas) out.set(only.metadata.uid!, replicas);
    return out;
  }
  const saturated =
    newRS !== undefined &&
    specOf(newRS) === replicas &&
    newRS.metadata.annotations?.[desiredReplicasAnnotation] === String(replicas) &&
    (newRS.status?.availableReplicas ?? 0) === replicas;
  if (saturated) {
    for (const rs of old) if (specOf(rs) > 0) out.set(rs.metadata.uid!, 0);
    return out;
  }
  if (d.spec?.strategy?.type !== 'RollingUpdate') return out;
  const allowed = replicas > 0 ? replicas + maxSurge(d) : 0;
  const toAdd = allowed - active.reduce((n, rs) => n + specOf(rs), 0);
  if (toAdd === 0) return out;
  // Bigger first; on a tie newer first when adding, older first when removing.
  const sorted = [...active].sort(
    (a, b) => specOf(b) - specOf(a) || (toAdd > 0 ? created(b) - created(a) : created(a) - created(b)),
  );
  let added = 0;
  const size = new Map<string, number>();
  for (const rs of sorted) {
    let p = 0;
    if (specOf(rs) > 0 && toAdd !== added) {
      const f = fraction(rs, d);
      p = toAdd > 0 ? Math.min(f, toAdd - added) : Math.max(f, toAdd - added);
    }
    size.set(rs.metadata.uid!, specOf(rs) + p);
    added += p;
  }
  const first = sorted[0]!.metadata.uid!;
  size.set(first, Math.max(0, size.get(first)! + toAdd - added));
  for (const rs of sorted) out.set(rs.metadata.uid!, size.get(rs.metadata.uid!)!);
  return out;
}

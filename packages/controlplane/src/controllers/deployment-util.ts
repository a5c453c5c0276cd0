import { canonicalJson } from '@nodelet/api';
import type { KubeObject } from '../object.js';
import { rfc3339 } from '../object.js';

/**
 * Deployment arithmetic from upstream's pkg/controller/deployment/util: the pod-template hash, the
 * revision annotation, maxSurge/maxUnavailable resolved against replicas, and conditions.
 */
export const hashLabel = 'pod-template-hash';
export const revisionAnnotation = 'deployment.kubernetes.io/revision';
export const desiredReplicasAnnotation = 'deployment.kubernetes.io/desired-replicas';
export const maxReplicasAnnotation = 'deployment.kubernetes.io/max-replicas';

/** Deployment annotations that are not copied to its ReplicaSets. */
const notCopied = new Set([
  'kubectl.kubernetes.io/last-applied-configuration',
  revisionAnnotation,
  'deployment.kubernetes.io/revision-history',
  desiredReplicasAnnotation,
  maxReplicasAnnotation,
  'deprecated.deployment.rollback.to',
]);

export function copiedAnnotations(d: KubeObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((d.metadata.annotations ?? {}) as Record<string, string>)) {
    if (!notCopied.has(k)) out[k] = v;
  }
  return out;
}

const alphanums = 'bcdfghjklmnpqrstvwxz2456789';

/** rand.SafeEncodeString: each character mapped into an alphabet without vowels or look-alikes. */
export function safeEncodeString(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) out += alphanums[s.charCodeAt(i) % alphanums.length];
  return out;
}

/**
 * ComputeHash: FNV-1a (32 bit) of the template, then of collisionCount as 8 little-endian bytes, encoded
 * with SafeEncodeString. Upstream hashes Go's `%#v` dump of the template struct, which has no JavaScript
 * equivalent; this hashes the template's canonical JSON instead, so the same template gets the same hash
 * here, but not the same one as in a Kubernetes cluster.
 */
export function computeHash(template: unknown, collisionCount?: number): string {
  let h = 0x811c9dc5;
  const add = (bytes: Uint8Array) => {
    for (const b of bytes) {
      h ^= b;
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  };
  add(Buffer.from(canonicalJson(template ?? {}), 'utf8'));
  if (collisionCount !== undefined) {
    const b = Buffer.alloc(8);
    b.writeUInt32LE(collisionCount >>> 0, 0);
    add(b);
  }
  return safeEncodeString(String(h >>> 0));
}

/**
 * The template without the pod-template-hash label, for comparing an RS's template with a Deployment's
 * (EqualIgnoreHash). As Go's semantic equality, an empty object or list equals an absent one: a template
 * read back by `kubectl rollout undo` has `resources: {}` where the stored one has nothing.
 */
export function templateWithoutHash(template: Record<string, any> | undefined): unknown {
  const t = structuredClone(template ?? {});
  if (t.metadata?.labels) delete t.metadata.labels[hashLabel];
  return withoutEmpty(t) ?? {};
}

function withoutEmpty(v: unknown): unknown {
  if (v === null) return undefined;
  if (Array.isArray(v)) {
    const items = v.map((x) => withoutEmpty(x) ?? {});
    return items.length ? items : undefined;
  }
  if (typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const y = withoutEmpty(x);
      if (y !== undefined) out[k] = y;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return v;
}

export function revisionOf(obj: KubeObject): number {
  const v = Number(obj.metadata.annotations?.[revisionAnnotation] ?? 0);
  return Number.isFinite(v) ? v : 0;
}

/** An int-or-percent against `total` (intstr.GetScaledValueFromIntOrPercent). */
export function scaledValue(value: unknown, total: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && /^\d+%$/.test(value)) {
    const v = (Number(value.slice(0, -1)) * total) / 100;
    return roundUp ? Math.ceil(v) : Math.floor(v);
  }
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  return 0;
}

/** ResolveFenceposts: maxSurge (rounded up) and maxUnavailable (rounded down), never both 0. */
export function resolveFenceposts(d: KubeObject): { maxSurge: number; maxUnavailable: number } {
  const replicas = d.spec?.replicas ?? 1;
  const ru = d.spec?.strategy?.rollingUpdate ?? {};
  const maxSurge = scaledValue(ru.maxSurge ?? '25%', replicas, true);
  let maxUnavailable = scaledValue(ru.maxUnavailable ?? '25%', replicas, false);
  if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
  return { maxSurge, maxUnavailable };
}

/** MaxUnavailable of a Deployment: 0 for Recreate, at most replicas. */
export function maxUnavailable(d: KubeObject): number {
  const replicas = d.spec?.replicas ?? 1;
  if (d.spec?.strategy?.type !== 'RollingUpdate' || replicas === 0) return 0;
  return Math.min(resolveFenceposts(d).maxUnavailable, replicas);
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastUpdateTime: string;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

export function condition(
  type: string,
  status: Condition['status'],
  reason: string,
  message: string,
  now: number,
): Condition {
  const t = rfc3339(now);
  return { type, status, lastUpdateTime: t, lastTransitionTime: t, reason, message };
}

/** SetDeploymentCondition: the same status and reason keeps the old condition; a new one replaces it. */
export function setCondition(conditions: Condition[], c: Condition): Condition[] {
  const current = conditions.find((x) => x.type === c.type);
  if (current && current.status === c.status && current.reason === c.reason) return conditions;
  const next = { ...c };
  if (current && current.status === c.status) next.lastTransitionTime = current.lastTransitionTime;
  return [...conditions.filter((x) => x.type !== c.type), next];
}

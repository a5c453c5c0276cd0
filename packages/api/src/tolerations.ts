/** Tolerations against taints, as upstream's Toleration.ToleratesTaint (k8s.io/api/core/v1). */
export interface TaintLike {
  key: string;
  value?: string;
  effect: string;
}

export interface TolerationLike {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}

/**
 * Whether `toleration` tolerates `taint`: an effect, when given, must match; a key, when given, must
 * match (an empty key with `Exists` tolerates every taint); `Exists` ignores the value, `Equal` (the
 * default) compares it.
 */
export function toleratesTaint(toleration: TolerationLike, taint: TaintLike): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  if (toleration.operator === 'Exists') return true;
  if (!toleration.operator || toleration.operator === 'Equal') {
    return (toleration.value ?? '') === (taint.value ?? '');
  }
  return false;
}

/** The first of `taints` (passing `filter`) that none of `tolerations` tolerates, if any. */
export function untoleratedTaint<T extends TaintLike>(
  taints: readonly T[],
  tolerations: readonly TolerationLike[],
  filter: (taint: T) => boolean = () => true,
): T | undefined {
  return taints.find((taint) => filter(taint) && !tolerations.some((t) => toleratesTaint(t, taint)));
}

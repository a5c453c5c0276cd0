/** CNI spec versions: which ones nodelet speaks and how they compare. */

/** Every spec version whose configurations and results cni-exec understands. */
export const SUPPORTED_VERSIONS: readonly string[] = Object.freeze([
  '0.1.0',
  '0.2.0',
  '0.3.0',
  '0.3.1',
  '0.4.0',
  '1.0.0',
  '1.1.0',
]);

const pattern = /^(\d+)\.(\d+)\.(\d+)$/;

export function isVersion(v: unknown): v is string {
  return typeof v === 'string' && pattern.test(v);
}

/** Negative, zero or positive as `a` is below, equal to or above `b`. Both must be `x.y.z`. */
export function compareVersions(a: string, b: string): number {
  const pa = pattern.exec(a);
  const pb = pattern.exec(b);
  if (!pa || !pb) throw new Error(`not a CNI version: ${pa ? b : a}`);
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d !== 0) return d;
  }
  return 0;
}

export const atLeast = (v: string, min: string) => compareVersions(v, min) >= 0;

/**
 * The version to run a network at: the highest of `cniVersion` and `cniVersions` that nodelet supports
 * (the spec's rule for runtimes). Undefined when none is supported.
 */
export function selectVersion(candidates: readonly string[]): string | undefined {
  return candidates
    .filter((v) => SUPPORTED_VERSIONS.includes(v))
    .sort(compareVersions)
    .at(-1);
}

/** Milliseconds per unit of a Go duration string. */
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
const WHOLE = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;

/**
 * A Go duration string ("20s", "1m0s", "1h30m", "500ms", "0"), as metav1.Duration fields of
 * KubeletConfiguration and KubeProxyConfiguration hold them, in milliseconds; undefined when `text` is
 * not one (callers name the field in their error).
 */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (!WHOLE.test(text)) return undefined;
  let total = 0;
  for (const m of text.matchAll(PART)) total += Number(m[1]) * UNIT_MS[m[2]!]!;
  return total;
}

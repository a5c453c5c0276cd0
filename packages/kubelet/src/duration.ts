/** Go duration strings as KubeletConfiguration writes them ("20s", "1m0s", "1h30m", "500ms") in ms. */
export function parseDuration(text: string, field: string): number {
  const units: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    ms: 1,
    s: 1000,
    m: 60_000,
    h: 3_600_000,
  };
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;
  if (!/^(\d+(?:\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(text)) {
    if (text === '0') return 0;
    throw new Error(`field "${field}": "${text}" is not a duration; write it like 20s, 1m30s or 500ms`);
  }
  let total = 0;
  for (const m of text.matchAll(re)) total += Number(m[1]) * units[m[2]!]!;
  return total;
}

/**
 * A small writer of the Prometheus text format (0.0.4) for series computed per scrape from a stats
 * snapshot (`/metrics/resource`, `/metrics/cadvisor`): they carry sample timestamps, which
 * prom-client's registries do not write.
 */
export const TEXT_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface Sample {
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch. */
  timestampMs?: number;
}

export interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: Sample[];
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

export function writeFamilies(families: readonly Family[]): string {
  let out = '';
  for (const f of families) {
    out += `# HELP ${f.name} ${escapeHelp(f.help)}\n# TYPE ${f.name} ${f.type}\n`;
    for (const s of f.samples) {
      const labels = Object.entries(s.labels)
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(',');
      out += `${f.name}${labels ? `{${labels}}` : ''} ${formatValue(s.value)}`;
      out += s.timestampMs === undefined ? '\n' : ` ${Math.round(s.timestampMs)}\n`;
    }
  }
  return out;
}

/**
 * A strict parser of the Prometheus text exposition format (0.0.4), for tests of every metrics
 * endpoint: it throws, naming the line, on anything a Prometheus server would refuse — a sample
 * before its TYPE, a family declared twice, a bad name, label, escape, value or timestamp, a
 * duplicate series, a histogram without its +Inf bucket or with buckets that decrease.
 */
export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
  timestampMs?: number;
}

export interface ParsedFamily {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help?: string;
  samples: ParsedSample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(text: string, where: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) throw new Error(`${where}: bad value "${text}"`);
  return Number(text);
}

function parseLabels(text: string, where: string): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1; // after '{'
  for (;;) {
    while (text[i] === ' ') i++;
    if (text[i] === '}') return { labels, rest: text.slice(i + 1) };
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error(`${where}: unterminated label set`);
    const name = text.slice(i, eq).trim();
    if (!LABEL.test(name)) throw new Error(`${where}: bad label name "${name}"`);
    if (name in labels) throw new Error(`${where}: label "${name}" twice`);
    if (text[eq + 1] !== '"') throw new Error(`${where}: label "${name}" value must be quoted`);
    let value = '';
    let j = eq + 2;
    for (;;) {
      const ch = text[j];
      if (ch === undefined) throw new Error(`${where}: unterminated value of label "${name}"`);
      if (ch === '"') break;
      if (ch === '\\') {
        const next = text[j + 1];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`${where}: bad escape "\\${next ?? ''}" in label "${name}"`);
        j += 2;
      } else {
        value += ch;
        j++;
      }
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (text[i] !== '}') throw new Error(`${where}: expected , or } after label "${name}"`);
  }
}

/** The family a sample name belongs to (histogram/summary suffixes folded in). */
function familyOf(name: string, families: Map<string, ParsedFamily>): ParsedFamily | undefined {
  if (families.has(name)) return families.get(name);
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const f = families.get(name.slice(0, -suffix.length));
    if (f && (f.type === 'histogram' || f.type === 'summary')) return f;
  }
  return undefined;
}

export function parsePrometheusText(text: string): Map<string, ParsedFamily> {
  const families = new Map<string, ParsedFamily>();
  const series = new Set<string>();
  if (text.length > 0 && !text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  text.split('\n').forEach((line, index) => {
    const where = `line ${index + 1}`;
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
      if (!m) return; // a plain comment
      const [, kind, name, rest = ''] = m;
      if (!NAME.test(name!)) throw new Error(`${where}: bad metric name "${name}"`);
      let f = families.get(name!);
      if (kind === 'TYPE') {
        if (!TYPES.has(rest)) throw new Error(`${where}: bad type "${rest}"`);
        if (f?.samples.length) throw new Error(`${where}: TYPE of ${name} after its samples`);
        if (f && f.type !== 'untyped') throw new Error(`${where}: TYPE of ${name} twice`);
        if (!f) families.set(name!, (f = { name: name!, type: 'untyped', samples: [] }));
        f.type = rest as ParsedFamily['type'];
      } else {
        if (f?.help !== undefined) throw new Error(`${where}: HELP of ${name} twice`);
        if (!f) families.set(name!, (f = { name: name!, type: 'untyped', samples: [] }));
        f.help = rest;
      }
      return;
    }
    const nameEnd = line.search(/[{ ]/);
    if (nameEnd <= 0) throw new Error(`${where}: no value`);
    const name = line.slice(0, nameEnd);
    if (!NAME.test(name)) throw new Error(`${where}: bad metric name "${name}"`);
    let rest = line.slice(nameEnd);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, where));
    const parts = rest.trim().split(/\s+/);
    if (parts.length < 1 || parts.length > 2 || parts[0] === '')
      throw new Error(`${where}: expected value [timestamp]`);
    const sample: ParsedSample = { name, labels, value: parseValue(parts[0]!, where) };
    if (parts[1] !== undefined) {
      if (!/^-?\d+$/.test(parts[1])) throw new Error(`${where}: bad timestamp "${parts[1]}"`);
      sample.timestampMs = Number(parts[1]);
    }
    const key = `${name}{${Object.entries(labels)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(',')}}`;
    if (series.has(key)) throw new Error(`${where}: series ${key} twice`);
    series.add(key);
    let f = familyOf(name, families);
    if (!f) families.set(name, (f = { name, type: 'untyped', samples: [] }));
    if (f.type === 'counter' && sample.value < 0) throw new Error(`${where}: counter ${name} is negative`);
    f.samples.push(sample);
  });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

function checkHistogram(f: ParsedFamily): void {
  const groups = new Map<string, ParsedSample[]>();
  for (const s of f.samples) {
    if (s.name !== `${f.name}_bucket`) continue;
    const { le, ...others } = s.labels;
    if (le === undefined) throw new Error(`histogram ${f.name}: a bucket without le`);
    const key = JSON.stringify(others);
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  for (const buckets of groups.values()) {
    if (!buckets.some((b) => b.labels.le === '+Inf')) throw new Error(`histogram ${f.name}: no +Inf bucket`);
    const sorted = [...buckets].sort(
      (a, b) => parseValue(a.labels.le!, 'le') - parseValue(b.labels.le!, 'le'),
    );
    for (let i = 1; i < sorted.length; i++)
      if (sorted[i]!.value < sorted[i - 1]!.value) throw new Error(`histogram ${f.name}: buckets decrease`);
  }
}

/** The value of the one sample of `name` whose labels include `labels`; undefined if none. */
export function sampleValue(
  families: Map<string, ParsedFamily>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name !== name) continue;
      if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return undefined;
}

/**
 * Standard 5-field cron schedules (minute hour day-of-month month day-of-week) and the `@hourly`-style
 * macros, as the robfig/cron standard parser that upstream's CronJob controller uses reads them: `*`, `?`,
 * lists, ranges, steps, month and weekday names; when both day fields are restricted a day matches
 * either. Times are computed in an IANA time zone through `Intl`, so a schedule follows the zone's
 * daylight-saving changes.
 */
export interface CronSchedule {
  /** The first scheduled time strictly after `after` (ms since the epoch), or undefined within 5 years. */
  next(after: number): number | undefined;
  /** The last scheduled time at or before `at`, or undefined within 5 years. */
  prev(at: number): number | undefined;
}

const macros: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const monthNames = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const dayNames = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface Bounds {
  name: string;
  min: number;
  max: number;
  names?: string[];
  namesStart?: number;
}

const fieldBounds: Bounds[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: monthNames, namesStart: 1 },
  { name: 'day of week', min: 0, max: 6, names: dayNames, namesStart: 0 },
];

function parseNumber(text: string, b: Bounds): number {
  const named = b.names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return named + (b.namesStart ?? 0);
  if (!/^\d+$/.test(text)) throw new Error(`failed to parse int from ${text}`);
  return Number(text);
}

/** One field as the set of values it allows, and whether it was unrestricted (`*` or `?`). */
function parseField(text: string, b: Bounds): { values: Set<number>; star: boolean } {
  const values = new Set<number>();
  let star = false;
  for (const part of text.split(',')) {
    const [range, stepText, extra] = part.split('/');
    if (extra !== undefined) throw new Error(`too many slashes: ${part}`);
    let lo: number;
    let hi: number;
    if (range === '*' || range === '?') {
      [lo, hi] = [b.min, b.max];
      if (stepText === undefined) star = true;
    } else {
      const [a, z, more] = range!.split('-');
      if (more !== undefined) throw new Error(`too many hyphens: ${part}`);
      lo = parseNumber(a!, b);
      hi = z === undefined ? (stepText === undefined ? lo : b.max) : parseNumber(z, b);
    }
    const step = stepText === undefined ? 1 : parseNumber(stepText, { ...b, names: undefined });
    if (lo < b.min) throw new Error(`beginning of range (${lo}) below minimum (${b.min}): ${part}`);
    if (hi > b.max) throw new Error(`end of range (${hi}) above maximum (${b.max}): ${part}`);
    if (lo > hi) throw new Error(`beginning of range (${lo}) beyond end of range (${hi}): ${part}`);
    if (step === 0) throw new Error(`step of range should be a positive number: ${part}`);
    for (let v = lo; v <= hi; v += step) values.add(v);
  }
  return { values, star };
}

/** The offset of `zone` from UTC at the instant `utc`, in ms (local = utc + offset). */
function zoneOffset(format: Intl.DateTimeFormat | undefined, utc: number): number {
  if (!format) return 0;
  const parts: Record<string, number> = {};
  for (const p of format.formatToParts(new Date(utc))) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  const local = Date.UTC(
    parts.year!,
    parts.month! - 1,
    parts.day!,
    parts.hour! % 24,
    parts.minute!,
    parts.second!,
  );
  return local - Math.floor(utc / 1000) * 1000;
}

const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(zone, f);
  }
  return f;
}

/** Whether `zone` is an IANA time zone name this runtime knows. */
export function isKnownTimeZone(zone: string): boolean {
  try {
    formatFor(zone);
    return true;
  } catch {
    return false;
  }
}

const dayMs = 86_400_000;
const searchDays = 5 * 366;

/** Parses `spec` (5 fields or a macro); throws an Error whose message says what is wrong. */
export function parseCronSchedule(spec: string, zone = 'UTC'): CronSchedule {
  const text = spec.trim();
  if (/^(CRON_)?TZ=/.test(text)) throw new Error('CRON_TZ or TZ used in schedule is not supported');
  const expanded = text.startsWith('@') ? macros[text] : text;
  if (expanded === undefined) throw new Error(`unrecognized descriptor: ${text}`);
  const parts = expanded.split(/\s+/).filter((p) => p !== '');
  if (parts.length !== 5)
    throw new Error(`expected exactly 5 fields, found ${parts.length}: [${parts.join(' ')}]`);
  const [minutes, hours, doms, months, dows] = parts.map((p, i) => parseField(p, fieldBounds[i]!)) as [
    ReturnType<typeof parseField>,
    ReturnType<typeof parseField>,
    ReturnType<typeof parseField>,
    ReturnType<typeof parseField>,
    ReturnType<typeof parseField>,
  ];
  const format = zone === 'UTC' ? undefined : formatFor(zone);
  const minuteList = [...minutes.values].sort((a, b) => a - b);
  const hourList = [...hours.values].sort((a, b) => a - b);

  // A day (in local wall-clock terms, as a UTC date) matches the day fields as robfig's dayMatches.
  const dayMatches = (localDay: number): boolean => {
    const d = new Date(localDay);
    if (!months.values.has(d.getUTCMonth() + 1)) return false;
    const dom = doms.values.has(d.getUTCDate());
    const dow = dows.values.has(d.getUTCDay());
    return doms.star || dows.star ? dom && dow : dom || dow;
  };
  // Local wall-clock time → the UTC instant (the offset re-read once, for the hour around a DST change).
  const toUtc = (local: number): number => {
    const guess = local - zoneOffset(format, local);
    return local - zoneOffset(format, guess);
  };
  const localDayOf = (utc: number): number => {
    const local = utc + zoneOffset(format, utc);
    return local - (((local % dayMs) + dayMs) % dayMs);
  };
  // A day's times, converted lazily in order (or in reverse): most searches stop at the first or second.
  function* timesOf(localDay: number, reverse = false): Generator<number> {
    const hs = reverse ? [...hourList].reverse() : hourList;
    const ms = reverse ? [...minuteList].reverse() : minuteList;
    for (const h of hs) for (const m of ms) yield toUtc(localDay + h * 3_600_000 + m * 60_000);
  }

  return {
    next(after) {
      const start = localDayOf(after);
      for (let i = 0; i <= searchDays; i++) {
        const day = start + i * dayMs;
        if (!dayMatches(day)) continue;
        for (const t of timesOf(day)) if (t > after) return t;
      }
      return undefined;
    },
    prev(at) {
      const start = localDayOf(at);
      for (let i = 0; i <= searchDays; i++) {
        const day = start - i * dayMs;
        if (!dayMatches(day)) continue;
        for (const t of timesOf(day, true)) if (t <= at) return t;
      }
      return undefined;
    },
  };
}

/** The process's own time zone: a CronJob without `timeZone` follows it, as upstream's controller manager. */
export function localTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** RFC 3339 with the zone's offset (`2026-01-01T09:00:00+09:00`), as Go's `t.In(zone).Format(time.RFC3339)`. */
export function formatInZone(utc: number, zone: string): string {
  const offset = zoneOffset(zone === 'UTC' ? undefined : formatFor(zone), utc);
  const local = new Date(Math.floor(utc / 1000) * 1000 + offset).toISOString().slice(0, 19);
  if (offset === 0) return `${local}Z`;
  const minutes = Math.abs(offset) / 60_000;
  const hh = String(Math.floor(minutes / 60)).padStart(2, '0');
  const mm = String(minutes % 60).padStart(2, '0');
  return `${local}${offset < 0 ? '-' : '+'}${hh}:${mm}`;
}

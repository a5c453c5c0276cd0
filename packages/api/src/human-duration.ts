/**
 * Durations and ages as kubectl prints them (apimachinery's HumanDuration and kubectl's
 * translateTimestampSince). Shared by `nodelet get pods` and the API server's Table output.
 */
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * A duration as kubectl prints it, with 2–3 significant figures: `45s`, `119s`, `3m2s`, `15m`, `4h`,
 * `5h30m`, `2d`, `3d4h`, `400d`, `2y5d`. Up to 2 s in the future counts as now (clock skew); further is
 * `<invalid>`.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / SECOND);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.trunc(ms / MINUTE);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.trunc(ms / HOUR);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.trunc(hours / 24) % 365;
    const years = Math.trunc(hours / 24 / 365);
    return days === 0 ? `${years}y` : `${years}y${days}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** kubectl's translateTimestampSince: `<unknown>` for a missing or unparseable time. */
export function since(timestamp: string | undefined, now: number): string {
  const t = parseTime(timestamp);
  return t === undefined ? '<unknown>' : humanDuration(now - t);
}

export function parseTime(timestamp: string | undefined): number | undefined {
  if (!timestamp) return undefined;
  const t = Date.parse(timestamp);
  return Number.isNaN(t) || t <= 0 ? undefined : t;
}

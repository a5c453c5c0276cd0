import { parseCriLogLine } from '@nodelet/cri';

/**
 * The query of `/containerLogs/{ns}/{pod}/{container}` (upstream v1 PodLogOptions): `follow`,
 * `previous`, `timestamps` (booleans), `tailLines` (≥ 0; `tail` is its old name, `tail=all` all lines),
 * `limitBytes` (≥ 1), `sinceSeconds` (≥ 1) or `sinceTime` (RFC 3339), not both.
 */
export interface LogOptions {
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  limitBytes?: number;
  /** Lines written before this time (epoch nanoseconds) are left out. */
  sinceNs?: bigint;
}

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

function parseBool(query: URLSearchParams, name: string): boolean | string {
  const v = query.get(name);
  if (v === null || v === '' || v === 'true' || v === '1' || v === 'True' || v === 'TRUE') return v !== null;
  if (v === 'false' || v === '0' || v === 'False' || v === 'FALSE') return false;
  return `query parameter ${name} must be true or false, got ${JSON.stringify(v)}`;
}

function parseInt64(query: URLSearchParams, name: string, min: number): number | undefined | string {
  const v = query.get(name);
  if (v === null) return undefined;
  if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(Number(v))) {
    return `query parameter ${name} must be an integer, got ${JSON.stringify(v)}`;
  }
  const n = Number(v);
  if (n < min) return `query parameter ${name} must be at least ${min}, got ${n}`;
  return n;
}

/** The options a query asks for, or an error naming the parameter; `nowMs` resolves sinceSeconds. */
export function parseLogOptions(query: URLSearchParams, nowMs: number): LogOptions | { error: string } {
  const flags: Record<string, boolean> = {};
  for (const name of ['follow', 'previous', 'timestamps']) {
    const v = parseBool(query, name);
    if (typeof v === 'string') return { error: v };
    flags[name] = v;
  }
  const q = new URLSearchParams(query);
  const tail = q.get('tail');
  if (tail !== null && !q.has('tailLines')) {
    q.delete('tail');
    if (tail !== 'all') q.set('tailLines', tail);
  }
  const out: LogOptions = { follow: flags.follow!, previous: flags.previous!, timestamps: flags.timestamps! };
  const tailLines = parseInt64(q, 'tailLines', 0);
  if (typeof tailLines === 'string') return { error: tailLines };
  if (tailLines !== undefined) out.tailLines = tailLines;
  const limitBytes = parseInt64(q, 'limitBytes', 1);
  if (typeof limitBytes === 'string') return { error: limitBytes };
  if (limitBytes !== undefined) out.limitBytes = limitBytes;
  const sinceSeconds = parseInt64(q, 'sinceSeconds', 1);
  if (typeof sinceSeconds === 'string') return { error: sinceSeconds };
  const sinceTime = q.get('sinceTime');
  if (sinceSeconds !== undefined && sinceTime !== null) {
    return { error: 'query parameters sinceSeconds and sinceTime are mutually exclusive: give at most one' };
  }
  if (sinceSeconds !== undefined) out.sinceNs = BigInt(nowMs - sinceSeconds * 1000) * 1_000_000n;
  if (sinceTime !== null) {
    const ms = rfc3339.test(sinceTime) ? Date.parse(sinceTime) : NaN;
    if (Number.isNaN(ms)) {
      return {
        error: `query parameter sinceTime must be an RFC 3339 time such as 2024-01-02T15:04:05Z, got ${JSON.stringify(sinceTime)}`,
      };
    }
    // metav1.Time has whole seconds.
    out.sinceNs = BigInt(Math.floor(ms / 1000) * 1000) * 1_000_000n;
  }
  return out;
}

/**
 * CRI log text turned into what `kubectl logs` shows, with the options applied: lines joined from
 * their `P` pieces, lines before `since` left out, each line prefixed with its time (`timestamps`), and
 * no more than `limitBytes` in all. `tailLines` applies to the first text only (the file read before
 * follow). A trailing piece without a newline waits for the next chunk.
 */
export class LogRenderer {
  private rest = '';
  private written = 0;
  /** The line being assembled from partial pieces: its time stamp text and time. */
  private open?: { stamp: string; time: bigint; text: string };

  constructor(private readonly options: LogOptions) {}

  /** Whether `limitBytes` is used up (then stop reading). */
  get exhausted(): boolean {
    return this.options.limitBytes !== undefined && this.written >= this.options.limitBytes;
  }

  /** The file's text read before following: tailLines applies. */
  first(text: string): string {
    const lines = this.lines(text);
    const { tailLines } = this.options;
    return this.emit(tailLines === undefined ? lines : tailLines === 0 ? [] : lines.slice(-tailLines));
  }

  /** Text appended to the file (follow). */
  push(chunk: string): string {
    return this.emit(this.lines(chunk));
  }

  /**
   * At the end of what is served: the pieces of a line whose end was never written (a container that
   * printed "admin" without a newline and exited), shown as they are, as upstream's reader does.
   */
  end(): string {
    const open = this.open;
    this.open = undefined;
    return open ? this.emit([open]) : '';
  }

  private lines(chunk: string): { stamp: string; time: bigint; text: string }[] {
    const text = this.rest + chunk;
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      this.rest = text;
      return [];
    }
    this.rest = text.slice(end + 1);
    const out: { stamp: string; time: bigint; text: string }[] = [];
    for (const raw of text.slice(0, end).split('\n')) {
      if (!raw) continue;
      let line;
      try {
        line = parseCriLogLine(raw);
      } catch {
        continue; // not a CRI log line: skipped, as upstream's reader does
      }
      const open = this.open ?? { stamp: raw.slice(0, raw.indexOf(' ')), time: line.time, text: '' };
      open.text += line.content;
      if (line.partial) {
        this.open = open;
        continue;
      }
      this.open = undefined;
      open.text += '\n';
      out.push(open);
    }
    return out;
  }

  private emit(lines: { stamp: string; time: bigint; text: string }[]): string {
    const { sinceNs, timestamps, limitBytes } = this.options;
    let out = '';
    for (const line of lines) {
      if (sinceNs !== undefined && line.time < sinceNs) continue;
      out += timestamps ? `${line.stamp} ${line.text}` : line.text;
    }
    if (limitBytes === undefined) return out;
    const left = limitBytes - this.written;
    const bytes = Buffer.from(out, 'utf8');
    const kept = bytes.length > left ? bytes.subarray(0, Math.max(0, left)) : bytes;
    this.written += kept.length;
    return kept.toString('utf8');
  }
}

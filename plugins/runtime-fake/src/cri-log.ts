/**
 * Time stamps and container logs in the CRI formats: int64 nanoseconds since the epoch, and log
 * lines `<RFC3339Nano> <stdout|stderr> <F|P> <content>` (upstream kubelet/kuberuntime/logs).
 */
const NS_PER_MS = 1_000_000n;
const NS_PER_S = 1_000_000_000n;

/** Milliseconds (as a Clock gives them) → nanoseconds. */
export function msToNs(ms: number): bigint {
  const whole = Math.floor(ms);
  return BigInt(whole) * NS_PER_MS + BigInt(Math.round((ms - whole) * 1e6));
}

/** Nanoseconds → RFC 3339 in UTC with the fraction's trailing zeros dropped, as Go's `time.RFC3339Nano`. */
export function rfc3339Nano(ns: bigint): string {
  let seconds = ns / NS_PER_S;
  let fraction = ns % NS_PER_S;
  if (fraction < 0n) {
    fraction += NS_PER_S;
    seconds -= 1n;
  }
  const base = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
  return fraction === 0n ? `${base}Z` : `${base}.${fraction.toString().padStart(9, '0').replace(/0+$/, '')}Z`;
}

export type LogStream = 'stdout' | 'stderr';

/**
 * What a process wrote, as CRI log lines (without their `\n`): each newline-terminated piece a full
 * (`F`) line, a trailing piece without a newline a partial (`P`) one.
 */
export function criLogLines(ns: bigint, stream: LogStream, output: string): string[] {
  if (output === '') return [];
  const stamp = `${rfc3339Nano(ns)} ${stream} `;
  const pieces = output.split('\n');
  const rest = pieces.pop()!;
  const lines = pieces.map((content) => `${stamp}F ${content}`);
  if (rest !== '') lines.push(`${stamp}P ${rest}`);
  return lines;
}

/** The newest `max` lines of one container's log, in memory. */
export class LogBuffer {
  private lines: string[] = [];
  private start = 0;

  constructor(private readonly max: number) {}

  push(lines: readonly string[]): void {
    if (this.max <= 0) return;
    for (const line of lines) this.lines.push(line);
    const excess = this.lines.length - this.start - this.max;
    if (excess > 0) this.start += excess;
    // Compact once the dropped head outgrows the kept tail, so pushes stay amortised O(1).
    if (this.start > this.max) {
      this.lines = this.lines.slice(this.start);
      this.start = 0;
    }
  }

  snapshot(): string[] {
    return this.lines.slice(this.start);
  }

  get length(): number {
    return this.lines.length - this.start;
  }
}

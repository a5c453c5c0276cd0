import type { Clock } from './clock.js';

/**
 * Per-key exponential backoff, as upstream's flowcontrol.Backoff: the first failure of a key sets the
 * initial delay; each later failure doubles it up to `maxMs`; an entry whose last failure is older than
 * `2 × maxMs` starts over. kubelet uses it for CrashLoopBackOff and image pulls (10 s → 300 s, reset after
 * 600 s without failure).
 */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

interface Entry {
  backoffMs: number;
  lastUpdate: number;
}

export class Backoff {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly clock: Clock,
    readonly options: BackoffOptions = { initialMs: 10_000, maxMs: 300_000 },
  ) {}

  /** The current delay of `key`, 0 when it has none. */
  get(key: string): number {
    return this.entries.get(key)?.backoffMs ?? 0;
  }

  /** Records a failure of `key` at `eventTime` (default now) and grows its delay. */
  next(key: string, eventTime = this.clock.now()): number {
    const entry = this.entries.get(key);
    if (!entry || this.hasExpired(entry, eventTime)) {
      this.entries.set(key, { backoffMs: this.options.initialMs, lastUpdate: eventTime });
      return this.options.initialMs;
    }
    entry.backoffMs = Math.min(entry.backoffMs * 2, this.options.maxMs);
    entry.lastUpdate = eventTime;
    return entry.backoffMs;
  }

  /** True while `now − eventTime` is shorter than the key's delay (and the entry is still fresh). */
  isInBackoffSince(key: string, eventTime: number): boolean {
    const entry = this.entries.get(key);
    if (!entry || this.hasExpired(entry, eventTime)) return false;
    return this.clock.now() - eventTime < entry.backoffMs;
  }

  /** True while the time since the key's last failure is shorter than its delay (upstream IsInBackOffSinceUpdate). */
  isInBackoffSinceUpdate(key: string): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    const now = this.clock.now();
    if (this.hasExpired(entry, now)) return false;
    return now - entry.lastUpdate < entry.backoffMs;
  }

  /** When the delay since the key's last failure ends, or undefined when it has none. */
  endsAt(key: string): number | undefined {
    const entry = this.entries.get(key);
    return entry ? entry.lastUpdate + entry.backoffMs : undefined;
  }

  /** When the backoff that started at `eventTime` ends, or undefined when `key` is not backing off. */
  backoffEndsAt(key: string, eventTime: number): number | undefined {
    const entry = this.entries.get(key);
    if (!entry || this.hasExpired(entry, eventTime)) return undefined;
    return eventTime + entry.backoffMs;
  }

  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Drops entries that would start over anyway, so the map stays as small as the set of failing keys. */
  gc(): void {
    const now = this.clock.now();
    for (const [key, entry] of this.entries) if (this.hasExpired(entry, now)) this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }

  private hasExpired(entry: Entry, eventTime: number): boolean {
    return eventTime - entry.lastUpdate > 2 * this.options.maxMs;
  }
}

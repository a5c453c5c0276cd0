import type { Clock, Logger } from '@nodelet/kernel';

/**
 * A controller's work queue (client-go's workqueue, reduced): keys are deduplicated while they wait, one
 * key is processed at a time, a failed key is retried after a backoff on the clock (5 ms doubling to
 * `maxRetryMs`). Processing starts on a later turn of the event loop, never inside the store write that
 * queued the key, so a controller's own writes do not re-enter it.
 */
/** The longest single timer a controller sets: a day. */
export const longestWaitMs = 86_400_000;

export class WorkQueue {
  private readonly pending = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly retries = new Map<string, () => void>();
  private scheduled = false;
  private stopped = false;

  constructor(
    private readonly name: string,
    private readonly handler: (key: string) => void | Promise<void>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly maxRetryMs = 30_000,
  ) {}

  add(key: string): void {
    if (this.stopped) return;
    this.pending.add(key);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => void this.drain());
    }
  }

  /**
   * Processes `key` again after `ms` (a controller waiting for something that has no event). Waits past
   * a day are cut to a day — timers overflow at 2^31 ms — and the sync then simply waits again.
   */
  addAfter(key: string, ms: number): void {
    if (this.stopped || this.retries.has(key)) return;
    const cancel = this.clock.setTimeout(
      () => {
        this.retries.delete(key);
        this.add(key);
      },
      Math.min(ms, longestWaitMs),
    );
    this.retries.set(key, cancel);
  }

  get length(): number {
    return this.pending.size;
  }

  stop(): void {
    this.stopped = true;
    this.pending.clear();
    for (const cancel of this.retries.values()) cancel();
    this.retries.clear();
  }

  private async drain(): Promise<void> {
    // Bounded per turn so one busy controller does not starve the server; the rest runs on the next turn.
    for (let i = 0; i < 500 && this.pending.size > 0 && !this.stopped; i++) {
      const key = this.pending.values().next().value as string;
      this.pending.delete(key);
      try {
        await this.handler(key);
        this.failures.delete(key);
      } catch (err) {
        const n = (this.failures.get(key) ?? 0) + 1;
        this.failures.set(key, n);
        const delay = Math.min(this.maxRetryMs, 5 * 2 ** Math.min(n, 20));
        this.logger.warn('sync failed; retrying', {
          queue: this.name,
          key,
          attempt: n,
          retryMs: delay,
          err: String(err),
        });
        this.addAfter(key, delay);
      }
    }
    this.scheduled = false;
    if (this.pending.size > 0 && !this.stopped) {
      this.scheduled = true;
      setImmediate(() => void this.drain());
    }
  }
}

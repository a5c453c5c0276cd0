import type { Clock } from '@nodelet/kernel';

export interface SyncRunnerOptions {
  /** Never start two runs closer than this (upstream minSyncPeriod, 1 s). */
  minIntervalMs: number;
  /** Run at least this often even without a request (upstream syncPeriod, 30 s). */
  maxIntervalMs: number;
  clock: Clock;
}

/**
 * Upstream's BoundedFrequencyRunner on the kernel clock: `run()` asks for a run as soon as the minimum
 * interval since the last run's start allows; a run also happens every `maxIntervalMs` regardless; runs
 * never overlap, and requests during a run coalesce into one run after it. `retryAfter` schedules an
 * earlier run after a failure. One timer at a time, so a virtual clock sees exactly the runs that happen.
 *
 *     run() ──► due = max(lastStart + min, now) ──► fn() ──► next due = lastStart + max
 *                          ▲                           │
 *                          └──── requested during ◄────┘
 */
export class SyncRunner {
  private lastStart = Number.NEGATIVE_INFINITY;
  private requested = false;
  private retryAt: number | undefined;
  private running = false;
  private started = false;
  private cancelTimer: (() => void) | undefined;
  private timerAt: number | undefined;
  private idle: Promise<void> = Promise.resolve();

  constructor(
    private readonly fn: () => Promise<void>,
    private readonly options: SyncRunnerOptions,
  ) {}

  /** Starts the periodic runs; the first run happens at once. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.requested = true;
    this.schedule();
  }

  /** Cancels the timer; a run in progress finishes. Resolves when no run is in progress. */
  async stop(): Promise<void> {
    this.started = false;
    this.cancel();
    await this.idle;
  }

  /** Asks for a run: now, or as soon as minIntervalMs since the last start allows. */
  run(): void {
    this.requested = true;
    if (this.started && !this.running) this.schedule();
  }

  /** After a failure: run again after `ms` even without a request (earlier than the periodic run). */
  retryAfter(ms: number): void {
    this.retryAt = this.options.clock.now() + ms;
    if (this.started && !this.running) this.schedule();
  }

  /** When the next run is due (clock ms), for tests and health reporting. */
  get nextRunAt(): number | undefined {
    return this.timerAt;
  }

  private dueAt(): number {
    const now = this.options.clock.now();
    let due = this.lastStart + this.options.maxIntervalMs;
    if (this.requested) due = Math.min(due, Math.max(this.lastStart + this.options.minIntervalMs, now));
    if (this.retryAt !== undefined)
      due = Math.min(due, Math.max(this.retryAt, this.lastStart + this.options.minIntervalMs));
    return Math.max(due, now);
  }

  private schedule(): void {
    if (!this.started) return;
    const due = this.dueAt();
    if (this.timerAt === due && this.cancelTimer) return;
    this.cancel();
    this.timerAt = due;
    this.cancelTimer = this.options.clock.setTimeout(() => {
      this.cancelTimer = undefined;
      this.timerAt = undefined;
      this.idle = this.fire();
    }, due - this.options.clock.now());
  }

  private cancel(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.timerAt = undefined;
  }

  private async fire(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.requested = false;
    this.retryAt = undefined;
    this.lastStart = this.options.clock.now();
    try {
      // fn reports its own errors; the runner only keeps the rhythm.
      await this.options.clock.track(this.fn().catch(() => undefined));
    } finally {
      this.running = false;
      this.schedule();
    }
  }
}

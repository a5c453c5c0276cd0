import type { Clock, Loop, StepResult } from '@nodelet/kernel';

/**
 * A token bucket on the kernel clock (client-go's flowcontrol token bucket): `burst` tokens, refilled at
 * `qps` per second. `take()` resolves when a token is available; waiters are served in order. The
 * kubelet's API client uses 50/100 (kubeAPIQPS/kubeAPIBurst) and its event recorder another 50/100
 * (eventRecordQPS/eventBurst).
 *
 * Waiting is a clock timer, never real I/O: callers must not wrap `take()` in `clock.track`.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly queue: (() => void)[] = [];
  /** Serves waiters as tokens come due; only while there are waiters. */
  private serving?: Loop;

  constructor(
    private readonly clock: Clock,
    readonly qps: number,
    readonly burst: number,
  ) {
    this.tokens = burst;
    this.last = clock.now();
  }

  /** Takes a token now if one is there; false otherwise (the caller may drop or queue). */
  tryTake(): boolean {
    this.refill();
    if (this.queue.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    return false;
  }

  take(): Promise<void> {
    if (this.tryTake()) return Promise.resolve();
    return new Promise((resolve) => {
      this.queue.push(resolve);
      this.schedule();
    });
  }

  /** Requests waiting for a token. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Releases every waiter (shutdown). */
  close(): void {
    this.serving?.stop();
    this.serving = undefined;
    for (const resolve of this.queue.splice(0)) resolve();
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.qps) / 1000);
    this.last = now;
  }

  private schedule(): void {
    if (this.serving || this.queue.length === 0) return;
    this.serving = this.clock.loop(() => this.serve(), { period: 0, initialDelay: this.untilNextToken() });
  }

  /** Hands out the tokens due now, in order; the step runs again when the next one is. */
  private serve(): StepResult {
    this.refill();
    while (this.queue.length > 0 && this.tokens >= 1) {
      this.tokens -= 1;
      this.queue.shift()!();
    }
    if (this.queue.length > 0) return { after: this.untilNextToken() };
    this.serving?.stop();
    this.serving = undefined;
  }

  private untilNextToken(): number {
    this.refill();
    return Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.qps));
  }
}

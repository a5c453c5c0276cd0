/**
 * A step run again and again on a clock, as upstream's `wait.BackoffUntil` / `wait.JitterUntil`: one step
 * at a time, the next one `period` after the previous one ended, waits grown on failure and spread by
 * jitter. Every periodic job of nodelet (PLEG relist, lease renewal, status sync, probes, rule syncs) is
 * one of these instead of its own `cancel?.(); cancel = setTimeout(…)` dance.
 */

/** What a step says about itself. */
export type StepResult =
  /** Success: wait `period`. */
  | void
  | true
  /** Failure: wait the next backoff delay (a thrown error counts the same). */
  | false
  /** Success, and the next step is due in exactly this many milliseconds. */
  | { readonly after: number };

export interface LoopBackoff {
  /** First delay after a failure; the period when unset. */
  readonly initialMs?: number;
  /** Upper bound of the delay. */
  readonly maxMs: number;
  /** Growth per consecutive failure; 2 when unset. */
  readonly factor?: number;
}

export interface LoopOptions {
  /** Milliseconds from the end of one step to the start of the next. */
  readonly period: number;
  /** Grows the wait after consecutive failures; without it a failure waits `period` like a success. */
  readonly backoff?: LoopBackoff;
  /** Each wait is lengthened by up to this fraction of itself (upstream's jitter factor), 0 when unset. */
  readonly jitter?: number;
  /** Milliseconds before the first step; 0 (at once) when unset. */
  readonly initialDelay?: number;
  /** Told of every error a step throws (the loop goes on). */
  readonly onError?: (error: unknown) => void;
  /** Source of randomness for jitter; Math.random when unset (tests pass their own). */
  readonly random?: () => number;
}

export interface Loop {
  /** Runs the step as soon as possible: now, or right after the step that is running ends. */
  kick(): void;
  /** Runs the step within `ms`, unless it is already due sooner. */
  kickAfter(ms: number): void;
  /** No step starts after this; a running step finishes. Idempotent. */
  stop(): void;
  readonly stopped: boolean;
  /** Consecutive failed steps (0 after a success). */
  readonly failures: number;
}

/**
 * The wait after the `failures`-th consecutive failure (1 for the first), before jitter: what a step
 * that is failing now will wait, for its log line (`loop.failures + 1` while the step runs).
 */
export function backoffDelay(options: Pick<LoopOptions, 'period' | 'backoff'>, failures: number): number {
  if (!options.backoff) return options.period;
  const { initialMs = options.period, maxMs, factor = 2 } = options.backoff;
  return Math.min(initialMs * factor ** Math.max(0, failures - 1), maxMs);
}

/** The minimal timer the loop needs; every Clock has it. */
export interface LoopTimer {
  now(): number;
  setTimeout(fn: () => void, ms: number): () => void;
}

export function startLoop(
  timer: LoopTimer,
  step: () => StepResult | Promise<StepResult>,
  options: LoopOptions,
): Loop {
  let cancelTimer: (() => void) | undefined;
  let dueAt = Infinity;
  let running = false;
  let rerun = false;
  let stopped = false;
  let failures = 0;
  const random = options.random ?? Math.random;

  const schedule = (ms: number) => {
    if (stopped) return;
    const at = timer.now() + Math.max(0, ms);
    if (at >= dueAt) return;
    cancelTimer?.();
    dueAt = at;
    cancelTimer = timer.setTimeout(fire, Math.max(0, ms));
  };

  const waitAfter = (result: StepResult | undefined, failed: boolean): number => {
    if (!failed && result && typeof result === 'object') return result.after;
    const wait = failed ? backoffDelay(options, failures) : options.period;
    const jitter = options.jitter ?? 0;
    return jitter > 0 ? wait + random() * jitter * wait : wait;
  };

  const fire = () => {
    cancelTimer = undefined;
    dueAt = Infinity;
    if (stopped) return;
    if (running) {
      rerun = true;
      return;
    }
    void run();
  };

  const run = async () => {
    running = true;
    let result: StepResult | undefined;
    let failed = false;
    try {
      result = await step();
      failed = result === false;
    } catch (error) {
      failed = true;
      options.onError?.(error);
    }
    failures = failed ? failures + 1 : 0;
    running = false;
    if (stopped) return;
    if (rerun) {
      rerun = false;
      schedule(0);
      return;
    }
    schedule(waitAfter(result, failed));
  };

  schedule(options.initialDelay ?? 0);

  return {
    kick: () => (running ? (rerun = true) : schedule(0)),
    kickAfter: (ms) => schedule(ms),
    stop: () => {
      stopped = true;
      cancelTimer?.();
      cancelTimer = undefined;
    },
    get stopped() {
      return stopped;
    },
    get failures() {
      return failures;
    },
  };
}

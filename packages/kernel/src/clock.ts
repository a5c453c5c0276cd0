import type { SchedulerLike } from 'rxjs';
// From RxJS's own modules, not its root entry, which loads every operator (see bus.ts).
import { asyncScheduler } from 'rxjs/internal/scheduler/async';
import { VirtualTimeScheduler } from 'rxjs/internal/scheduler/VirtualTimeScheduler';
import { type Deadline, startDeadline } from './deadline.js';
import { type Loop, type LoopOptions, startLoop, type StepResult } from './loop.js';

/**
 * Time for all of nodelet. Every timer, interval, timeout and backoff reads a Clock, so a test can run
 * a whole kubelet under virtual time: five minutes of CrashLoopBackOff in milliseconds.
 */
export interface Clock {
  /** The RxJS scheduler behind this clock; pass it to `timer`, `interval`, `debounceTime`, … */
  readonly scheduler: SchedulerLike;
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Runs `fn` once after `ms`; returns a function that cancels it. */
  setTimeout(fn: () => void, ms: number): () => void;
  /** Resolves after `ms`; rejects with the signal's reason when aborted first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Marks real I/O (file system, sockets) that a timer-driven flow awaits. Real time just returns it;
   * virtual time waits for it before firing the next timer, so real I/O takes no virtual time and a
   * test under VirtualClock stays deterministic. With `patienceMs`, virtual time waits for it at most that
   * long in real time, then moves on without it: I/O that may never finish (a probe of a server that
   * does not answer) then meets its deadline on the clock instead of stopping time.
   */
  track<T>(work: Promise<T>, patienceMs?: number): Promise<T>;
  /**
   * Runs `step` now (or after `initialDelay`) and again `period` after each run ends, one run at a time;
   * a failed run (it throws or returns false) waits the next `backoff` delay instead. `kick()` runs it
   * early, `stop()` ends it. Upstream's `wait.BackoffUntil`.
   */
  loop(step: () => StepResult | Promise<StepResult>, options: LoopOptions): Loop;
  /** An AbortSignal that aborts `ms` from now on this clock (or when `parent` aborts); cancel it when done. */
  deadline(ms: number, parent?: AbortSignal): Deadline;
}

abstract class SchedulerClock implements Clock {
  abstract readonly scheduler: SchedulerLike;
  abstract now(): number;

  track<T>(work: Promise<T>, _patienceMs?: number): Promise<T> {
    return work;
  }

  setTimeout(fn: () => void, ms: number): () => void {
    const subscription = this.scheduler.schedule(fn, Math.max(0, ms));
    return () => subscription.unsubscribe();
  }

  loop(step: () => StepResult | Promise<StepResult>, options: LoopOptions): Loop {
    return startLoop(this, step, options);
  }

  deadline(ms: number, parent?: AbortSignal): Deadline {
    return startDeadline((fn, delay) => this.setTimeout(fn, delay), ms, parent);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        cancel();
        reject(signal!.reason);
      };
      const cancel = this.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** Wall-clock time: RxJS's asyncScheduler. */
export class RealClock extends SchedulerClock {
  readonly scheduler = asyncScheduler;
  now(): number {
    return Date.now();
  }
}

/**
 * Virtual time for tests and simulations. Nothing moves until `advance` is called; `advance` fires due
 * timers in order and lets promise chains started by each one settle before the next fires, so async
 * code (a sync loop awaiting a fake runtime) behaves as it would in real time, only faster.
 */
export class VirtualClock extends SchedulerClock {
  readonly scheduler = new VirtualTimeScheduler();
  private readonly tracked = new Set<Promise<unknown>>();

  constructor(private readonly epochMs = Date.UTC(2026, 0, 1)) {
    super();
    this.scheduler.maxFrames = 0;
  }

  now(): number {
    return this.epochMs + this.scheduler.frame;
  }

  /** Milliseconds of virtual time since the clock was made. */
  elapsed(): number {
    return this.scheduler.frame;
  }

  override track<T>(work: Promise<T>, patienceMs?: number): Promise<T> {
    let waited: Promise<unknown> = work;
    if (patienceMs !== undefined) {
      // Real time on purpose: how long virtual time waits for real I/O, not a timer of the simulation. Not
      // unref'd: an advance() waiting on it must keep the process alive (it is cleared when the work ends).
      let timer: NodeJS.Timeout | undefined;
      const patience = new Promise<void>((resolve) => (timer = setTimeout(resolve, patienceMs)));
      waited = Promise.race([work, patience]).finally(() => clearTimeout(timer));
    }
    const done = waited.finally(() => this.tracked.delete(done));
    done.catch(() => undefined); // the caller handles the work's failure
    this.tracked.add(done);
    return work;
  }

  /** Lets promise chains and tracked I/O finish before time moves on. */
  private async quiesce(): Promise<void> {
    await settle();
    while (this.tracked.size > 0) {
      await Promise.allSettled([...this.tracked]);
      await settle();
    }
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const target = this.scheduler.frame + ms;
    await this.quiesce();
    for (;;) {
      const next = this.scheduler.actions[0];
      if (!next || next.delay > target) break;
      this.scheduler.maxFrames = next.delay;
      this.scheduler.flush();
      await this.quiesce();
    }
    this.scheduler.frame = target;
    this.scheduler.maxFrames = target;
  }

  /**
   * Advances in steps of `stepMs` until `predicate` holds or `maxMs` of virtual time has passed.
   * Returns the virtual milliseconds it took; throws when the deadline passes.
   */
  async advanceUntil(predicate: () => boolean, options: { stepMs?: number; maxMs: number }): Promise<number> {
    const step = options.stepMs ?? 100;
    const start = this.scheduler.frame;
    await this.quiesce();
    while (!predicate()) {
      if (this.scheduler.frame - start >= options.maxMs) {
        throw new Error(`condition not met within ${options.maxMs} ms of virtual time`);
      }
      await this.advance(step);
    }
    return this.scheduler.frame - start;
  }

  /** Number of timers waiting. A cheap simulation keeps this proportional to work actually scheduled. */
  pendingTimers(): number {
    return this.scheduler.actions.length;
  }
}

/** Lets every promise chain that needs no real I/O run to completion. */
export async function settle(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

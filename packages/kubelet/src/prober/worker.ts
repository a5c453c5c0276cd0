import type { Container, Pod, Probe } from '@nodelet/api';
import type { RuntimeService } from '@nodelet/cri';
import { type Clock, errorMessage, type Logger, type Loop, type StepResult } from '@nodelet/kernel';
import type {
  ProbeContext,
  ProbeHandler,
  ProbeHandlerRegistry,
  ProbeOutcome,
  ProbeType,
} from './probe-handler.js';
import { goDuration, probeTiming, type ProbeTiming } from './probe-spec.js';

/**
 * One probe worker per (pod, container, probe type), on the kernel clock (upstream prober/worker.go).
 *
 *                   container seen running with a new id: result := initial, counters reset
 *      ┌──────────────────────────────────────────────────────────────────────────────┐
 *      ▼                                                                              │
 *   waiting ──(startedAt + initialDelay)──► probing, every periodSeconds ──► on hold ──┘
 *      ▲                                      │   (liveness/startup failure past its threshold:
 *      │                                      │    the kubelet kills the container; no more probes
 *      └────── container not running ◄────────┘    until a new container runs)
 *               (readiness := failure)
 *
 * Initial results: liveness `success` (a container is alive until proven dead), readiness and startup
 * `unknown` (not ready, not started, until a probe succeeds). Until the startup probe has succeeded once,
 * liveness and readiness do not probe; once it has, the startup worker stops. A result only changes
 * after `failureThreshold` failures or `successThreshold` successes in a row. A check that cannot be made
 * (the handler threw or answered `unknown`) is tried three times at once, then thrown away.
 *
 * Probes of one worker never overlap: the next tick is one period after the previous one was due, or at
 * once when a slow probe overran it (Go's ticker keeps one tick waiting). The ticks are a `clock.loop`.
 *
 * Each run has a deadline of `timeoutSeconds` on the clock (`clock.deadline`), handed to the handler as
 * `signal`; the built-in handlers fail with upstream's timeout message when it passes. A handler that
 * ignores it and has not answered `HANDLER_GRACE_MS` later is cut off: the run is a failure.
 */
export type ContainerProbeState = 'success' | 'failure' | 'unknown';

export const initialResult = (type: ProbeType): ContainerProbeState =>
  type === 'liveness' ? 'success' : 'unknown';

/** Consecutive identical results of a worker. */
export interface RunState {
  last?: 'success' | 'failure';
  run: number;
}

/**
 * One result counted against the thresholds (upstream doProbe's tail). `commit` says whether the result
 * now stands: `failureThreshold` failures or `successThreshold` successes in a row.
 */
export function countResult(
  state: RunState,
  result: 'success' | 'failure',
  timing: Pick<ProbeTiming, 'successThreshold' | 'failureThreshold'>,
): { state: RunState; commit: boolean } {
  const run = state.last === result ? state.run + 1 : 1;
  const threshold = result === 'failure' ? timing.failureThreshold : timing.successThreshold;
  return { state: { last: result, run }, commit: run >= threshold };
}

/** What a worker needs from its manager. */
export interface WorkerHost {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly runtime: RuntimeService;
  readonly handlers: ProbeHandlerRegistry;
  readonly userAgent: string;
  /** When the manager (the kubelet) started: containers older than that get a jittered first probe. */
  readonly startedAt: number;
  random(): number;
  /** Sets the kubelet's view of a probe; returns whether it changed. */
  setResult(containerId: string, type: ProbeType, value: ContainerProbeState): boolean;
  removeResult(containerId: string, type: ProbeType): void;
  isStarted(containerId: string, container: Container): boolean;
  /** A probe ran: bus, events, logs, and a sync of the pod when `changed`. */
  report(worker: ProbeWorker, outcome: ProbeOutcome, changed: boolean): void;
}

const MAX_ATTEMPTS = 3;
/** How long after its deadline a handler that ignores the deadline is still waited for. */
export const HANDLER_GRACE_MS = 1_000;

export class ProbeWorker {
  pod: Pod;
  container: Container;
  probe: Probe;
  timing: ProbeTiming;
  containerId = '';
  podIP = '';
  private runState: RunState = { run: 0 };
  private onHold = false;
  private stopped = false;
  private nextAt = 0;
  private loop?: Loop;
  /** Bumped whenever the container changes or the worker stops: results of probes in flight are dropped. */
  private generation = 0;

  constructor(
    private readonly host: WorkerHost,
    readonly podUid: string,
    readonly type: ProbeType,
    pod: Pod,
    container: Container,
    probe: Probe,
  ) {
    this.pod = pod;
    this.container = container;
    this.probe = probe;
    this.timing = probeTiming(probe);
  }

  /** The newest spec of the pod (a probe change restarts the container, so timing rarely changes). */
  update(pod: Pod, container: Container, probe: Probe): void {
    this.pod = pod;
    this.container = container;
    if (probe !== this.probe) {
      this.probe = probe;
      this.timing = probeTiming(probe);
    }
  }

  /** The kubelet saw the container running. A new container id starts the worker over. */
  observeRunning(containerId: string, startedAt: number, podIP: string): void {
    if (this.stopped) return;
    this.podIP = podIP;
    if (containerId === this.containerId) return;
    if (this.containerId) this.host.removeResult(this.containerId, this.type);
    this.containerId = containerId;
    this.runState = { run: 0 };
    this.onHold = false;
    this.generation++;
    this.host.setResult(containerId, this.type, initialResult(this.type));
    const now = this.host.clock.now();
    let at = Math.max(now, startedAt + this.timing.initialDelayMs);
    // After a kubelet restart every adopted container would be probed at once; spread the first probes
    // over one period, as upstream does when the kubelet started less than a period ago.
    if (startedAt < this.host.startedAt && now - this.host.startedAt < this.timing.periodMs) {
      at = Math.max(at, now + Math.floor(this.host.random() * this.timing.periodMs));
    }
    this.schedule(at);
  }

  /** The container is not running (exited, or not there). No probes; readiness fails. */
  observeStopped(containerId: string | undefined): void {
    if (!this.containerId || (containerId !== undefined && containerId !== this.containerId)) return;
    this.cancel();
    this.generation++;
    if (this.type === 'readiness') this.host.setResult(this.containerId, this.type, 'failure');
  }

  /** Graceful shutdown (liveness and startup of a pod being terminated): a last success, then quiet. */
  quiesce(): void {
    this.cancel();
    this.generation++;
    this.stopped = true;
    if (this.containerId) this.host.setResult(this.containerId, this.type, 'success');
  }

  /** The worker is gone: timers cancelled, its result forgotten. */
  stop(): void {
    this.cancel();
    this.generation++;
    this.stopped = true;
    if (this.containerId) this.host.removeResult(this.containerId, this.type);
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  private cancel(): void {
    this.loop?.stop();
    this.loop = undefined;
  }

  /** Ticks from `at` on, one period apart. */
  private schedule(at: number): void {
    this.cancel();
    this.nextAt = at;
    const clock = this.host.clock;
    this.loop = clock.loop(() => this.tick(), {
      period: this.timing.periodMs,
      initialDelay: at - clock.now(),
    });
  }

  /** The wait until the next tick: one period after this one was due, or now when it overran. */
  private next(): { after: number } {
    const now = this.host.clock.now();
    this.nextAt = Math.max(this.nextAt + this.timing.periodMs, now);
    return { after: this.nextAt - now };
  }

  /** One tick: gate, probe, count. Exposed to tests through the manager's clock only. */
  private async tick(): Promise<StepResult> {
    const started = this.host.isStarted(this.containerId, this.container);
    if (this.type === 'startup' && started) return this.cancel(); // done until a new container runs
    if (this.type !== 'startup' && !started) return this.next(); // liveness and readiness wait for startup
    const generation = this.generation;
    const outcome = await this.run();
    if (generation !== this.generation || this.stopped) return; // this loop was stopped meanwhile
    this.record(outcome);
    if (this.onHold) return this.cancel();
    return this.next();
  }

  private async run(): Promise<ProbeOutcome> {
    const handler = this.host.handlers.handlerFor(this.probe);
    if (!handler) {
      const fields = this.host.handlers.types().join(', ');
      return { result: 'unknown', output: `no probe handler for this probe (handlers: ${fields})` };
    }
    // Each attempt is a new run of the check, with its own deadline (upstream's retries of runProbe).
    let outcome: ProbeOutcome = { result: 'unknown', output: '' };
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const deadline = this.host.clock.deadline(this.timing.timeoutMs);
      try {
        outcome = await this.withinGrace(
          handler,
          handler.probe(this.context(deadline.signal)),
          deadline.signal,
        );
      } catch (err) {
        outcome = { result: 'unknown', output: errorMessage(err) };
      } finally {
        deadline.cancel();
      }
      if (outcome.result !== 'unknown') break;
    }
    return outcome;
  }

  private context(signal: AbortSignal): ProbeContext {
    return {
      probeType: this.type,
      probe: this.probe,
      pod: this.pod,
      container: this.container,
      containerId: this.containerId,
      podIP: this.podIP,
      timeoutMs: this.timing.timeoutMs,
      runtime: this.host.runtime,
      clock: this.host.clock,
      logger: this.host.logger,
      userAgent: this.host.userAgent,
      signal,
    };
  }

  /** The handler's answer, or a failure when it has not answered `HANDLER_GRACE_MS` after the deadline. */
  private withinGrace(
    handler: ProbeHandler,
    answer: Promise<ProbeOutcome>,
    signal: AbortSignal,
  ): Promise<ProbeOutcome> {
    const clock = this.host.clock;
    return new Promise<ProbeOutcome>((resolve, reject) => {
      let cancelGrace: (() => void) | undefined;
      const cutOff = () => {
        cancelGrace = clock.setTimeout(
          () =>
            resolve({
              result: 'failure',
              output: `timeout: ${handler.type} probe did not answer within ${goDuration(this.timing.timeoutMs)}`,
            }),
          HANDLER_GRACE_MS,
        );
      };
      if (signal.aborted) cutOff();
      else signal.addEventListener('abort', cutOff, { once: true });
      answer.then(resolve, reject).finally(() => {
        signal.removeEventListener('abort', cutOff);
        cancelGrace?.();
      });
    });
  }

  private record(outcome: ProbeOutcome): void {
    if (outcome.result === 'unknown') {
      this.host.report(this, outcome, false);
      return;
    }
    const result = outcome.result === 'failure' ? 'failure' : 'success';
    const { state, commit } = countResult(this.runState, result, this.timing);
    this.runState = state;
    let changed = false;
    if (commit) {
      changed = this.host.setResult(this.containerId, this.type, result);
      if (result === 'failure' && this.type !== 'readiness') {
        // The kubelet will kill this container; probe again only when a new one runs.
        this.onHold = true;
        this.runState = { run: 0 };
      }
    }
    this.host.report(this, outcome, changed);
  }
}

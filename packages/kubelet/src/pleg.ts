import { CriLabels, PodSandboxState, type RuntimeService } from '@nodelet/cri';
import { type Clock, type EventBus, errorMessage, type Logger, type Loop } from '@nodelet/kernel';
import { type Observable, Subject } from 'rxjs';
import type { RuntimeCache } from './runtime-cache.js';
import { type ContainerRuntimeState, containerStateFromCri } from './runtime-pod.js';

/**
 * The generic PLEG (pod lifecycle event generator): relist every sandbox and container in the runtime
 * each period, diff against the previous relist, emit what changed of containers on the bus, and wake
 * the workers of pods whose sandboxes or containers changed (`changes$`, which the sync loop reads). One relist is two CRI calls
 * (ListPodSandbox + ListContainers) and a map diff, O(containers); it also tells the runtime cache which
 * pods the runtime holds and which containers run. Unhealthy when no relist has succeeded for
 * `unhealthyAfterMs` (3 min): the node then reports "PLEG is not healthy".
 *
 *   absent ──► running      Container Started
 *   running ─► exited       Container Died
 *   absent ──► exited       Container Died (it came and went between two relists)
 *   present ─► absent       Container Removed
 *   other state changes     Container Changed
 *   a sandbox's change      (no bus event) its pod's worker is woken: a sandbox that died is replaced
 */
export interface PlegOptions {
  relistPeriodMs?: number;
  unhealthyAfterMs?: number;
}

export type PlegContainerState = ContainerRuntimeState;
export type PlegSandboxState = 'ready' | 'notready';

/** What a relist saw change for one container or sandbox; `removed` when it is gone. */
export type PlegChange =
  | { kind: 'container'; id: string; state: PlegContainerState | 'removed' }
  | { kind: 'sandbox'; id: string; state: PlegSandboxState | 'removed' };

interface Seen {
  podUid: string;
  kind: PlegChange['kind'];
  state: PlegContainerState | PlegSandboxState;
}

export class GenericPleg {
  readonly relistPeriodMs: number;
  readonly unhealthyAfterMs: number;
  private previous = new Map<string, Seen>();
  private lastSuccess: number;
  private loop?: Loop;
  private readonly changes = new Subject<ReadonlyMap<string, PlegChange[]>>();
  /** What each relist saw change, by pod UID (upstream PLEG's Watch channel). */
  readonly changes$: Observable<ReadonlyMap<string, PlegChange[]>> = this.changes.asObservable();
  private relisting = false;
  private failures = 0;
  private wasHealthy = true;

  constructor(
    private readonly runtime: RuntimeService,
    private readonly bus: EventBus,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: PlegOptions = {},
    private readonly cache?: RuntimeCache,
  ) {
    this.relistPeriodMs = options.relistPeriodMs ?? 1000;
    this.unhealthyAfterMs = options.unhealthyAfterMs ?? 180_000;
    this.lastSuccess = clock.now();
  }

  start(): void {
    this.lastSuccess = this.clock.now();
    this.loop?.stop();
    // relist() handles its own failures: the period stays 1 s while the runtime is down.
    this.loop = this.clock.loop(() => this.relist(), {
      period: this.relistPeriodMs,
      initialDelay: this.relistPeriodMs,
    });
  }

  stop(): void {
    this.loop?.stop();
    this.loop = undefined;
  }

  /** Healthy while the last successful relist is recent enough; the message says why not. */
  healthy(): { healthy: boolean; message: string } {
    const since = this.clock.now() - this.lastSuccess;
    if (since > this.unhealthyAfterMs) {
      return {
        healthy: false,
        message: `pleg was last seen active ${Math.round(since / 1000)}s ago; threshold is ${Math.round(this.unhealthyAfterMs / 1000)}s`,
      };
    }
    return { healthy: true, message: '' };
  }

  /** One relist: list, diff, emit. Exposed for tests (one step at a time). */
  async relist(): Promise<void> {
    if (this.relisting) return;
    this.relisting = true;
    const relistStart = this.clock.now();
    try {
      const startedAt = this.cache?.relistStarted() ?? 0;
      const [{ items: sandboxes }, { containers }] = await Promise.all([
        this.runtime.listPodSandbox({}),
        this.runtime.listContainers({}),
      ]);
      const current = new Map<string, Seen>();
      const changedPods = new Map<string, PlegChange[]>();
      const pods = new Set<string>();
      const running = new Set<string>();
      const note = (podUid: string, change: PlegChange) => {
        const list = changedPods.get(podUid);
        if (list) list.push(change);
        else changedPods.set(podUid, [change]);
      };
      for (const sb of sandboxes) {
        const podUid = sb.labels[CriLabels.PodUID];
        if (!podUid) continue; // not ours
        pods.add(podUid);
        const state = sb.state === PodSandboxState.SANDBOX_READY ? 'ready' : 'notready';
        current.set(sb.id, { podUid, kind: 'sandbox', state });
        if (this.previous.get(sb.id)?.state !== state) note(podUid, { kind: 'sandbox', id: sb.id, state });
      }
      for (const c of containers) {
        const podUid = c.labels[CriLabels.PodUID];
        if (!podUid) continue; // not ours
        pods.add(podUid);
        const state = containerStateFromCri(c.state);
        if (state === 'running') running.add(c.id);
        current.set(c.id, { podUid, kind: 'container', state });
        const before = this.previous.get(c.id);
        if (before?.state === state) continue;
        note(podUid, { kind: 'container', id: c.id, state });
        if (state === 'running') this.bus.emit('[PLEG] Container Started', { podUid, containerId: c.id });
        else if (state === 'exited') this.bus.emit('[PLEG] Container Died', { podUid, containerId: c.id });
        else this.bus.emit('[PLEG] Container Changed', { podUid, containerId: c.id });
      }
      for (const [id, before] of this.previous) {
        if (current.has(id)) continue;
        note(before.podUid, { kind: before.kind, id, state: 'removed' });
        if (before.kind === 'container')
          this.bus.emit('[PLEG] Container Removed', { podUid: before.podUid, containerId: id });
      }
      this.previous = current;
      this.cache?.relistDone(startedAt, pods, running);
      this.lastSuccess = this.clock.now();
      if (this.failures > 0)
        this.logger.info('PLEG relist succeeded again', { failedRelists: this.failures });
      this.failures = 0;
      this.bus.emit('[PLEG] Relisted', {
        startedAt: relistStart,
        durationMs: this.clock.now() - relistStart,
      });
      if (changedPods.size > 0) this.changes.next(changedPods);
    } catch (err) {
      this.failures++;
      // Once per backoff step (1, 2, 4, … failures), not once a second.
      if ((this.failures & (this.failures - 1)) === 0) {
        this.logger.error('PLEG relist failed', { failures: this.failures, err: errorMessage(err) });
      }
    } finally {
      this.relisting = false;
      this.reportHealth();
    }
  }

  private reportHealth(): void {
    const { healthy, message } = this.healthy();
    if (healthy !== this.wasHealthy) {
      this.wasHealthy = healthy;
      this.bus.emit('[PLEG] Health Changed', {
        healthy,
        message: healthy ? 'PLEG is healthy' : `PLEG is not healthy: ${message}`,
      });
    }
  }
}

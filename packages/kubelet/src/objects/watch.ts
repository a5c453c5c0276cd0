import { Informer, type KubeObject, type ListerWatcher } from '@nodelet/client';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';

/**
 * One list + watch the kubelet holds for its pods (an object by name, the Services of a namespace):
 * counted references, an informer started when an API connection exists, and a bounded wait for its
 * first list. What it watches and when it stops is its owner's decision.
 */
export class ReferencedWatch<T extends KubeObject> {
  refs = 0;
  /** Clock time of the last read (idle watches are stopped until the next one). */
  lastAccess: number;
  private informer?: Informer<T>;
  private informerRunning = false;
  private readonly waiters = new Set<() => void>();
  /** Why the last list or watch failed, for the message of a read that timed out. */
  private lastError?: string;

  constructor(
    private readonly what: string,
    private readonly source: () => ListerWatcher<T> | undefined,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.lastAccess = clock.now();
  }

  get running(): boolean {
    return this.informerRunning;
  }

  /** True once a list arrived since the last start. */
  get synced(): boolean {
    return !!this.informer?.hasSynced;
  }

  /** The objects as last listed or watched (kept after a stop). */
  values(): IterableIterator<T> {
    return (this.informer?.store ?? new Map<string, T>()).values();
  }

  /** Starts listing and watching; false when there is no API connection to do it with (yet). */
  start(): boolean {
    if (this.running) return true;
    if (!this.informer) {
      const source = this.source();
      if (!source) return false;
      this.informer = new Informer(this.clock, source, this.handlers(), {
        initialBackoffMs: 500,
        maxBackoffMs: 5_000,
        onError: (phase, err, retryAfterMs) => {
          this.lastError = errorMessage(err);
          this.logger.warn(`Failed to ${phase} ${this.what}, retrying`, {
            err: this.lastError,
            retryAfterMs,
          });
        },
      });
    }
    this.informerRunning = true;
    this.informer.start();
    return true;
  }

  /** Stops listing and watching; what was seen stays readable. */
  stop(): void {
    this.informerRunning = false;
    this.informer?.stop();
    for (const wake of [...this.waiters]) wake();
  }

  /**
   * Waits (at most `timeoutMs` on the clock) for the first list since the last start; throws upstream's
   * "failed to sync" when it does not come, with the last list error when there was one.
   */
  async waitSynced(timeoutMs: number, resource: string): Promise<void> {
    if (this.synced) return;
    await new Promise<void>((resolve) => {
      const finish = () => {
        cancel();
        this.waiters.delete(finish);
        resolve();
      };
      const cancel = this.clock.setTimeout(finish, timeoutMs);
      this.waiters.add(finish);
    });
    if (!this.synced) {
      throw new Error(
        `failed to sync ${resource} cache: timed out waiting for the condition` +
          (this.lastError ? ` (${this.lastError})` : ''),
      );
    }
  }

  private handlers() {
    return {
      listed: () => {
        this.lastError = undefined;
        for (const wake of [...this.waiters]) wake();
      },
    };
  }
}

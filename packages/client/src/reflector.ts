import { backoffDelay, type Clock, type Loop, type LoopOptions, type StepResult } from '@nodelet/kernel';
import {
  ApiError,
  isGone,
  type ListOptions,
  type ListWatchApi,
  type ObjectList,
  type WatchEvent,
  type WatchHandle,
} from './kube-api.js';

/** What a Reflector lists and watches: one resource, with its selectors fixed. */
export interface ListerWatcher<T> {
  list(): Promise<ObjectList<T>>;
  watch(resourceVersion: string, onEvent: (e: WatchEvent<T>) => void): WatchHandle;
}

/** A `ListerWatcher` of a collection path (`/api/v1/services`) on a `ListWatchApi`. */
export function listWatcher<T>(
  api: ListWatchApi,
  path: string,
  options: ListOptions & { watchTimeoutSeconds?: () => number } = {},
): ListerWatcher<T> {
  const { watchTimeoutSeconds, ...selectors } = options;
  return {
    list: () => api.list<T>(path, selectors),
    watch: (resourceVersion, onEvent) =>
      api.watch<T>(
        path,
        {
          ...selectors,
          resourceVersion,
          ...(watchTimeoutSeconds ? { timeoutSeconds: watchTimeoutSeconds() } : {}),
        },
        onEvent,
      ),
  };
}

/** Where a Reflector's results go: a store, an informer, a snapshot source. */
export interface ReflectorHandler<T> {
  /** A list: everything there is now, at `resourceVersion` (the first list, and relists). */
  replace(items: T[], resourceVersion: string): void;
  /** One change from the watch. */
  event(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void;
}

export interface ReflectorOptions {
  /** First wait after a failed list or watch; doubles up to `maxBackoffMs`. */
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** Each wait is lengthened by up to this fraction of itself; 0 when unset. */
  jitter?: number;
  /** A watch that ends within this long with nothing in it counts as a failure (default 1 s). */
  minWatchMs?: number;
  /** A list or watch failed; the next try is in `retryAfterMs`. */
  onError?(phase: 'list' | 'watch', err: unknown, retryAfterMs: number): void;
  /** The watch's resource version expired (410 Gone): listing again at once. */
  onExpired?(resourceVersion: string): void;
}

/**
 * Upstream's Reflector (client-go tools/cache): list, then watch from the list's resource version with
 * bookmarks, keeping the version of the last event or bookmark so a resumed watch starts close to now.
 * All on the kernel clock (one `clock.loop`), so a test runs minutes of outage in milliseconds:
 *
 *   list ──ok──► replace ─► watch(rv) ──event──► handler; rv = event's
 *    ▲  fail: backoff          │ closed by the server ──► watch(rv) again (at once)
 *    │                         │ failed, or ended at once with nothing ──► backoff ─► watch(rv)
 *    └──── 410 Gone (at once) ─┘ another ERROR event ──► backoff ─► list
 *
 * Backoff (initial doubling to max) resets after a list, and after a watch that delivered something.
 */
export class Reflector<T> {
  private loop?: Loop;
  private watchHandle?: WatchHandle;
  private needList = true;
  private version = '';
  /** Lists done (the first, and relists after 410 Gone or failures). */
  lists = 0;

  constructor(
    private readonly clock: Clock,
    private readonly source: ListerWatcher<T>,
    private readonly handler: ReflectorHandler<T>,
    private readonly options: ReflectorOptions,
  ) {}

  /** The resource version a resumed watch starts from ('' before the first list). */
  get resourceVersion(): string {
    return this.version;
  }

  get running(): boolean {
    return !!this.loop && !this.loop.stopped;
  }

  start(): void {
    if (this.running) return;
    this.needList = true;
    this.loop = this.clock.loop(() => this.step(), this.loopOptions);
  }

  stop(): void {
    this.loop?.stop();
    this.watchHandle?.stop();
    this.watchHandle = undefined;
  }

  private get loopOptions(): LoopOptions {
    const { initialBackoffMs, maxBackoffMs, jitter = 0 } = this.options;
    return { period: 0, backoff: { initialMs: initialBackoffMs, maxMs: maxBackoffMs }, jitter };
  }

  /** The wait after the failure being reported now (the loop counts it once the step returns). */
  private retryAfter(): number {
    return backoffDelay(this.loopOptions, (this.loop?.failures ?? 0) + 1);
  }

  /** One list (when needed) and one watch, to its end. */
  private async step(): Promise<StepResult> {
    const loop = this.loop;
    const listing = this.needList;
    if (listing) {
      let list: ObjectList<T>;
      try {
        list = await this.source.list();
      } catch (err) {
        if (!loop?.stopped) this.options.onError?.('list', err, this.retryAfter());
        return false;
      }
      if (loop?.stopped) return;
      this.lists++;
      this.needList = false;
      this.version = list.resourceVersion;
      this.handler.replace(list.items, list.resourceVersion);
    }
    return this.watchOnce(loop, listing);
  }

  private async watchOnce(loop: Loop | undefined, listed: boolean): Promise<StepResult> {
    if (loop?.stopped) return;
    const started = this.clock.now();
    let delivered = 0;
    let failure: ApiError | undefined;
    // Set once `watch` returns: an ERROR sent while it runs is stopped right after.
    const opened: { handle?: WatchHandle } = {};
    const handle = this.source.watch(this.version, (e) => {
      if (loop?.stopped || failure) return;
      const rv = (e.object as { metadata?: { resourceVersion?: string } } | undefined)?.metadata
        ?.resourceVersion;
      if (e.type === 'ERROR') {
        const status = (e.object ?? {}) as { code?: number; reason?: string; message?: string };
        failure = new ApiError(status.code ?? 0, status.reason ?? 'Unknown', status.message ?? 'watch error');
        opened.handle?.stop();
        return;
      }
      delivered++;
      if (rv) this.version = rv;
      if (e.type !== 'BOOKMARK') this.handler.event(e.type, e.object);
    });
    opened.handle = handle;
    if (failure) handle.stop();
    this.watchHandle = handle;
    const err = (await handle.done) ?? failure;
    if (this.watchHandle === handle) this.watchHandle = undefined;
    if (loop?.stopped) return;
    if (isGone(err)) {
      this.options.onExpired?.(this.version);
      this.needList = true;
      return { after: 0 };
    }
    if (err) {
      // An ERROR event other than 410: what we hold may be wrong, list again (after a backoff).
      if (err === failure) this.needList = true;
      // After a list, or a watch that delivered, the connection was healthy: the backoff starts over.
      const healthy = listed || delivered > 0;
      const wait = healthy ? this.options.initialBackoffMs : this.retryAfter();
      this.options.onError?.('watch', err, wait);
      return healthy && (loop?.failures ?? 0) > 0 ? { after: wait } : false;
    }
    // Closed by the server (its timeout): watch again from where we are, unless it ended at once with
    // nothing in it — a server doing that every time is not hammered.
    if (delivered === 0 && this.clock.now() - started < (this.options.minWatchMs ?? 1_000)) return false;
    return { after: 0 };
  }
}

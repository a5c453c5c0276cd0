import type { Pod } from '@nodelet/api';
import { type Clock, errorMessage, type Logger, type Loop, type StepResult } from '@nodelet/kernel';
import {
  type CoreEvent,
  isAlreadyExists,
  isNotFound,
  isTransient,
  type KubeApi,
  type ObjectReference,
  rfc3339Seconds,
  TokenBucket,
} from '@nodelet/client';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorderOptions {
  nodeName: string;
  /** Writes per second to the API server, and burst (upstream eventRecordQPS / eventBurst: 50 / 100). */
  qps?: number;
  burst?: number;
  /** Events waiting to be written; beyond it the oldest are dropped (upstream's broadcaster: 1000). */
  maxQueued?: number;
  /** Tries per event before it is dropped (upstream: 12, 10 s apart). */
  maxTries?: number;
  retryDelayMs?: number;
}

interface Entry {
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
  /** Set once the event exists on the server; later repeats are patches. */
  created: boolean;
}

interface Pending {
  key: string;
  event: CoreEvent;
  tries: number;
}

/** Similar events (same object, type, reason) with more than this many messages in the window are combined. */
const aggregateMaxEvents = 10;
const aggregateWindowMs = 10 * 60_000;
/** Per-object spam filter (upstream EventSourceObjectSpamFilter): burst 25, one more every 5 min. */
const spamBurst = 25;
const spamRefillMs = 5 * 60_000;
const cacheSize = 4096;

/**
 * The kubelet's event recorder (upstream client-go record + EventCorrelator), writing core/v1 Events —
 * what `kubectl describe` and `kubectl get events` read:
 *
 * - **dedupe**: an identical event (object, type, reason, message) again is one Event whose `count` and
 *   `lastTimestamp` are patched;
 * - **aggregation**: more than 10 similar events (same object, type, reason, different messages) within
 *   10 minutes become one "(combined from similar events): …" event;
 * - **spam filter**: at most 25 events per object, then one per 5 minutes;
 * - **rate limit** of the writes: 50 per second, burst 100; a bounded queue (1000, oldest dropped);
 *   transient failures (an API outage) are retried up to 12 times, 10 s apart.
 *
 * `record` never blocks and never throws: events are best-effort, as upstream.
 */
export class EventRecorder {
  private readonly entries = new Map<string, Entry>();
  private readonly similar = new Map<string, { messages: Set<string>; since: number }>();
  private readonly spam = new Map<string, { tokens: number; last: number }>();
  private readonly queue: Pending[] = [];
  private readonly limiter: TokenBucket;
  private loop?: Loop;
  private draining = false;
  private seq = 0;
  dropped = 0;

  constructor(
    private readonly api: KubeApi,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: EventRecorderOptions,
  ) {
    this.limiter = new TokenBucket(clock, options.qps ?? 50, options.burst ?? 100);
  }

  start(): void {
    if (this.running) return;
    // A failed write waits `retryDelayMs` (the API server is away); a new event kicks the loop.
    const retry = this.options.retryDelayMs ?? 10_000;
    this.loop = this.clock.loop(() => this.drain(), {
      period: retry,
      backoff: { initialMs: retry, maxMs: retry },
    });
  }

  private get running(): boolean {
    return !!this.loop && !this.loop.stopped;
  }

  stop(): void {
    this.loop?.stop();
    this.limiter.close();
  }

  /** Events queued and not yet written. */
  get queued(): number {
    return this.queue.length;
  }

  pod(pod: Pod, type: EventType, reason: string, message: string, container?: string): void {
    const meta = pod.metadata ?? {};
    this.record(
      {
        kind: 'Pod',
        namespace: meta.namespace ?? 'default',
        name: meta.name,
        uid: meta.uid,
        apiVersion: 'v1',
        ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
        ...(container ? { fieldPath: `spec.containers{${container}}` } : {}),
      },
      type,
      reason,
      message,
    );
  }

  /** An event about this node (upstream's nodeRef: kind Node, UID = the node name). */
  node(type: EventType, reason: string, message: string): void {
    const name = this.options.nodeName;
    this.record({ kind: 'Node', name, uid: name, apiVersion: 'v1' }, type, reason, message);
  }

  record(ref: ObjectReference, type: EventType, reason: string, message: string): void {
    const now = this.clock.now();
    const objectKey = [ref.kind, ref.namespace ?? '', ref.name, ref.uid ?? '', ref.fieldPath ?? ''].join('/');
    if (!this.allowSpam(objectKey, now)) return;

    // Aggregation: too many different messages for the same (object, type, reason) are combined.
    const similarKey = `${objectKey}/${type}/${reason}`;
    let similar = this.similar.get(similarKey);
    if (!similar || now - similar.since > aggregateWindowMs) {
      similar = { messages: new Set(), since: now };
      this.similar.set(similarKey, similar);
      trim(this.similar);
    }
    similar.messages.add(message);
    const text =
      similar.messages.size > aggregateMaxEvents ? `(combined from similar events): ${message}` : message;
    const key =
      similar.messages.size > aggregateMaxEvents ? `${similarKey}/(combined)` : `${similarKey}/${message}`;

    const stamp = rfc3339Seconds(now);
    const namespace = ref.namespace || 'default';
    let entry = this.entries.get(key);
    if (entry) {
      entry.count++;
      this.entries.delete(key);
      this.entries.set(key, entry); // most recently used last
    } else {
      entry = {
        name: `${ref.name}.${(BigInt(now) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}`,
        namespace,
        count: 1,
        firstTimestamp: stamp,
        created: false,
      };
      this.entries.set(key, entry);
      trim(this.entries);
    }
    const event: CoreEvent = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: entry.name, namespace },
      involvedObject: ref,
      reason,
      message: text,
      source: { component: 'kubelet', host: this.options.nodeName },
      firstTimestamp: entry.firstTimestamp,
      lastTimestamp: stamp,
      count: entry.count,
      type,
      reportingComponent: 'kubelet',
      reportingInstance: this.options.nodeName,
    };
    // A queued write of the same event is replaced by the newer count.
    const queued = this.queue.find((p) => p.key === key);
    if (queued) queued.event = event;
    else {
      this.queue.push({ key, event, tries: 0 });
      const max = this.options.maxQueued ?? 1000;
      if (this.queue.length > max) {
        this.queue.splice(0, this.queue.length - max);
        this.dropped++;
        this.logger.once('events-dropped', 'warn', 'Event queue full; dropping the oldest events', { max });
      }
    }
    this.kick();
  }

  private allowSpam(objectKey: string, now: number): boolean {
    let bucket = this.spam.get(objectKey);
    if (!bucket) {
      bucket = { tokens: spamBurst, last: now };
      this.spam.set(objectKey, bucket);
      trim(this.spam);
    }
    bucket.tokens = Math.min(spamBurst, bucket.tokens + (now - bucket.last) / spamRefillMs);
    bucket.last = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** Has the queue written soon, unless a write failed and the loop waits before retrying. */
  private kick(): void {
    if (this.running && !this.draining && this.loop!.failures === 0) this.loop!.kick();
  }

  /** A step: writes queued events one at a time, each after a token of the rate limiter. */
  private async drain(): Promise<StepResult> {
    this.draining = true;
    try {
      while (this.running && this.queue.length > 0) {
        await this.limiter.take();
        if (!this.running) return;
        const pending = this.queue.shift()!;
        const ok = await this.write(pending);
        if (!ok) {
          pending.tries++;
          if (pending.tries >= (this.options.maxTries ?? 12)) {
            this.dropped++;
            this.logger.warn('Dropping event after repeated failures', {
              event: pending.event.metadata?.name,
              reason: pending.event.reason,
            });
            continue;
          }
          // Keep the event first in line and wait before trying again (the API server is away).
          if (!this.queue.some((p) => p.key === pending.key)) this.queue.unshift(pending);
          return false;
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /** Creates the event, or patches its count when it exists; true when done (or not worth retrying). */
  private async write(pending: Pending): Promise<boolean> {
    const entry = this.entries.get(pending.key);
    const { event } = pending;
    const { namespace, name } = event.metadata as { namespace: string; name: string };
    try {
      if (entry?.created) {
        try {
          await this.api.patchEvent(namespace, name, {
            count: event.count,
            lastTimestamp: event.lastTimestamp,
            message: event.message,
          });
          return true;
        } catch (err) {
          if (!isNotFound(err)) throw err;
          // Expired on the server: create it again.
        }
      }
      await this.api.createEvent(event);
      if (entry) entry.created = true;
      return true;
    } catch (err) {
      if (isTransient(err)) {
        this.logger.debug('Event write failed; will retry', { event: name, err: errorMessage(err) });
        return false;
      }
      if (entry && isAlreadyExists(err)) {
        entry.created = true;
        return false;
      }
      this.logger.warn('Server rejected event (will not retry)', { event: name, err: errorMessage(err) });
      return true;
    }
  }
}

function trim<K, V>(map: Map<K, V>): void {
  while (map.size > cacheSize) map.delete(map.keys().next().value as K);
}

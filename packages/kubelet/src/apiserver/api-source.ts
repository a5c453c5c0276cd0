import { ConfigMirrorAnnotation, type Pod } from '@nodelet/api';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import { type Observable, Subject } from 'rxjs';
import type { PodSource } from '../config/source.js';
import { isGone, type KubeApi, type WatchEvent, type WatchHandle } from './kube-api.js';

export interface ApiPodSourceOptions {
  nodeName: string;
  /** First wait after a failed list or watch; doubles up to `maxBackoffMs`. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * The API server as a pod source (upstream config/apiserver.go, a reflector): list the pods bound to
 * this node (`spec.nodeName=<node>`), then watch from the list's resource version with bookmarks; on
 * 410 Gone (the version was compacted) list again. Each change becomes a full snapshot for PodConfig
 * (changes arriving together are coalesced into one).
 *
 *   list ──ok──► watch(rv) ──event──► snapshot; rv = event's ──closed──► watch(rv)
 *    ▲  fail: backoff          │ 410 Gone / ERROR                └─fail: backoff ─► watch(rv)
 *    └─────────────────────────┘
 *
 * Mirror pods (the API's copies of static pods) are not run: they are kept apart (`mirrorPods`) for the
 * mirror-pod manager. Pods already terminal in the API (Succeeded/Failed) that this kubelet never ran
 * are left alone. Until the first list succeeds the source sends nothing, so a kubelet that starts
 * while the API server is away adopts its running pods instead of removing them.
 */
export class ApiPodSource implements PodSource {
  readonly name = 'api' as const;
  private readonly subject = new Subject<Pod[]>();
  readonly snapshots$: Observable<Pod[]> = this.subject.asObservable();
  /** Every pod bound to this node, as the API last said, by `namespace/name`. */
  private readonly pods = new Map<string, Pod>();
  private readonly emitted = new Set<string>();
  private resourceVersion = '';
  private watch?: WatchHandle;
  private running = false;
  private emitQueued = false;
  private backoffMs: number;
  private cancelTimer?: () => void;
  private listeners: ((pods: ReadonlyMap<string, Pod>, changed?: ReadonlySet<string>) => void)[] = [];
  /** Keys changed since the last snapshot; undefined after a list (everything may have). */
  private changed?: Set<string> = new Set();
  /** Lists done (the first, and relists after 410 or failures). */
  lists = 0;
  synced = false;

  constructor(
    private readonly api: KubeApi,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: ApiPodSourceOptions,
  ) {
    this.backoffMs = options.initialBackoffMs ?? 500;
  }

  get fieldSelector(): string {
    return `spec.nodeName=${this.options.nodeName}`;
  }

  originOf(): string {
    return 'api';
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    void this.list();
  }

  stop(): void {
    this.running = false;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.watch?.stop();
    this.watch = undefined;
  }

  /** The pod the API holds under this name (mirror pods included). */
  get(namespace: string, name: string): Pod | undefined {
    return this.pods.get(`${namespace}/${name}`);
  }

  /** Mirror pods on this node by `namespace/name`. */
  mirrorPods(): Map<string, Pod> {
    const out = new Map<string, Pod>();
    for (const [key, pod] of this.pods) if (isMirrorPod(pod)) out.set(key, pod);
    return out;
  }

  /**
   * Called (coalesced) after every change of the API's pods, mirror pods included, with the keys
   * (`namespace/name`) that changed — undefined after a list.
   */
  onChange(listener: (pods: ReadonlyMap<string, Pod>, changed?: ReadonlySet<string>) => void): void {
    this.listeners.push(listener);
  }

  private async list(): Promise<void> {
    if (!this.running) return;
    try {
      const { items, resourceVersion } = await this.api.listPods(this.fieldSelector);
      if (!this.running) return;
      this.lists++;
      this.pods.clear();
      for (const pod of items) this.pods.set(key(pod), pod);
      this.resourceVersion = resourceVersion;
      this.synced = true;
      this.changed = undefined;
      this.backoffMs = this.options.initialBackoffMs ?? 500;
      this.emit(true);
      this.startWatch();
    } catch (err) {
      this.logger.warn('Failed to list pods; will retry', {
        retryAfterMs: this.backoffMs,
        err: errorMessage(err),
      });
      this.retry(() => this.list());
    }
  }

  private startWatch(): void {
    if (!this.running) return;
    const started = this.clock.now();
    let gone = false;
    let events = 0;
    const handle = this.api.watchPods(this.fieldSelector, this.resourceVersion, (e) => {
      events++;
      if (this.handle(e) === 'gone') {
        gone = true;
        handle.stop();
      }
    });
    this.watch = handle;
    void handle.done.then((err) => {
      if (this.watch === handle) this.watch = undefined;
      if (!this.running) return;
      if (gone || isGone(err)) {
        this.logger.info('Watch of pods expired (410 Gone); listing again', {
          resourceVersion: this.resourceVersion,
        });
        return void this.list();
      }
      if (err) {
        this.logger.warn('Watch of pods failed; will retry', {
          retryAfterMs: this.backoffMs,
          err: errorMessage(err),
        });
        return this.retry(() => this.startWatch());
      }
      // Closed by the server (its timeout): watch again from where we are. A watch that ends at once
      // with nothing in it waits a little first, so a misbehaving server is not hammered.
      if (events === 0 && this.clock.now() - started < 1_000) return this.retry(() => this.startWatch());
      this.backoffMs = this.options.initialBackoffMs ?? 500;
      this.startWatch();
    });
  }

  private retry(fn: () => void): void {
    const wait = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.options.maxBackoffMs ?? 5_000);
    this.cancelTimer?.();
    this.cancelTimer = this.clock.setTimeout(() => {
      this.cancelTimer = undefined;
      if (this.running) fn();
    }, wait);
  }

  /** Applies one watch event; 'gone' when the watch must be restarted with a list. */
  private handle(e: WatchEvent): 'gone' | void {
    const rv = e.object?.metadata?.resourceVersion as string | undefined;
    switch (e.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.pods.set(key(e.object), e.object);
        this.changed?.add(key(e.object));
        break;
      case 'DELETED':
        this.pods.delete(key(e.object));
        this.changed?.add(key(e.object));
        break;
      case 'BOOKMARK':
        if (rv) this.resourceVersion = rv;
        return;
      case 'ERROR': {
        const code = e.object?.code;
        this.logger.warn('Watch of pods returned an error', { code, message: e.object?.message });
        return 'gone';
      }
      default:
        return;
    }
    if (rv) this.resourceVersion = rv;
    this.backoffMs = this.options.initialBackoffMs ?? 500;
    this.emit(false);
  }

  /** Sends the snapshot once the current burst of events is applied. */
  private emit(now: boolean): void {
    if (now) return this.send();
    if (this.emitQueued) return;
    this.emitQueued = true;
    queueMicrotask(() => {
      this.emitQueued = false;
      if (this.running) this.send();
    });
  }

  private send(): void {
    const snapshot: Pod[] = [];
    const emitted = new Set<string>();
    for (const pod of this.pods.values()) {
      if (isMirrorPod(pod)) continue;
      const uid = pod.metadata?.uid ?? '';
      const phase = pod.status?.phase;
      // A pod finished before this kubelet ever ran it (a restart after it completed) is not run again.
      if ((phase === 'Succeeded' || phase === 'Failed') && !this.emitted.has(uid)) continue;
      snapshot.push(pod);
      emitted.add(uid);
    }
    this.emitted.clear();
    for (const uid of emitted) this.emitted.add(uid);
    this.subject.next(snapshot);
    const changed = this.changed;
    this.changed = new Set();
    for (const listener of this.listeners) listener(this.pods, changed);
  }
}

const key = (pod: Pod) => `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name}`;

export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata?.annotations?.[ConfigMirrorAnnotation] !== undefined;
}

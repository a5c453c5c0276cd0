import { ConfigMirrorAnnotation, type Pod } from '@nodelet/api';
import { type KubeApi, type ListerWatcher, Reflector } from '@nodelet/client';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import { type Observable, Subject } from 'rxjs';
import type { PodSource } from '../config/source.js';

export interface ApiPodSourceOptions {
  nodeName: string;
  /** First wait after a failed list or watch; doubles up to `maxBackoffMs`. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * The API server as a pod source (upstream config/apiserver.go: a Reflector into an undelta store):
 * the pods bound to this node (`spec.nodeName=<node>`), listed and watched by @nodelet/client's
 * `Reflector` (bookmarks, relist on 410 Gone, backoff 500 ms doubling to 5 s). Each change becomes a
 * full snapshot for PodConfig (changes arriving together are coalesced into one).
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
  private readonly reflector: Reflector<Pod>;
  private running = false;
  private emitQueued = false;
  private listeners: ((pods: ReadonlyMap<string, Pod>, changed?: ReadonlySet<string>) => void)[] = [];
  /** Keys changed since the last snapshot; undefined after a list (everything may have). */
  private changed?: Set<string> = new Set();
  synced = false;

  constructor(
    api: KubeApi,
    clock: Clock,
    private readonly logger: Logger,
    private readonly options: ApiPodSourceOptions,
  ) {
    const fieldSelector = this.fieldSelector;
    const pods: ListerWatcher<Pod> = {
      list: () => api.listPods(fieldSelector),
      watch: (resourceVersion, onEvent) => api.watchPods(fieldSelector, resourceVersion, onEvent),
    };
    this.reflector = new Reflector(
      clock,
      pods,
      {
        replace: (items) => this.replace(items),
        event: (type, pod) => this.apply(type, pod),
      },
      {
        initialBackoffMs: options.initialBackoffMs ?? 500,
        maxBackoffMs: options.maxBackoffMs ?? 5_000,
        onError: (phase, err, retryAfterMs) =>
          this.logger.warn(
            phase === 'list' ? 'Failed to list pods; will retry' : 'Watch of pods failed; will retry',
            {
              retryAfterMs,
              err: errorMessage(err),
            },
          ),
        onExpired: (resourceVersion) =>
          this.logger.info('Watch of pods expired (410 Gone); listing again', { resourceVersion }),
      },
    );
  }

  get fieldSelector(): string {
    return `spec.nodeName=${this.options.nodeName}`;
  }

  /** Lists done (the first, and relists after 410 or failures). */
  get lists(): number {
    return this.reflector.lists;
  }

  originOf(): string {
    return 'api';
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.reflector.start();
  }

  stop(): void {
    this.running = false;
    this.reflector.stop();
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

  private replace(items: Pod[]): void {
    this.pods.clear();
    for (const pod of items) this.pods.set(key(pod), pod);
    this.synced = true;
    this.changed = undefined;
    this.emit(true);
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: Pod): void {
    if (type === 'DELETED') this.pods.delete(key(pod));
    else this.pods.set(key(pod), pod);
    this.changed?.add(key(pod));
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

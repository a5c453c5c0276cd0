import { toleratesTaint, type TolerationLike } from '@nodelet/api';
import type { Clock, Logger } from '@nodelet/kernel';
import { rfc3339, type KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import type { EventRecorder } from './event-recorder.js';
import type { Taint } from './node-taints.js';
import { WorkQueue } from './work-queue.js';

/**
 * The taint eviction controller (upstream's pkg/controller/tainteviction, once the node lifecycle
 * controller's taint manager): deletes the pods of a node with NoExecute taints they do not tolerate.
 *
 *   a NoExecute taint no toleration matches          → delete the pod now
 *   every one tolerated, some for tolerationSeconds  → delete it when the first of those runs out, counted
 *                                                      from the taint's timeAdded (≤ 0 s: at once)
 *   every one tolerated without tolerationSeconds    → keep it (DaemonSet pods, static pods)
 *   the taints go before the time is up              → the deletion is cancelled
 *
 * A deleted pod first gets the condition DisruptionTarget=True (DeletionByTaintManager) and a
 * `TaintManagerEviction` event. Its deletion is graceful: on a node whose kubelet is gone it stays
 * Terminating, while its controller (which counts only pods not being deleted) makes a replacement.
 */
export class TaintEvictionController {
  private readonly queue: WorkQueue;
  /** Pod key → the pending deletion's time and timer. */
  private readonly scheduled = new Map<string, { at: number; cancel: () => void }>();
  /** Node name → keys of the pods bound to it. */
  private readonly podsByNode = new Map<string, Set<string>>();
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly events?: EventRecorder,
  ) {
    this.queue = new WorkQueue('taint-eviction', (k) => this.sync(k), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    this.unsubscribe.push(
      store.subscribe('pods', (e) => {
        const key = `${e.namespace}/${e.name}`;
        this.index(key, e.prev?.spec?.nodeName, e.op === 'delete' ? undefined : e.object.spec?.nodeName);
        this.queue.add(key);
      }),
      store.subscribe('nodes', (e) => {
        if (e.op !== 'delete' && sameNoExecute(e.prev, e.object)) return;
        for (const key of this.podsByNode.get(e.name) ?? []) this.queue.add(key);
      }),
    );
    for (const { object } of store.listAll('pods')) {
      const key = `${object.metadata.namespace}/${object.metadata.name}`;
      this.index(key, undefined, object.spec?.nodeName);
      this.queue.add(key);
    }
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
    for (const { cancel } of this.scheduled.values()) cancel();
    this.scheduled.clear();
    this.queue.stop();
  }

  private index(key: string, before: string | undefined, after: string | undefined): void {
    if (before === after) return;
    if (before) {
      const set = this.podsByNode.get(before);
      set?.delete(key);
      if (set?.size === 0) this.podsByNode.delete(before);
    }
    if (after) {
      const set = this.podsByNode.get(after) ?? new Set<string>();
      set.add(key);
      this.podsByNode.set(after, set);
    }
  }

  /** One pod: evict it now, at a later time, or not at all. */
  sync(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    const pod = this.registry.store.get('pods', namespace, name)?.object;
    const node = pod?.spec?.nodeName && this.registry.store.get('nodes', '', pod.spec.nodeName)?.object;
    const taints = node ? noExecuteTaints(node) : [];
    if (!pod || pod.metadata.deletionTimestamp || taints.length === 0) return this.cancel(key, pod);
    const at = evictionTime(taints, pod.spec?.tolerations ?? [], this.clock.now());
    if (at === undefined) return this.cancel(key, pod);
    if (at <= this.clock.now()) {
      this.cancel(key, undefined);
      return this.evict(pod);
    }
    const pending = this.scheduled.get(key);
    if (pending?.at === at) return;
    pending?.cancel();
    const cancel = this.clock.setTimeout(() => {
      this.scheduled.delete(key);
      this.queue.add(key);
    }, at - this.clock.now());
    this.scheduled.set(key, { at, cancel });
  }

  private cancel(key: string, pod: KubeObject | undefined): void {
    const pending = this.scheduled.get(key);
    if (!pending) return;
    pending.cancel();
    this.scheduled.delete(key);
    if (pod && !pod.metadata.deletionTimestamp)
      this.events?.record(
        pod,
        'Normal',
        'TaintManagerEviction',
        `Cancelling deletion of Pod ${pod.metadata.namespace}/${pod.metadata.name}`,
      );
  }

  private evict(pod: KubeObject): void {
    const namespace = pod.metadata.namespace!;
    const name = pod.metadata.name!;
    this.logger.info('deleting pod for a NoExecute taint', {
      pod: `${namespace}/${name}`,
      node: pod.spec.nodeName,
    });
    this.events?.record(
      pod,
      'Normal',
      'TaintManagerEviction',
      `Marking for deletion Pod ${namespace}/${name}`,
    );
    try {
      this.registry.store.update('pods', namespace, name, (p) => {
        const conditions = (p.status?.conditions ?? []).filter((c: any) => c?.type !== 'DisruptionTarget');
        conditions.push({
          type: 'DisruptionTarget',
          status: 'True',
          reason: 'DeletionByTaintManager',
          message: 'Taint manager: deleting due to NoExecute taint',
          lastTransitionTime: rfc3339(this.clock.now()),
        });
        p.status = { ...(p.status ?? {}), conditions };
        return p;
      });
      this.registry.delete(this.registry.byStorage('pods'), namespace, name);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
}

function noExecuteTaints(node: KubeObject): Taint[] {
  const taints: Taint[] = Array.isArray(node.spec?.taints) ? node.spec.taints : [];
  return taints.filter((t) => t?.effect === 'NoExecute');
}

function sameNoExecute(a: KubeObject | undefined, b: KubeObject): boolean {
  return JSON.stringify(a ? noExecuteTaints(a) : []) === JSON.stringify(noExecuteTaints(b));
}

/**
 * When a pod with `tolerations` must go from a node with NoExecute `taints`: `now` if one is not
 * tolerated; else the earliest of (taint's timeAdded + the first matching toleration's seconds);
 * undefined when every taint is tolerated for ever.
 */
export function evictionTime(
  taints: readonly Taint[],
  tolerations: readonly (TolerationLike & { tolerationSeconds?: number | null })[],
  now: number,
): number | undefined {
  let at: number | undefined;
  for (const taint of taints) {
    const toleration = tolerations.find((t) => toleratesTaint(t, taint));
    if (!toleration) return now;
    const seconds = toleration.tolerationSeconds;
    if (seconds === undefined || seconds === null) continue;
    const added = Date.parse(taint.timeAdded ?? '');
    const deadline = (Number.isNaN(added) ? now : added) + Math.max(0, seconds) * 1000;
    at = at === undefined ? deadline : Math.min(at, deadline);
  }
  return at;
}

import { canonicalJson } from '@nodelet/api';
import { Backoff, type Clock, type Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import type { EventRecorder } from './event-recorder.js';
import { claimPods, createPod, deletePod, PodOwnerController } from './workload-control.js';
import { writeStatusIfChanged } from './status-write.js';
import { ensureHistory, revisionHashLabel, truncateHistory } from './controller-history.js';
import { nodeShouldRunDaemonPod, newDaemonPod, targetNodeOf, type NodeFit } from './daemon-set-nodes.js';
import { rollingUpdateStep } from './daemon-set-update.js';
import { scaledValue } from './deployment-util.js';
import { controllerRef, isPodAvailable, isPodReady } from './pod-control.js';

/**
 * The DaemonSet controller (upstream's pkg/controller/daemon): one pod per node that the template's node
 * selector and required node affinity select and whose taints the daemon pod tolerates
 * (`daemon-set-nodes.ts`).
 *
 * - manage: a node that should run the daemon and has no pod gets one (bound by the scheduler through
 *   its node affinity term); failed pods are deleted and so replaced; surplus pods on a node are deleted,
 *   oldest kept; pods on a node that should no longer run it, or on a node that is gone (upstream's pod
 *   garbage collector does that part), are deleted.
 * - update: RollingUpdate replaces pods within maxUnavailable / maxSurge (`daemon-set-update.ts`), once
 *   the manage step had nothing to do; OnDelete replaces a pod only when someone deletes it.
 * - history: a ControllerRevision per template; pods carry its `controller-revision-hash`.
 * - status: desired/current/ready/available/updated/misscheduled counts over the nodes, observedGeneration.
 */
const apiVersion = 'apps/v1';
const kind = 'DaemonSet';

export class DaemonSetController extends PodOwnerController {
  /** Per DaemonSet and node: a kubelet that keeps failing the pod is not fought in a hot loop. */
  private readonly failedPodsBackoff: Backoff;

  constructor(registry: Registry, clock: Clock, logger: Logger, events?: EventRecorder) {
    super(registry, clock, logger, events, 'daemonsets', kind);
    this.failedPodsBackoff = new Backoff(clock, { initialMs: 1000, maxMs: 15 * 60_000 });
  }

  protected override watchMore(): (() => void)[] {
    return [
      ...super.watchMore(),
      this.registry.store.subscribe('nodes', (e) => {
        // A heartbeat changes nothing a DaemonSet looks at.
        if (e.op === 'update' && e.prev && !nodeChanged(e.prev, e.object)) return;
        this.enqueueAll();
      }),
    ];
  }

  /** One step for the DaemonSet `namespace/name`. */
  sync(key: string): void {
    const [namespace, name] = key.split('/') as [string, string];
    const ds = this.registry.store.get('daemonsets', namespace, name)?.object;
    if (!ds || ds.metadata.deletionTimestamp) return;
    const history = ensureHistory(this.registry, ds, apiVersion, kind);
    const hash: string = history.current.metadata.labels?.[revisionHashLabel] ?? '';
    const nodes = this.registry.store.listAll('nodes').map((s) => s.object);
    const fits = new Map(nodes.map((n) => [n.metadata.name!, nodeShouldRunDaemonPod(n, ds)]));
    const changed = this.manage(ds, fits, hash);
    if (!changed && ds.spec?.updateStrategy?.type === 'RollingUpdate') this.rollingUpdate(ds, fits, hash);
    const nodeToPods = this.nodeToPods(ds);
    const hashes = new Set(
      [...nodeToPods.values()].flat().map((p) => p.metadata.labels?.[revisionHashLabel]),
    );
    const inUse = new Set(
      history.all
        .filter((r) => hashes.has(r.metadata.labels?.[revisionHashLabel]))
        .map((r) => r.metadata.name!),
    );
    truncateHistory(this.registry, ds, history, inUse);
    this.updateStatus(ds, fits, nodeToPods, hash, history.collisionCount);
  }

  /** The DaemonSet's pods by the node each is for; pods for no node are left out. */
  private nodeToPods(ds: KubeObject): Map<string, KubeObject[]> {
    const out = new Map<string, KubeObject[]>();
    for (const pod of claimPods(this.registry, ds, apiVersion, kind, this.logger)) {
      const node = targetNodeOf(pod);
      if (node !== undefined) out.set(node, [...(out.get(node) ?? []), pod]);
    }
    return out;
  }

  /** podsShouldBeOnNode for every node; whether anything was created or deleted. */
  private manage(ds: KubeObject, fits: Map<string, NodeFit>, hash: string): boolean {
    const create: string[] = [];
    const remove: string[] = [];
    const surge = ds.spec?.updateStrategy?.type === 'RollingUpdate' && this.maxSurge(ds, fits) > 0;
    for (const [node, pods] of this.nodeToPods(ds)) {
      const fit = fits.get(node);
      const live = pods.filter((p) => !p.metadata.deletionTimestamp);
      if (!fit?.shouldContinueRunning) {
        remove.push(...live.map((p) => p.metadata.name!));
        continue;
      }
      const failed = live.filter((p) => p.status?.phase === 'Failed');
      for (const pod of failed) if (this.mayDeleteFailed(ds, node, pod)) remove.push(pod.metadata.name!);
      const running = live.filter((p) => p.status?.phase !== 'Failed').sort(byAge);
      remove.push(
        ...surplus(running, surge, hash, ds.spec?.minReadySeconds ?? 0, this.clock.now()).map(
          (p) => p.metadata.name!,
        ),
      );
    }
    const placed = new Set(this.nodeToPods(ds).keys());
    for (const [node, fit] of fits) if (fit.shouldRun && !placed.has(node)) create.push(node);
    this.deletePods(ds, remove);
    this.createPods(ds, create, hash);
    return create.length + remove.length > 0;
  }

  /** Whether a failed pod may be deleted (and so replaced) now, as upstream's failedPodsBackoff. */
  private mayDeleteFailed(ds: KubeObject, node: string, pod: KubeObject): boolean {
    const key = `${ds.metadata.uid}/${node}`;
    if (this.failedPodsBackoff.isInBackoffSinceUpdate(key)) {
      this.queue.addAfter(keyOf(ds), this.failedPodsBackoff.get(key));
      return false;
    }
    this.failedPodsBackoff.next(key);
    const message = `Found failed daemon pod ${pod.metadata.namespace}/${pod.metadata.name} on node ${node}, will try to kill it`;
    this.events?.record(ds, 'Warning', 'FailedDaemonPod', message);
    return true;
  }

  private rollingUpdate(ds: KubeObject, fits: Map<string, NodeFit>, hash: string): void {
    const nodeToPods = new Map<string, KubeObject[]>();
    for (const [node, pods] of this.nodeToPods(ds)) {
      nodeToPods.set(
        node,
        pods.filter((p) => !p.metadata.deletionTimestamp),
      );
    }
    const step = rollingUpdateStep({
      nodeToPods,
      hash,
      maxSurge: this.maxSurge(ds, fits),
      maxUnavailable: this.maxUnavailable(ds, fits),
      minReadySeconds: ds.spec?.minReadySeconds ?? 0,
      now: this.clock.now(),
      shouldRun: (node) => fits.get(node)?.shouldRun === true,
    });
    this.deletePods(ds, step.deletePods);
    this.createPods(ds, step.createOnNodes, hash);
  }

  private desired(fits: Map<string, NodeFit>): number {
    return [...fits.values()].filter((f) => f.shouldRun).length;
  }

  private maxSurge(ds: KubeObject, fits: Map<string, NodeFit>): number {
    const ru = ds.spec?.updateStrategy?.rollingUpdate ?? {};
    return scaledValue(ru.maxSurge ?? 0, this.desired(fits), true);
  }

  private maxUnavailable(ds: KubeObject, fits: Map<string, NodeFit>): number {
    const ru = ds.spec?.updateStrategy?.rollingUpdate ?? {};
    const n = scaledValue(ru.maxUnavailable ?? 1, this.desired(fits), true);
    return n === 0 && this.maxSurge(ds, fits) === 0 ? 1 : n;
  }

  private createPods(ds: KubeObject, nodes: string[], hash: string): void {
    const ref = controllerRef(ds, apiVersion, kind);
    for (const node of nodes) {
      if (!createPod(this.registry, ds, newDaemonPod(ds, node, hash, ref), this.events)) return;
    }
  }

  private deletePods(ds: KubeObject, names: string[]): void {
    for (const name of names) deletePod(this.registry, ds, name, this.events);
  }

  private updateStatus(
    ds: KubeObject,
    fits: Map<string, NodeFit>,
    nodeToPods: Map<string, KubeObject[]>,
    hash: string,
    collisionCount: number | undefined,
  ): void {
    const now = this.clock.now();
    const minReady = ds.spec?.minReadySeconds ?? 0;
    let desired = 0;
    let current = 0;
    let ready = 0;
    let available = 0;
    let updated = 0;
    let misscheduled = 0;
    for (const [node, fit] of fits) {
      const pods = [...(nodeToPods.get(node) ?? [])].sort(byAge);
      if (!fit.shouldRun) {
        if (pods.length) misscheduled++;
        continue;
      }
      desired++;
      const pod = pods[0];
      if (!pod) continue;
      current++;
      if (isPodReady(pod)) ready++;
      if (isPodAvailable(pod, minReady, now)) available++;
      if (pod.metadata.labels?.[revisionHashLabel] === hash) updated++;
    }
    const status: Record<string, unknown> = {
      currentNumberScheduled: current,
      numberMisscheduled: misscheduled,
      desiredNumberScheduled: desired,
      numberReady: ready,
      observedGeneration: ds.metadata.generation ?? 1,
      updatedNumberScheduled: updated,
      numberAvailable: available,
      numberUnavailable: desired - available,
      ...(collisionCount !== undefined ? { collisionCount } : {}),
    };
    for (const f of ['updatedNumberScheduled', 'numberAvailable', 'numberUnavailable']) {
      if (status[f] === 0) delete status[f];
    }
    if (minReady > 0 && ready > available) this.queue.addAfter(keyOf(ds), minReady * 1000);
    writeStatusIfChanged(this.registry, 'daemonsets', ds, status);
  }
}

const byAge = (a: KubeObject, b: KubeObject) =>
  (Date.parse(a.metadata.creationTimestamp ?? '') || 0) -
    (Date.parse(b.metadata.creationTimestamp ?? '') || 0) || (a.metadata.name! < b.metadata.name! ? -1 : 1);

/**
 * The running pods on one node beyond the one that should stay: the oldest; when surging, the oldest new
 * pod, and beside it the oldest old pod while the new one is not yet available.
 */
function surplus(
  running: KubeObject[],
  surge: boolean,
  hash: string,
  minReady: number,
  now: number,
): KubeObject[] {
  if (running.length <= 1) return [];
  if (!surge) return running.slice(1);
  const newest = running.filter((p) => p.metadata.labels?.[revisionHashLabel] === hash);
  const old = running.filter((p) => p.metadata.labels?.[revisionHashLabel] !== hash);
  if (newest.length === 0) return running.slice(1);
  const keep = new Set([newest[0]]);
  if (old.length && !isPodAvailable(newest[0]!, minReady, now)) keep.add(old[0]);
  return running.filter((p) => !keep.has(p));
}

/** Whether a node update concerns DaemonSets: labels, taints, or the node's name (not its heartbeats). */
function nodeChanged(prev: KubeObject, next: KubeObject): boolean {
  return (
    canonicalJson(prev.metadata.labels ?? {}) !== canonicalJson(next.metadata.labels ?? {}) ||
    canonicalJson(prev.spec ?? {}) !== canonicalJson(next.spec ?? {})
  );
}

const keyOf = (o: KubeObject) => `${o.metadata.namespace}/${o.metadata.name}`;

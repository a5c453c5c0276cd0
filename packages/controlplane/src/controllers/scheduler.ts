import type { Clock, Logger, Loop } from '@nodelet/kernel';
import { rfc3339, type KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import type { StoreEvent } from '../storage/revision-store.js';
import type { EventRecorder } from './event-recorder.js';
import { defaultProfile } from './scheduling/default-profile.js';
import { defaultSpreadSelector } from './scheduling/default-selector.js';
import { schedulePod, unschedulableMessage, type Profile } from './scheduling/framework.js';
import { holdsResources, SchedulerCache } from './scheduling/scheduler-cache.js';
import { WorkQueue } from './work-queue.js';

/**
 * The scheduler: binds each pending pod (no `spec.nodeName`, `schedulerName: default-scheduler`) to a node
 * that fits it, through `pods/binding` as kube-scheduler does, with the plugins of upstream's default
 * profile (scheduling/default-profile.ts):
 *
 *   filter   NodeUnschedulable, NodeName, TaintToleration (a NotReady node counts as tainted
 *            node.kubernetes.io/not-ready), NodeAffinity (nodeSelector, required terms), NodePorts,
 *            NodeResourcesFit, PodTopologySpread (DoNotSchedule), InterPodAffinity (required terms)
 *   score    TaintToleration ×3, NodeAffinity ×2 (preferred terms), NodeResourcesFit ×1 (least allocated;
 *            a container without requests counts as 100m and 200 MiB), PodTopologySpread ×2
 *            (ScheduleAnyway), InterPodAffinity ×2 (preferred terms); the highest sum wins, ties go to the
 *            first node by name
 *   none     PodScheduled=False/Unschedulable with upstream's "0/N nodes are available: …" message and a
 *            FailedScheduling event; retried when a node or a pod changes, and every `retryMs`
 *
 * Simpler than upstream: scores keep their fractions and ties do not go to a random node; no
 * NodeResourcesBalancedAllocation, ImageLocality or volume plugins; the default spread constraints
 * count with the selectors of Services and ReplicaSets only (no StatefulSets); no preemption.
 *
 * What nodes hold is kept in memory from the store's events (scheduling/scheduler-cache.ts), so one
 * decision costs O(nodes), plus the pods on each node that a pod's affinity or spread terms look at.
 */
const key = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

function isPending(pod: KubeObject): boolean {
  const phase = pod.status?.phase;
  return (
    !pod.spec?.nodeName &&
    !pod.metadata.deletionTimestamp &&
    (pod.spec?.schedulerName ?? 'default-scheduler') === 'default-scheduler' &&
    phase !== 'Succeeded' &&
    phase !== 'Failed' &&
    !(pod.spec?.schedulingGates ?? []).length
  );
}

export class Scheduler {
  private readonly queue: WorkQueue;
  private readonly cache = new SchedulerCache();
  private readonly unschedulable = new Set<string>();
  /** Unschedulable pods with required pod affinity: a pod bound anywhere may let them in. */
  private readonly waitingForPods = new Set<string>();
  private readonly unsubscribe: (() => void)[] = [];
  private retryLoop: Loop | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly events: EventRecorder,
    private readonly retryMs = 30_000,
    private readonly profile: Profile = defaultProfile,
  ) {
    this.queue = new WorkQueue('scheduler', (k) => this.schedule(k), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    for (const { object } of store.listAll('nodes')) this.cache.setNode(object);
    for (const { object } of store.listAll('pods')) {
      this.cache.account(undefined, object);
      if (isPending(object)) this.queue.add(key(object));
    }
    this.unsubscribe.push(
      store.subscribe('pods', (e) => this.onPod(e)),
      store.subscribe('nodes', (e) => {
        if (e.op === 'delete') this.cache.deleteNode(e.name);
        else this.cache.setNode(e.object);
        this.retryUnschedulable();
      }),
    );
    this.retryLoop = this.clock.loop(() => this.retryUnschedulable(), {
      period: this.retryMs,
      initialDelay: this.retryMs,
    });
  }

  stop(): void {
    this.retryLoop?.stop();
    for (const u of this.unsubscribe.splice(0)) u();
    this.queue.stop();
  }

  private onPod(e: StoreEvent): void {
    this.cache.account(e.prev, e.op === 'delete' ? undefined : e.object);
    if (e.op !== 'delete' && isPending(e.object)) this.queue.add(key(e.object));
    if (e.op === 'delete' || (e.prev && holdsResources(e.prev) && !holdsResources(e.object))) {
      this.unschedulable.delete(key(e.object));
      this.waitingForPods.delete(key(e.object));
      this.retryUnschedulable();
    } else if (holdsResources(e.object) && !(e.prev && holdsResources(e.prev))) {
      for (const k of this.waitingForPods) this.queue.add(k);
    }
  }

  private retryUnschedulable(): void {
    for (const k of this.unschedulable) this.queue.add(k);
  }

  private schedule(podKey: string): void {
    const [namespace, name] = podKey.split('/') as [string, string];
    const stored = this.registry.store.get('pods', namespace, name);
    if (!stored || !isPending(stored.object)) {
      this.unschedulable.delete(podKey);
      this.waitingForPods.delete(podKey);
      return;
    }
    const pod = stored.object;
    const nodes = this.cache.snapshot();
    const store = this.registry.store;
    const decision = schedulePod(this.profile, {
      pod,
      nodes,
      namespaceLabels: (ns) => store.get('namespaces', '', ns)?.object.metadata.labels ?? undefined,
      defaultSpreadSelector: () =>
        defaultSpreadSelector(pod, (resource, ns) => store.listAll(resource, ns).map((s) => s.object)),
      state: new Map(),
    });
    if (!('node' in decision)) {
      if (pod.spec?.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution)
        this.waitingForPods.add(podKey);
      return this.markUnschedulable(pod, unschedulableMessage(nodes.length, decision.reasons));
    }
    try {
      this.registry.bind(namespace, name, {
        target: { kind: 'Node', name: decision.node },
        metadata: { uid: pod.metadata.uid },
      });
      this.unschedulable.delete(podKey);
      this.waitingForPods.delete(podKey);
      this.events.record(
        pod,
        'Normal',
        'Scheduled',
        `Successfully assigned ${namespace}/${name} to ${decision.node}`,
      );
    } catch (err) {
      if (err instanceof ApiError && (err.code === 409 || err.code === 404)) return;
      throw err;
    }
  }

  private markUnschedulable(pod: KubeObject, message: string): void {
    const podKey = key(pod);
    this.unschedulable.add(podKey);
    const current = (pod.status?.conditions ?? []).find((c: any) => c.type === 'PodScheduled');
    if (current?.status === 'False' && current.reason === 'Unschedulable' && current.message === message)
      return;
    const now = rfc3339(this.clock.now());
    this.registry.store.update('pods', pod.metadata.namespace!, pod.metadata.name!, (p) => {
      const conditions = (p.status?.conditions ?? []).filter((c: any) => c.type !== 'PodScheduled');
      conditions.push({
        type: 'PodScheduled',
        status: 'False',
        lastProbeTime: null,
        lastTransitionTime: current?.status === 'False' ? (current.lastTransitionTime ?? now) : now,
        reason: 'Unschedulable',
        message,
      });
      p.status = { ...(p.status ?? {}), conditions };
      return p;
    });
    this.events.record(pod, 'Warning', 'FailedScheduling', message);
    this.logger.debug('pod unschedulable', { pod: podKey, message });
  }
}

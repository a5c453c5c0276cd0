import type { Clock, Logger, Loop } from '@nodelet/kernel';
import { rfc3339, type KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import type { EventRecorder } from './event-recorder.js';
import { nodeCondition, reconcileTaints } from './node-taints.js';
import { WorkQueue } from './work-queue.js';

/**
 * The node lifecycle controller (upstream's pkg/controller/nodelifecycle, without zones and rate limits):
 *
 * - health: a node is heard from when its Lease in kube-node-lease is renewed or its Ready condition's
 *   heartbeat moves. Every `monitorPeriodMs` (--node-monitor-period, 5 s), a node not heard from for more
 *   than `gracePeriodMs` (--node-monitor-grace-period, 50 s since v1.32) gets Ready, MemoryPressure,
 *   DiskPressure and PIDPressure set to Unknown (`NodeStatusUnknown`, "Kubelet stopped posting node
 *   status."; a node that never posted a condition: `NodeStatusNeverUpdated`). The kubelet's next status
 *   update sets them back.
 * - taints: the NoSchedule and NoExecute taints of node-taints.ts follow the conditions — except that
 *   when no node is Ready (upstream's full disruption: the control plane, not the nodes, is probably
 *   cut off) no NoExecute taint is set and those set are removed, so nothing is evicted.
 * - pods: when a node stops being Ready (and for any pod bound to a node that is not Ready), the pods'
 *   Ready condition is set False (MarkPodsNotReady), with a `NodeNotReady` event on the node and each pod.
 *
 * Evicting the pods of a NoExecute-tainted node is the taint eviction controller's job.
 */
export interface NodeLifecycleOptions {
  monitorPeriodMs?: number;
  gracePeriodMs?: number;
}

export const defaultNodeMonitorPeriodMs = 5_000;
export const defaultNodeMonitorGracePeriodMs = 50_000;
const leaseNamespace = 'kube-node-lease';
const healthConditions = ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure'];

interface Heard {
  /** When this controller last heard from the node (its clock, not the kubelet's). */
  at: number;
  heartbeat?: string;
  renewTime?: string;
}

export class NodeLifecycleController {
  private readonly queue: WorkQueue;
  private readonly heard = new Map<string, Heard>();
  /** The Ready status each node had at its last sync, to see it change. */
  private readonly lastReady = new Map<string, string>();
  /** No node is Ready: NoExecute taints are held back. */
  private fullDisruption = false;
  private readonly unsubscribe: (() => void)[] = [];
  private monitor?: Loop;
  private readonly periodMs: number;
  private readonly graceMs: number;

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly events?: EventRecorder,
    options: NodeLifecycleOptions = {},
  ) {
    this.periodMs = options.monitorPeriodMs ?? defaultNodeMonitorPeriodMs;
    this.graceMs = options.gracePeriodMs ?? defaultNodeMonitorGracePeriodMs;
    this.queue = new WorkQueue('node-lifecycle', (k) => this.sync(k), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    this.unsubscribe.push(
      store.subscribe('leases', (e) => {
        if (e.namespace === leaseNamespace && e.op !== 'delete') this.observeLease(e.object);
      }),
      store.subscribe('nodes', (e) => {
        if (e.op === 'delete') {
          this.heard.delete(e.name);
          this.lastReady.delete(e.name);
          return;
        }
        this.observeNode(e.object);
        this.queue.add(`node/${e.name}`);
      }),
      store.subscribe('pods', (e) => {
        if (e.op !== 'delete' && e.object.spec?.nodeName) this.queue.add(`pod/${e.namespace}/${e.name}`);
      }),
    );
    for (const { object } of store.listAll('nodes')) {
      this.observeNode(object);
      this.queue.add(`node/${object.metadata.name}`);
    }
    this.monitor = this.clock.loop(() => this.monitorNodeHealth(), {
      period: this.periodMs,
      initialDelay: this.periodMs,
      onError: (err) => this.logger.warn('node health check failed', { err: String(err) }),
    });
  }

  stop(): void {
    this.monitor?.stop();
    for (const u of this.unsubscribe.splice(0)) u();
    this.queue.stop();
  }

  private observeNode(node: KubeObject): void {
    const name = node.metadata.name!;
    const heartbeat: string | undefined = nodeCondition(node, 'Ready')?.lastHeartbeatTime;
    const seen = this.heard.get(name);
    if (!seen) {
      // A node that never posted Ready counts from its creation, as upstream.
      const created = Date.parse(node.metadata.creationTimestamp ?? '');
      const at = heartbeat || Number.isNaN(created) ? this.clock.now() : created;
      this.heard.set(name, { at, ...(heartbeat ? { heartbeat } : {}) });
    } else if (heartbeat && heartbeat !== seen.heartbeat) {
      seen.heartbeat = heartbeat;
      seen.at = this.clock.now();
    }
  }

  private observeLease(lease: KubeObject): void {
    const renewTime: string | undefined = lease.spec?.renewTime;
    if (!renewTime) return;
    const name = lease.metadata.name!;
    const seen = this.heard.get(name);
    if (!seen) this.heard.set(name, { at: this.clock.now(), renewTime });
    else if (renewTime !== seen.renewTime) {
      seen.renewTime = renewTime;
      seen.at = this.clock.now();
    }
  }

  /** One monitor pass: every node not heard from within the grace period gets Unknown conditions. */
  monitorNodeHealth(): void {
    const now = this.clock.now();
    for (const { object: node } of this.registry.store.listAll('nodes')) {
      const name = node.metadata.name!;
      if (!this.heard.has(name)) this.observeNode(node);
      if (now - this.heard.get(name)!.at <= this.graceMs) continue;
      if (healthConditions.every((type) => nodeCondition(node, type)?.status === 'Unknown')) continue;
      this.logger.info('node stopped posting status; marking its conditions Unknown', { node: name });
      this.registry.store.update('nodes', '', name, (n) => {
        n.status = { ...(n.status ?? {}), conditions: unknownConditions(n, now) };
        return n;
      });
    }
  }

  /**
   * Whether no node is Ready (from each node's last sync; O(1) while one is). When that changes, every
   * node's taints are looked at again.
   */
  private updateDisruption(): boolean {
    let full = this.lastReady.size > 0;
    for (const status of this.lastReady.values()) {
      if (status !== 'True') continue;
      full = false;
      break;
    }
    if (full !== this.fullDisruption) {
      this.fullDisruption = full;
      this.logger.info(
        full
          ? 'no node is Ready: entering full disruption mode, no NoExecute taints'
          : 'a node is Ready: leaving full disruption mode',
      );
      for (const name of this.lastReady.keys()) this.queue.add(`node/${name}`);
    }
    return full;
  }

  /** `node/<name>`: taints follow conditions, pods follow Ready. `pod/<ns>/<name>`: one pod. */
  sync(key: string): void {
    const [kind, ...rest] = key.split('/');
    if (kind === 'pod') {
      const [namespace, name] = rest as [string, string];
      const pod = this.registry.store.get('pods', namespace, name)?.object;
      const node = pod?.spec?.nodeName && this.registry.store.get('nodes', '', pod.spec.nodeName)?.object;
      if (pod && node && isNotReady(node)) this.markPodNotReady(pod);
      return;
    }
    const name = rest.join('/');
    const node = this.registry.store.get('nodes', '', name)?.object;
    if (!node) return;
    const ready = nodeCondition(node, 'Ready')?.status;
    const before = this.lastReady.get(name);
    if (ready) this.lastReady.set(name, ready);
    const taints = reconcileTaints(node, this.clock.now(), !this.updateDisruption());
    if (taints) {
      this.registry.store.update('nodes', '', name, (n) => {
        n.spec = { ...(n.spec ?? {}), taints };
        if (taints.length === 0) delete n.spec.taints;
        return n;
      });
    }
    if (!isNotReady(node) || ready === before) return;
    if (before === 'True')
      this.events?.record(node, 'Normal', 'NodeNotReady', `Node ${name} status is now: NodeNotReady`);
    for (const { object: pod } of this.registry.store.listAll('pods')) {
      if (pod.spec?.nodeName === name) this.markPodNotReady(pod);
    }
  }

  /** MarkPodsNotReady for one pod: its Ready condition False, the transition time now. */
  private markPodNotReady(pod: KubeObject): void {
    const ready = (pod.status?.conditions ?? []).find((c: any) => c?.type === 'Ready');
    if (!ready || ready.status === 'False' || pod.metadata.deletionTimestamp) return;
    const now = rfc3339(this.clock.now());
    try {
      this.registry.store.update('pods', pod.metadata.namespace!, pod.metadata.name!, (p) => {
        p.status.conditions = p.status.conditions.map((c: any) =>
          c?.type === 'Ready' ? { ...c, status: 'False', lastTransitionTime: now } : c,
        );
        return p;
      });
    } catch (err) {
      this.logger.debug('pod not marked NotReady', { pod: pod.metadata.name, err: String(err) });
      return;
    }
    this.events?.record(pod, 'Warning', 'NodeNotReady', 'Node is not ready');
  }
}

function isNotReady(node: KubeObject): boolean {
  const ready = nodeCondition(node, 'Ready')?.status;
  return ready === 'False' || ready === 'Unknown';
}

/** The node's conditions with the health ones Unknown (the others, e.g. NetworkUnavailable, kept). */
function unknownConditions(node: KubeObject, now: number): any[] {
  const conditions: any[] = [...(node.status?.conditions ?? [])];
  for (const type of healthConditions) {
    const i = conditions.findIndex((c) => c?.type === type);
    if (i < 0) {
      conditions.push({
        type,
        status: 'Unknown',
        reason: 'NodeStatusNeverUpdated',
        message: 'Kubelet never posted node status.',
        lastHeartbeatTime: node.metadata.creationTimestamp,
        lastTransitionTime: rfc3339(now),
      });
    } else if (conditions[i].status !== 'Unknown') {
      conditions[i] = {
        ...conditions[i],
        status: 'Unknown',
        reason: 'NodeStatusUnknown',
        message: 'Kubelet stopped posting node status.',
        lastTransitionTime: rfc3339(now),
      };
    }
  }
  return conditions;
}

import { milliCpu, quantityValue, toleratesTaint } from '@nodelet/api';
import type { Clock, Logger, Loop } from '@nodelet/kernel';
import { rfc3339, type KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import { ApiError } from '../apiserver/status.js';
import type { StoreEvent } from '../storage/revision-store.js';
import type { EventRecorder } from './event-recorder.js';
import { WorkQueue } from './work-queue.js';

/**
 * The scheduler: binds each pending pod (no `spec.nodeName`, `schedulerName: default-scheduler`) to a node
 * that fits it, through `pods/binding` as kube-scheduler does.
 *
 *   filter   node Ready and schedulable; nodeSelector and required node affinity; taints with effect
 *            NoSchedule/NoExecute tolerated; requests (cpu, memory, ephemeral-storage, pod count) within
 *            allocatable minus what the node's pods already request
 *   score    least allocated (most free cpu and memory, as fractions; a container without requests
 *            counts as 100m and 200 MiB, as upstream scores it), then name
 *   none     PodScheduled=False/Unschedulable with upstream's "0/N nodes are available: …" message and a
 *            FailedScheduling event; retried when a node or a pod changes, and every `retryMs`
 *
 * What nodes hold is kept in memory from the store's events, so one decision costs O(nodes), not O(pods).
 */
export interface Resources {
  cpu: number;
  memory: number;
  'ephemeral-storage': number;
  pods: number;
}

const resourceNames = ['cpu', 'memory', 'ephemeral-storage'] as const;

function quantity(name: string, q: unknown): number {
  try {
    if (typeof q !== 'string' && typeof q !== 'number') return 0;
    return name === 'cpu' ? milliCpu(q) : quantityValue(q);
  } catch {
    return 0;
  }
}

/**
 * For scoring only, a container that requests no CPU or memory counts as 100m and 200 MiB (upstream's
 * non-zero defaults), so pods without requests still spread over the nodes.
 */
const nonZeroDefaults: Record<string, number> = { cpu: 100, memory: 200 * 1024 * 1024 };

/**
 * What a pod asks of a node: the larger of its containers' sum and its largest init container, plus
 * overhead. `nonZero` applies the scoring defaults to containers that request nothing.
 */
export function podRequests(pod: KubeObject, nonZero = false): Resources {
  const out: Resources = { cpu: 0, memory: 0, 'ephemeral-storage': 0, pods: 1 };
  const spec = pod.spec ?? {};
  const request = (c: any, name: string) => {
    const v = quantity(name, c?.resources?.requests?.[name]);
    return nonZero && v === 0 ? (nonZeroDefaults[name] ?? 0) : v;
  };
  for (const name of resourceNames) {
    let sum = 0;
    for (const c of spec.containers ?? []) sum += request(c, name);
    let init = 0;
    let sidecars = 0;
    for (const c of spec.initContainers ?? []) {
      const v = request(c, name);
      if (c?.restartPolicy === 'Always') sidecars += v;
      else init = Math.max(init, sidecars + v);
    }
    out[name] = Math.max(sum + sidecars, init) + quantity(name, spec.overhead?.[name]);
  }
  return out;
}

export function nodeAllocatable(node: KubeObject): Resources {
  const a = node.status?.allocatable ?? node.status?.capacity ?? {};
  return {
    cpu: quantity('cpu', a.cpu),
    memory: quantity('memory', a.memory),
    'ephemeral-storage':
      a['ephemeral-storage'] === undefined ? Infinity : quantity('ephemeral-storage', a['ephemeral-storage']),
    pods: a.pods === undefined ? 110 : quantity('pods', a.pods),
  };
}

function isReady(node: KubeObject): boolean {
  return (node.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
}

function tolerates(tolerations: any[], taint: any): boolean {
  return tolerations.some((t) => toleratesTaint(t, taint));
}

function matchExpression(value: string | undefined, e: any): boolean {
  const values: string[] = e.values ?? [];
  switch (e.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0] ?? '')) return false;
      return e.operator === 'Gt' ? Number(value) > Number(values[0]) : Number(value) < Number(values[0]);
    }
    default:
      return false;
  }
}

/** nodeSelector and requiredDuringSchedulingIgnoredDuringExecution node affinity. */
export function matchesNodeSelection(pod: KubeObject, node: KubeObject): boolean {
  const labels: Record<string, string> = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const terms: any[] | undefined =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  return terms.some((term) => {
    const exprs: any[] = term.matchExpressions ?? [];
    const fields: any[] = term.matchFields ?? [];
    if (exprs.length === 0 && fields.length === 0) return false;
    return (
      exprs.every((e) => matchExpression(labels[e.key], e)) &&
      fields.every((e) => matchExpression(e.key === 'metadata.name' ? node.metadata.name : undefined, e))
    );
  });
}

/** Why `node` cannot take `pod` (upstream's reasons), or undefined when it can. */
export function unfitReasons(
  pod: KubeObject,
  node: KubeObject,
  used: Resources,
  requests: Resources,
): string[] {
  if (!isReady(node)) return ['node(s) had untolerated taint {node.kubernetes.io/not-ready: }'];
  if (node.spec?.unschedulable) {
    const tolerations = pod.spec?.tolerations ?? [];
    if (!tolerates(tolerations, { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' })) {
      return ['node(s) were unschedulable'];
    }
  }
  if (!matchesNodeSelection(pod, node)) return ["node(s) didn't match Pod's node affinity/selector"];
  const tolerations = pod.spec?.tolerations ?? [];
  for (const taint of node.spec?.taints ?? []) {
    if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue;
    if (!tolerates(tolerations, taint))
      return [`node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`];
  }
  const free = nodeAllocatable(node);
  const reasons: string[] = [];
  if (used.pods + 1 > free.pods) reasons.push('Too many pods');
  for (const name of resourceNames) {
    if (requests[name] > 0 && used[name] + requests[name] > free[name]) reasons.push(`Insufficient ${name}`);
  }
  return reasons;
}

/** `0/3 nodes are available: 1 Insufficient cpu, 2 node(s) were unschedulable.` */
export function unschedulableMessage(total: number, reasons: Map<string, number>): string {
  if (total === 0) return 'no nodes available to schedule pods';
  const parts = [...reasons.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([r, n]) => `${n} ${r}`);
  return `0/${total} nodes are available: ${parts.join(', ')}.`;
}

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

/** Counted against its node until it has finished. */
function holdsResources(pod: KubeObject): boolean {
  const phase = pod.status?.phase;
  return !!pod.spec?.nodeName && phase !== 'Succeeded' && phase !== 'Failed';
}

export class Scheduler {
  private readonly queue: WorkQueue;
  private readonly nodes = new Map<string, KubeObject>();
  /** Per node: requests of the pods bound to it. */
  private readonly usage = new Map<string, Resources>();
  /** Per node: the same with the non-zero scoring defaults. */
  private readonly scoreUsage = new Map<string, Resources>();
  /** Pod key → the node and requests it is counted with. */
  private readonly placed = new Map<string, { node: string; requests: Resources; scored: Resources }>();
  private readonly unschedulable = new Set<string>();
  private readonly unsubscribe: (() => void)[] = [];
  private retryLoop: Loop | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly events: EventRecorder,
    private readonly retryMs = 30_000,
  ) {
    this.queue = new WorkQueue('scheduler', (k) => this.schedule(k), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    for (const { object } of store.listAll('nodes')) this.nodes.set(object.metadata.name!, object);
    for (const { object } of store.listAll('pods')) {
      this.account(undefined, object);
      if (isPending(object)) this.queue.add(key(object));
    }
    this.unsubscribe.push(
      store.subscribe('pods', (e) => this.onPod(e)),
      store.subscribe('nodes', (e) => {
        if (e.op === 'delete') this.nodes.delete(e.name);
        else this.nodes.set(e.name, e.object);
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
    this.account(e.prev, e.op === 'delete' ? undefined : e.object);
    if (e.op !== 'delete' && isPending(e.object)) this.queue.add(key(e.object));
    if (e.op === 'delete' || (e.prev && holdsResources(e.prev) && !holdsResources(e.object))) {
      this.unschedulable.delete(key(e.object));
      this.retryUnschedulable();
    }
  }

  private account(prev: KubeObject | undefined, next: KubeObject | undefined): void {
    const k = key((next ?? prev)!);
    const was = this.placed.get(k);
    if (was) {
      const u = this.usage.get(was.node)!;
      const s = this.scoreUsage.get(was.node)!;
      for (const n of [...resourceNames, 'pods'] as const) {
        u[n] -= was.requests[n];
        s[n] -= was.scored[n];
      }
      this.placed.delete(k);
    }
    if (next && holdsResources(next)) {
      const node = next.spec.nodeName as string;
      const requests = podRequests(next);
      const scored = podRequests(next, true);
      const u = this.usage.get(node) ?? { cpu: 0, memory: 0, 'ephemeral-storage': 0, pods: 0 };
      const s = this.scoreUsage.get(node) ?? { cpu: 0, memory: 0, 'ephemeral-storage': 0, pods: 0 };
      for (const n of [...resourceNames, 'pods'] as const) {
        u[n] += requests[n];
        s[n] += scored[n];
      }
      this.usage.set(node, u);
      this.scoreUsage.set(node, s);
      this.placed.set(k, { node, requests, scored });
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
      return;
    }
    const pod = stored.object;
    const requests = podRequests(pod);
    const scoredRequests = podRequests(pod, true);
    const reasons = new Map<string, number>();
    let best: { node: string; score: number } | undefined;
    const names = [...this.nodes.keys()].sort();
    for (const nodeName of names) {
      const node = this.nodes.get(nodeName)!;
      const used = this.usage.get(nodeName) ?? { cpu: 0, memory: 0, 'ephemeral-storage': 0, pods: 0 };
      const why = unfitReasons(pod, node, used, requests);
      if (why.length > 0) {
        for (const r of why) reasons.set(r, (reasons.get(r) ?? 0) + 1);
        continue;
      }
      const free = nodeAllocatable(node);
      const scoredUse = this.scoreUsage.get(nodeName) ?? {
        cpu: 0,
        memory: 0,
        'ephemeral-storage': 0,
        pods: 0,
      };
      const fraction = (n: 'cpu' | 'memory') =>
        free[n] > 0 && Number.isFinite(free[n]) ? (free[n] - scoredUse[n] - scoredRequests[n]) / free[n] : 1;
      const score = (fraction('cpu') + fraction('memory')) / 2;
      if (!best || score > best.score) best = { node: nodeName, score };
    }
    if (!best) return this.markUnschedulable(pod, unschedulableMessage(names.length, reasons));
    try {
      this.registry.bind(namespace, name, {
        target: { kind: 'Node', name: best.node },
        metadata: { uid: pod.metadata.uid },
      });
      this.unschedulable.delete(podKey);
      this.events.record(
        pod,
        'Normal',
        'Scheduled',
        `Successfully assigned ${namespace}/${name} to ${best.node}`,
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

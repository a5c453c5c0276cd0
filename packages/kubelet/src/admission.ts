import { milliCpu, type Pod, type PodStatus, quantityValue, untoleratedTaint } from '@nodelet/api';
import type { EventBus, Logger } from '@nodelet/kernel';

/**
 * Pod admission (upstream lifecycle predicate admit handler, its GeneralPredicates): before the kubelet
 * runs a pod of any source — the API server's, a static manifest, a manifest URL — the pod must fit the
 * node — its requests within what the
 * active pods leave of the node's allocatable, the pod count within `pods`, its `nodeSelector` matching
 * the node's labels, its `nodeName` this node. A pod that does not is not run; it is marked Failed with
 * upstream's reason (`OutOfcpu`, `OutOfmemory`, `OutOfpods`, `NodeAffinity`, …) and message.
 */
export interface AdmitResult {
  admit: boolean;
  reason?: string;
  message?: string;
}

export interface AdmissionNode {
  name: string;
  labels: Record<string, string>;
  allocatable: Record<string, string>;
  /** The registered Node's taints: a pod from the API must tolerate its NoExecute ones. */
  taints?: readonly { key: string; value?: string; effect: string }[];
}

/** Effective requests of a pod: the max of the largest init container's and the sum of the app containers'. */
export function podRequests(pod: Pod): Map<string, number> {
  const sum = new Map<string, number>();
  const add = (into: Map<string, number>, requests: Record<string, unknown> | undefined) => {
    for (const [name, q] of Object.entries(requests ?? {})) {
      into.set(name, (into.get(name) ?? 0) + amount(name, q as string));
    }
  };
  for (const c of pod.spec?.containers ?? []) add(sum, c.resources?.requests);
  for (const c of pod.spec?.initContainers ?? []) {
    const one = new Map<string, number>();
    add(one, c.resources?.requests);
    for (const [name, v] of one) if (v > (sum.get(name) ?? 0)) sum.set(name, v);
  }
  for (const [name, q] of Object.entries(pod.spec?.overhead ?? {})) {
    sum.set(name, (sum.get(name) ?? 0) + amount(name, q as string));
  }
  return sum;
}

/** cpu in millicores, everything else in base units (bytes for memory). */
function amount(name: string, q: string | number): number {
  try {
    return name === 'cpu' ? milliCpu(q) : quantityValue(q);
  } catch {
    return 0;
  }
}

/** What the pods running on a node use: how many, the sum of their requests, their host ports. */
export interface NodeUsage {
  pods: number;
  requests: Map<string, number>;
  /** `protocol/hostIP/port` of every host port in use ('0.0.0.0' for all addresses). */
  hostPorts: Set<string>;
}

/** The usage of `active` (the pods admitted and not terminal). */
export function usageOf(active: readonly Pod[]): NodeUsage {
  const usage: NodeUsage = { pods: 0, requests: new Map(), hostPorts: new Set() };
  for (const p of active) addUsage(usage, p);
  return usage;
}

function addUsage(usage: NodeUsage, pod: Pod): void {
  usage.pods++;
  for (const p of hostPortsOf(pod)) usage.hostPorts.add(p);
  for (const [name, v] of podRequests(pod)) usage.requests.set(name, (usage.requests.get(name) ?? 0) + v);
}

/** Whether `pod` may run on `node` next to `active` (the pods admitted and not terminal). */
export function admitPod(pod: Pod, active: readonly Pod[], node: AdmissionNode): AdmitResult {
  return admitPodWithUsage(pod, usageOf(active), node);
}

/** `admitPod` against a usage already summed up. */
export function admitPodWithUsage(pod: Pod, usage: NodeUsage, node: AdmissionNode): AdmitResult {
  if (pod.spec?.nodeName && pod.spec.nodeName !== node.name) {
    return { admit: false, reason: 'NodeName', message: 'Predicate NodeName failed' };
  }
  for (const [key, value] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (node.labels[key] !== value) {
      return {
        admit: false,
        reason: 'NodeAffinity',
        message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
      };
    }
  }
  if (hostPortsOf(pod).some((p) => hostPortTaken(p, usage.hostPorts))) {
    return {
      admit: false,
      reason: 'NodePorts',
      message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
    };
  }
  const maxPods = Number(node.allocatable.pods ?? Infinity);
  if (usage.pods + 1 > maxPods) {
    return insufficient('pods', 1, usage.pods, maxPods);
  }
  for (const [name, requested] of podRequests(pod)) {
    if (requested <= 0) continue;
    const capacity = node.allocatable[name] !== undefined ? amount(name, node.allocatable[name]!) : undefined;
    // Extended resources the node does not have: upstream filters them out unless the node lists them.
    if (capacity === undefined) continue;
    const inUse = usage.requests.get(name) ?? 0;
    if (inUse + requested > capacity) return insufficient(name, requested, inUse, capacity);
  }
  // Only NoExecute taints concern the kubelet (the scheduler minds NoSchedule); a static pod is the
  // node's own and is not checked (it never reaches here with taints).
  if (untoleratedTaint(node.taints ?? [], pod.spec?.tolerations ?? [], (t) => t.effect === 'NoExecute')) {
    return {
      admit: false,
      reason: 'TaintToleration',
      message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    };
  }
  return { admit: true };
}

/** The pod's host ports as `protocol/hostIP/port` (upstream's HostPortInfo). */
function hostPortsOf(pod: Pod): string[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].flatMap((c) =>
    (c.ports ?? [])
      .filter((p) => (p.hostPort ?? 0) > 0)
      .map((p) => `${p.protocol ?? 'TCP'}/${p.hostIP || '0.0.0.0'}/${p.hostPort}`),
  );
}

/** A host port conflicts with one in use on the same protocol and port, when either is on all addresses or both on one. */
function hostPortTaken(port: string, inUse: ReadonlySet<string>): boolean {
  const [protocol, ip, number] = port.split('/');
  for (const used of inUse) {
    const [p, i, n] = used.split('/');
    if (p === protocol && n === number && (i === ip || i === '0.0.0.0' || ip === '0.0.0.0')) return true;
  }
  return false;
}

function insufficient(name: string, requested: number, used: number, capacity: number): AdmitResult {
  return {
    admit: false,
    reason: `OutOf${name}`,
    message: `Node didn't have enough resource: ${name}, requested: ${Math.round(requested)}, used: ${Math.round(used)}, capacity: ${Math.round(capacity)}`,
  };
}

/**
 * Admission as the kubelet runs it for each new pod: the verdict of `admitPod` against the node and the
 * active pods; a rejection is logged and published as a Warning `[Kubelet] Pod Event` with the reason.
 */
export class PodAdmission {
  /**
   * The node's usage while one burst of pods is admitted (a source's pods arrive in one synchronous
   * pass): summed once, then grown by each pod admitted, and dropped at the end of the burst — so
   * admitting N pods costs O(N), not O(N²). Between bursts pods finish, so it is summed afresh.
   */
  private burst?: NodeUsage;

  constructor(
    private readonly deps: {
      node(): AdmissionNode;
      /** Pods admitted and not terminal. */
      activePods(): Pod[];
      bus: EventBus;
      logger: Logger;
    },
  ) {}

  admit(pod: Pod): AdmitResult {
    if (!this.burst) {
      this.burst = usageOf(this.deps.activePods());
      queueMicrotask(() => (this.burst = undefined));
    }
    const result = admitPodWithUsage(pod, this.burst, this.deps.node());
    if (result.admit) addUsage(this.burst, pod);
    else this.rejected(pod, result);
    return result;
  }

  /** A rejection, whoever decided it: logged, and a Warning event with the reason. */
  rejected(pod: Pod, result: AdmitResult): void {
    {
      const meta = pod.metadata!;
      this.deps.logger.warn('Pod rejected by admission', {
        pod: `${meta.namespace ?? 'default'}/${meta.name}`,
        reason: result.reason,
        message: result.message,
      });
      this.deps.bus.emit('[Kubelet] Pod Event', {
        podUid: meta.uid!,
        podName: meta.name!,
        namespace: meta.namespace ?? 'default',
        eventType: 'Warning',
        reason: result.reason!,
        message: result.message!,
      });
    }
  }
}

/** The status of a pod admission rejected (upstream rejectPod): Failed, with the reason. */
export function rejectedStatus(result: AdmitResult, previous: PodStatus | undefined): PodStatus {
  return {
    ...previous,
    phase: 'Failed',
    reason: result.reason,
    message: `Pod was rejected: ${result.message}`,
  };
}

/**
 * The node as admission sees it: its name, its labels (`kubernetes.io/hostname`, `kubernetes.io/os` and
 * the configured ones) and its allocatable resources.
 */
export function admissionNode(node: {
  nodeName: string;
  hostname: string;
  labels?: Record<string, string>;
  allocatable: Record<string, string>;
}): AdmissionNode {
  return {
    name: node.nodeName,
    labels: { 'kubernetes.io/hostname': node.hostname, 'kubernetes.io/os': process.platform, ...node.labels },
    allocatable: node.allocatable,
  };
}

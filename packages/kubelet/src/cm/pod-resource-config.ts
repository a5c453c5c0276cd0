import { type Container, milliCpu, type Pod, quantityValue } from '@nodelet/api';
import { qosClass } from '../pod-status.js';
import { cfsPeriodUs, milliCpuToQuota, milliCpuToShares } from '../resources.js';

/**
 * What a pod's cgroup is given (upstream ResourceConfigForPod, pkg/kubelet/cm/helpers_linux.go):
 *
 *   Guaranteed   cpu shares from its requests, CFS quota from its limits, memory limit
 *   Burstable    cpu shares; quota only when every container has a cpu limit, memory limit only when
 *                every container has a memory limit (one container without one leaves the pod unbounded)
 *   BestEffort   cpu shares 2, nothing else
 *
 * Requests and limits are the pod's effective ones: the larger of the app containers' sum and the
 * largest init container's, plus the pod overhead. A container's request defaults to its limit.
 */
export interface ResourceConfig {
  cpuShares?: number;
  /** Microseconds per period; -1 for none. */
  cpuQuota?: number;
  cpuPeriod?: number;
  /** Bytes. */
  memory?: number;
  pidsLimit?: number;
}

type Pick = (c: Container, resource: string) => string | number | undefined;

const request: Pick = (c, r) => c.resources?.requests?.[r] ?? c.resources?.limits?.[r];
const limit: Pick = (c, r) => c.resources?.limits?.[r];

function amount(resource: string, q: string | number | undefined): number {
  if (q === undefined) return 0;
  return resource === 'cpu' ? milliCpu(q) : quantityValue(q);
}

/** The pod's effective amount of `resource` by `pick` (requests or limits), with its overhead. */
function podAmount(pod: Pod, resource: string, pick: Pick): number {
  let sum = 0;
  for (const c of pod.spec?.containers ?? []) sum += amount(resource, pick(c, resource));
  for (const c of pod.spec?.initContainers ?? []) sum = Math.max(sum, amount(resource, pick(c, resource)));
  return sum + amount(resource, pod.spec?.overhead?.[resource]);
}

/** Whether every container (init ones too) sets a limit on `resource`. */
function allLimit(pod: Pod, resource: string): boolean {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.every((c) => limit(c, resource) !== undefined);
}

export function resourceConfigForPod(
  pod: Pod,
  options: { enforceCpuLimits?: boolean; podPidsLimit?: number } = {},
): ResourceConfig {
  const qos = qosClass(pod);
  const config: ResourceConfig = {};
  if (qos === 'BestEffort') config.cpuShares = milliCpuToShares(0);
  else {
    config.cpuShares = milliCpuToShares(podAmount(pod, 'cpu', request));
    if (qos === 'Guaranteed' || allLimit(pod, 'cpu')) {
      const quota = milliCpuToQuota(podAmount(pod, 'cpu', limit));
      config.cpuQuota = options.enforceCpuLimits === false || quota === 0 ? -1 : quota;
      config.cpuPeriod = cfsPeriodUs;
    }
    if (qos === 'Guaranteed' || allLimit(pod, 'memory')) config.memory = podAmount(pod, 'memory', limit);
  }
  if (options.podPidsLimit !== undefined && options.podPidsLimit > 0) config.pidsLimit = options.podPidsLimit;
  return config;
}

/** The cpu request of the pods in `pods`, summed in millicores (the Burstable QoS cgroup's shares). */
export function cpuRequestsOf(pods: readonly Pod[]): number {
  return pods.reduce((sum, p) => sum + podAmount(p, 'cpu', request), 0);
}

/** The memory request of the pods in `pods`, summed in bytes (what `qosReserved` holds back). */
export function memoryRequestsOf(pods: readonly Pod[]): number {
  return pods.reduce((sum, p) => sum + podAmount(p, 'memory', request), 0);
}

/**
 * cgroup v2's cpu.weight for v1 shares (upstream CpuSharesToCpuWeight, runc's conversion):
 * [2, 262144] maps onto [1, 10000].
 */
export function sharesToWeight(shares: number): number {
  if (shares === 0) return 0;
  return 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

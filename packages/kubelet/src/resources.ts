import type { Container, Pod } from '@nodelet/api';
import { milliCpu, quantityValue } from '@nodelet/api';
import type { LinuxContainerResources } from '@nodelet/cri';
import { qosClass } from './pod-status.js';

/**
 * Linux resources of a container from its requests and limits (upstream kuberuntime + qos):
 * shares = milliCPU×1024/1000 (min 2, max 262144); CFS period 100 ms; quota = milliCPU×period/1000
 * (min 1 ms); memory limit in bytes; oom_score_adj by QoS class.
 */
export const cfsPeriodUs = 100_000;
const minShares = 2;
const maxShares = 262_144;
const minQuotaUs = 1_000;

export function milliCpuToShares(milli: number): number {
  if (milli === 0) return minShares;
  return Math.min(maxShares, Math.max(minShares, Math.floor((milli * 1024) / 1000)));
}

export function milliCpuToQuota(milli: number, periodUs = cfsPeriodUs): number {
  if (milli === 0) return 0;
  return Math.max(minQuotaUs, Math.floor((milli * periodUs) / 1000));
}

export function oomScoreAdj(pod: Pod, container: Container, memoryCapacityBytes: number): number {
  const qos = qosClass(pod);
  if (qos === 'Guaranteed') return -997;
  if (qos === 'BestEffort') return 1000;
  const request = container.resources?.requests?.memory;
  const requestBytes = request ? quantityValue(request) : 0;
  const adj = 1000 - Math.floor((1000 * requestBytes) / memoryCapacityBytes);
  if (adj < 3) return 3;
  if (adj === 1000) return 999;
  return adj;
}

export interface LinuxResources {
  cpuShares: number;
  cpuQuota: number;
  cpuPeriod: number;
  memoryLimitInBytes: number;
  oomScoreAdj: number;
}

export function containerResources(
  pod: Pod,
  container: Container,
  memoryCapacityBytes: number,
): LinuxResources {
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  const cpuRequest = requests.cpu ?? limits.cpu;
  const shares = cpuRequest ? milliCpuToShares(milliCpu(cpuRequest)) : minShares;
  const quota = limits.cpu ? milliCpuToQuota(milliCpu(limits.cpu)) : 0;
  return {
    cpuShares: shares,
    cpuQuota: quota,
    cpuPeriod: limits.cpu ? cfsPeriodUs : 0,
    memoryLimitInBytes: limits.memory ? quantityValue(limits.memory) : 0,
    oomScoreAdj: oomScoreAdj(pod, container, memoryCapacityBytes),
  };
}

/** The CRI message fields for `res` (the int64 fields as bigint). */
export function criLinuxResources(
  res: LinuxResources,
): Pick<
  LinuxContainerResources,
  'cpuShares' | 'cpuQuota' | 'cpuPeriod' | 'memoryLimitInBytes' | 'oomScoreAdj'
> {
  return {
    cpuShares: BigInt(res.cpuShares),
    cpuQuota: BigInt(res.cpuQuota),
    cpuPeriod: BigInt(res.cpuPeriod),
    memoryLimitInBytes: BigInt(res.memoryLimitInBytes),
    oomScoreAdj: BigInt(res.oomScoreAdj),
  };
}

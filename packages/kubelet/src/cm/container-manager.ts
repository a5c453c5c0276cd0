import { existsSync } from 'node:fs';
import { milliCpu, type Pod, quantityValue } from '@nodelet/api';
import type { Logger } from '@nodelet/kernel';
import { qosClass } from '../pod-status.js';
import { milliCpuToShares } from '../resources.js';
import { CgroupFs } from './cgroup-fs.js';
import {
  type CgroupDriver,
  cgroupParentName,
  KUBEPODS,
  podCgroupName,
  qosCgroupName,
  rootName,
  toCgroupfs,
  toSystemd,
  type CgroupName,
} from './cgroup-name.js';
import { allocatableReservation, type ReservationConfig } from './node-allocatable.js';
import { cpuRequestsOf, type ResourceConfig, resourceConfigForPod } from './pod-resource-config.js';

/** The KubeletConfiguration fields of the cgroup hierarchy. */
export interface CgroupsConfig {
  /** `cgroupDriver`: how the runtime names cgroups too (default cgroupfs). */
  driver: CgroupDriver;
  /** `cgroupRoot`: where `kubepods` goes (default `/`). */
  root: string;
  /** `enforceNodeAllocatable`: with `pods`, the kubepods cgroup is limited to node allocatable. */
  enforceNodeAllocatable: readonly string[];
  /** `podPidsLimit`: pids.max of each pod cgroup (-1 or absent: none). */
  podPidsLimit?: number;
  /** `cpuCFSQuota` (default true): false leaves pods without a CFS quota. */
  cpuCFSQuota?: boolean;
  /** Where the cgroup file system is mounted (default /sys/fs/cgroup). */
  mountPoint?: string;
}

/**
 * The container manager's cgroups (upstream pkg/kubelet/cm with cgroupsPerQOS): at start, `kubepods` —
 * limited to capacity less systemReserved and kubeReserved when `enforceNodeAllocatable` has `pods` —
 * and the `burstable` and `besteffort` QoS cgroups under it; before a pod's sandbox, the pod's own
 * cgroup with the limits of its QoS class (`pod-resource-config.ts`), whose name the runtime gets as the
 * sandbox's cgroup parent; after the pod is gone, its cgroup. The Burstable cgroup's cpu shares follow
 * the sum of its pods' cpu requests, BestEffort's stay at the minimum.
 */
export class ContainerManager {
  private readonly fs: CgroupFs;
  private readonly root: CgroupName;
  /** Pods whose cgroup exists, by uid: for the QoS cgroups' shares and to make each cgroup once. */
  private readonly pods = new Map<string, Pod>();

  constructor(
    private readonly config: CgroupsConfig,
    private readonly deps: {
      logger: Logger;
      /** The node's capacity (cpu, memory, pids) and what is reserved from it. */
      capacity: Record<string, string>;
      reservation?: ReservationConfig;
    },
  ) {
    this.fs = new CgroupFs(config.mountPoint ?? '/sys/fs/cgroup');
    this.root = rootName(config.root);
  }

  /** Creates kubepods and the QoS cgroups; the kubelet does not start without them, as upstream. */
  async start(): Promise<void> {
    if (this.config.driver === 'systemd' && !existsSync('/run/systemd/system')) {
      throw new Error(
        'cgroupDriver is "systemd" but systemd is not the init system here (no /run/systemd/system): set cgroupDriver: cgroupfs, and the container runtime to cgroupfs too',
      );
    }
    try {
      await this.fs.create(this.path(qosCgroupName(this.root, 'Guaranteed')), this.kubepodsConfig());
      await this.fs.create(this.path(qosCgroupName(this.root, 'BestEffort')), { cpuShares: 2 });
      await this.fs.create(this.path(qosCgroupName(this.root, 'Burstable')), this.burstableConfig());
    } catch (err) {
      throw new Error(
        `cannot create the ${KUBEPODS} cgroups under ${this.fs.root} (cgroup ${this.fs.layout}): ${(err as Error).message}; run the kubelet as root, or set cgroupsPerQOS: false`,
      );
    }
    this.deps.logger.info('QoS cgroups ready', {
      cgroupRoot: this.config.root,
      driver: this.config.driver,
      layout: this.fs.layout,
      kubepods: this.path([...this.root, KUBEPODS]),
    });
  }

  /** The pod's cgroup in the driver's form: the sandbox's `cgroup_parent`. */
  cgroupParent(pod: Pod): string {
    return cgroupParentName(this.config.driver, podCgroupName(this.root, pod));
  }

  /** Makes the pod's cgroup with its limits (once per pod) and updates its QoS cgroup. */
  async ensure(pod: Pod): Promise<void> {
    const uid = pod.metadata!.uid!;
    if (this.pods.has(uid) && this.fs.exists(this.path(podCgroupName(this.root, pod)))) return;
    this.pods.set(uid, pod);
    if (qosClass(pod) === 'Burstable') await this.updateBurstable();
    try {
      await this.fs.create(this.path(podCgroupName(this.root, pod)), this.podConfig(pod));
    } catch (err) {
      this.pods.delete(uid);
      throw new Error(
        `failed to ensure that the pod's cgroups exist and are correctly applied: ${(err as Error).message}`,
      );
    }
  }

  /** Removes the pod's cgroup once its sandbox is gone; throws (to be retried) while it is busy. */
  async remove(pod: Pod): Promise<void> {
    await this.fs.remove(this.path(podCgroupName(this.root, pod)));
    if (this.pods.delete(pod.metadata!.uid!) && qosClass(pod) === 'Burstable') await this.updateBurstable();
  }

  /** What a pod's cgroup is given (exposed for tests and `configz`-like reports). */
  podConfig(pod: Pod): ResourceConfig {
    return resourceConfigForPod(pod, {
      enforceCpuLimits: this.config.cpuCFSQuota !== false,
      ...(this.config.podPidsLimit !== undefined ? { podPidsLimit: this.config.podPidsLimit } : {}),
    });
  }

  /** kubepods: shares for the allocatable cpu; memory limited to allocatable when enforced. */
  private kubepodsConfig(): ResourceConfig {
    const { capacity, reservation } = this.deps;
    // Upstream enforces capacity less the reservations only: eviction thresholds are the eviction
    // manager's, not the cgroup's.
    const reserved = allocatableReservation(capacity, { ...reservation, evictionHard: [] });
    const cpuMilli = (capacity.cpu ? milliCpu(capacity.cpu) : 0) - (reserved.get('cpu') ?? 0);
    const config: ResourceConfig = { cpuShares: milliCpuToShares(Math.max(0, cpuMilli)) };
    if (this.config.enforceNodeAllocatable.includes('pods') && capacity.memory) {
      config.memory = Math.max(0, quantityValue(capacity.memory) - (reserved.get('memory') ?? 0));
    }
    return config;
  }

  private burstableConfig(): ResourceConfig {
    const burstable = [...this.pods.values()].filter((p) => qosClass(p) === 'Burstable');
    return { cpuShares: milliCpuToShares(cpuRequestsOf(burstable)) };
  }

  private async updateBurstable(): Promise<void> {
    await this.fs.update(this.path(qosCgroupName(this.root, 'Burstable')), this.burstableConfig());
  }

  /** Where a named cgroup is in the file system (the systemd driver's slices are directories too). */
  private path(name: CgroupName): string {
    return this.config.driver === 'systemd' ? toSystemd(name) : toCgroupfs(name);
  }
}

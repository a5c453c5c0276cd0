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
import { qosMemoryLimits, type QosReserved } from './qos-reserved.js';

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
  /** `qosReserved`: memory limits on the Burstable and BestEffort cgroups (`qos-reserved.ts`). */
  qosReserved?: QosReserved;
  /** Where the cgroup file system is mounted (default /sys/fs/cgroup). */
  mountPoint?: string;
}

/**
 * The container manager's cgroups (upstream pkg/kubelet/cm with cgroupsPerQOS): at start, `kubepods` —
 * limited to capacity less systemReserved and kubeReserved when `enforceNodeAllocatable` has `pods` —
 * and the `burstable` and `besteffort` QoS cgroups under it; before a pod's sandbox, the pod's own
 * cgroup with the limits of its QoS class (`pod-resource-config.ts`), whose name the runtime gets as the
 * sandbox's cgroup parent; after the pod is gone, its cgroup. As pods come and go the QoS cgroups are
 * updated (upstream UpdateQOSCgroups): the Burstable cgroup's cpu shares follow the sum of its pods' cpu
 * requests, BestEffort's stay at the minimum; with `qosReserved`, their memory limits follow the
 * requests of the classes above them.
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
      /** The cgroup writer (default: the file system at `mountPoint`). */
      fs?: CgroupFs;
    },
  ) {
    this.fs = deps.fs ?? new CgroupFs(config.mountPoint ?? '/sys/fs/cgroup');
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
      const qos = this.qosConfigs();
      await this.fs.create(this.path(qosCgroupName(this.root, 'BestEffort')), qos.BestEffort);
      await this.fs.create(this.path(qosCgroupName(this.root, 'Burstable')), qos.Burstable);
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
    try {
      // Before the pod's cgroup, as upstream: the lower classes' limits shrink before it uses memory.
      await this.updateQosCgroups();
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
    if (this.pods.delete(pod.metadata!.uid!)) await this.updateQosCgroups();
  }

  /** What a pod's cgroup is given (exposed for tests and `configz`-like reports). */
  podConfig(pod: Pod): ResourceConfig {
    return resourceConfigForPod(pod, {
      enforceCpuLimits: this.config.cpuCFSQuota !== false,
      ...(this.config.podPidsLimit !== undefined ? { podPidsLimit: this.config.podPidsLimit } : {}),
    });
  }

  /**
   * What pods may use as kubepods is given it: capacity less the reservations only (upstream
   * GetNodeAllocatableAbsolute); eviction thresholds are the eviction manager's, not the cgroup's.
   */
  private allocatableAbsolute(): { cpuMilli: number; memory?: number } {
    const { capacity, reservation } = this.deps;
    const reserved = allocatableReservation(capacity, { ...reservation, evictionHard: [] });
    const cpuMilli = (capacity.cpu ? milliCpu(capacity.cpu) : 0) - (reserved.get('cpu') ?? 0);
    if (!capacity.memory) return { cpuMilli: Math.max(0, cpuMilli) };
    const memory = Math.max(0, quantityValue(capacity.memory) - (reserved.get('memory') ?? 0));
    return { cpuMilli: Math.max(0, cpuMilli), memory };
  }

  /** kubepods: shares for the allocatable cpu; memory limited to allocatable when enforced. */
  private kubepodsConfig(): ResourceConfig {
    const { cpuMilli, memory } = this.allocatableAbsolute();
    const config: ResourceConfig = { cpuShares: milliCpuToShares(cpuMilli) };
    if (this.config.enforceNodeAllocatable.includes('pods') && memory !== undefined) config.memory = memory;
    return config;
  }

  /** The Burstable and BestEffort cgroups' settings for the pods there are now. */
  qosConfigs(): Record<'Burstable' | 'BestEffort', ResourceConfig> {
    const pods = [...this.pods.values()];
    const burstable = pods.filter((p) => qosClass(p) === 'Burstable');
    const configs = {
      Burstable: { cpuShares: milliCpuToShares(cpuRequestsOf(burstable)) } as ResourceConfig,
      BestEffort: { cpuShares: milliCpuToShares(0) } as ResourceConfig,
    };
    const percent = this.config.qosReserved?.memory;
    const limits =
      percent === undefined
        ? undefined
        : qosMemoryLimits(pods, this.allocatableAbsolute().memory ?? 0, percent);
    if (limits) {
      configs.Burstable.memory = limits.burstable;
      configs.BestEffort.memory = limits.bestEffort;
    }
    return configs;
  }

  /**
   * Writes the QoS cgroups' settings. A memory limit the kernel refuses (the cgroup already uses more,
   * and cannot reclaim it) is set to the usage instead, as upstream's retrySetMemoryReserve: the cgroup
   * cannot grow further.
   */
  private async updateQosCgroups(): Promise<void> {
    const configs = this.qosConfigs();
    for (const qos of ['Burstable', 'BestEffort'] as const) {
      const path = this.path(qosCgroupName(this.root, qos));
      const config = configs[qos];
      try {
        await this.fs.update(path, config);
      } catch (err) {
        if (config.memory === undefined) throw err;
        const usage = await this.fs.memoryUsage(path).catch(() => undefined);
        if (usage === undefined || usage <= config.memory) throw err;
        this.deps.logger.info(
          'QoS cgroup uses more memory than qosReserved leaves it: limited to its usage',
          {
            qos,
            limit: config.memory,
            usage,
          },
        );
        await this.fs.update(path, { ...config, memory: usage });
      }
    }
  }

  /** Where a named cgroup is in the file system (the systemd driver's slices are directories too). */
  private path(name: CgroupName): string {
    return this.config.driver === 'systemd' ? toSystemd(name) : toCgroupfs(name);
  }
}

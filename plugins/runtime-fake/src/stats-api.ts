/** The fake runtime's CRI stats calls: identities, time stamps and the simulated usage of behaviours. */
import {
  type ContainerFilter,
  ContainerState,
  type ContainerStats,
  type ContainerStatsFilter,
  type ContainerStatsRequest,
  type ContainerStatsResponse,
  type ListContainerStatsRequest,
  type ListContainerStatsResponse,
  type ListPodSandboxStatsRequest,
  type ListPodSandboxStatsResponse,
  type PodSandboxFilter,
  PodSandboxState,
  type PodSandboxStats,
  type PodSandboxStatsRequest,
  type PodSandboxStatsResponse,
} from '@nodelet/cri';
import { isSandboxReady, toContainerStats, toPodSandboxStats } from './records.js';
import { ExecApi } from './exec-api.js';

export abstract class StatsApi extends ExecApi {
  async containerStats(req: ContainerStatsRequest): Promise<ContainerStatsResponse> {
    this.check();
    return { stats: toContainerStats(this.mustContainer(req.containerId), this.nowNs()) };
  }

  async listContainerStats(req: ListContainerStatsRequest): Promise<ListContainerStatsResponse> {
    this.check();
    const filter: ContainerStatsFilter | undefined = req.filter;
    const now = this.nowNs();
    const stats: ContainerStats[] = [];
    const containerFilter: ContainerFilter | undefined = filter && {
      id: filter.id,
      podSandboxId: filter.podSandboxId,
      labelSelector: filter.labelSelector,
      state: { state: ContainerState.CONTAINER_RUNNING },
    };
    for (const c of this.store.findContainers(containerFilter)) {
      if (c.state === ContainerState.CONTAINER_RUNNING) stats.push(toContainerStats(c, now));
    }
    return { stats };
  }

  async podSandboxStats(req: PodSandboxStatsRequest): Promise<PodSandboxStatsResponse> {
    this.check();
    return { stats: toPodSandboxStats(this.mustSandbox(req.podSandboxId), this.nowNs()) };
  }

  async listPodSandboxStats(req: ListPodSandboxStatsRequest): Promise<ListPodSandboxStatsResponse> {
    this.check();
    const filter: PodSandboxFilter | undefined = req.filter && {
      id: req.filter.id,
      labelSelector: req.filter.labelSelector,
      state: { state: PodSandboxState.SANDBOX_READY },
    };
    const now = this.nowNs();
    const stats: PodSandboxStats[] = [];
    for (const s of this.store.findSandboxes(filter))
      if (isSandboxReady(s)) stats.push(toPodSandboxStats(s, now));
    return { stats };
  }
}

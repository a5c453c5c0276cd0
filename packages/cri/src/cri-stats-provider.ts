/**
 * The stats provider of upstream's CRI stats path (pkg/kubelet/stats/cri_stats_provider.go): pods and
 * containers from the runtime's ListPodSandboxStats (or ListContainerStats when the runtime lacks the
 * pod-level call), the node from a node reader — the root cgroup on a real host, the sum of the pods on
 * a simulated one. Rates the runtime does not give (usageNanoCores) come from the previous sample.
 */
import type {
  ContainerStats as CriContainerStats,
  NetworkInterfaceUsage,
  NetworkUsage,
  PodSandbox,
} from './gen/runtime/v1/api.js';
import type { RuntimeService } from './capabilities.js';
import type {
  ContainerIdentity,
  ContainerSummaryStats,
  CpuStats,
  FsStats,
  MemoryStats,
  NetworkStats,
  NodeStats,
  PodReference,
  PodStats,
  RlimitStats,
  StatsProvider,
  StatsSnapshot,
} from './stats-provider.js';
import { containerKey } from './stats-provider.js';
import { CriLabels } from './helpers.js';
import { isErrorCode, type Clock } from '@nodelet/kernel';

/** What the node reader gives: the root cgroup's usage and the machine's memory. */
export interface HostNodeUsage {
  /** Cumulative CPU time, nanoseconds. */
  cpuUsageNs?: number;
  memoryUsageBytes?: number;
  memoryWorkingSetBytes?: number;
  memoryRssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  memoryCapacityBytes?: number;
}

/** Counters of one interface of a pod's network namespace. */
export interface InterfaceCounters {
  name: string;
  rxBytes: number;
  rxErrors: number;
  txBytes: number;
  txErrors: number;
}

export interface CriStatsProviderOptions {
  /** '' (the default) leaves it to the kubelet, which knows its node's name. */
  nodeName?: string;
  clock: Clock;
  /** The node's own usage; absent: the sum of the pods (a simulated node). */
  readNode?: () => Promise<HostNodeUsage>;
  /** Memory of a simulated node, for availableBytes (default 16 GiB). */
  memoryCapacityBytes?: number;
  /** What a simulated node uses besides its pods (system daemons), added to their working set. */
  nodeMemoryOverheadBytes?: () => number;
  /** The node's process limits (`rlimit`: maxpid, curproc), for the `pid.available` signal. */
  rlimit?: (nowMs: number) => RlimitStats | undefined;
  /** When the node booted (ms); default: when the provider was made. */
  nodeStartMs?: number;
  /** The node's file system (nodefs). */
  nodeFs?: (nowMs: number) => Promise<FsStats | undefined>;
  /** The runtime's image file system. */
  imageFs?: (nowMs: number) => Promise<FsStats | undefined>;
  /** Whether the image file system is another device than the node's (absent: the same). */
  dedicatedImageFs?: () => Promise<boolean>;
  /**
   * Whether a sandbox, by its labels, is this node's: a runtime shared by several nodes holds the others'
   * pods too (absent: every sandbox is).
   */
  ownsSandbox?: (labels: Record<string, string>) => boolean;
  /** A pod's interfaces when the runtime does not report its network (by sandbox id). */
  sandboxNetDev?: (podSandboxId: string) => Promise<InterfaceCounters[] | undefined>;
  /** Bytes of a container's log files (all attempts), by pod and container name. */
  logsUsage?: (pod: PodReference, container: string) => Promise<number | undefined>;
  /** The node's system containers (`kubelet`, `runtime`). */
  systemContainers?: (nowMs: number) => Promise<ContainerSummaryStats[]>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const nsToMs = (ns: bigint) => Number(ns / 1_000_000n);
const num = (v: { value: bigint } | undefined) => (v === undefined ? undefined : Number(v.value));

export class CriStatsProvider implements StatsProvider {
  /** Previous cumulative CPU by object, for rates. */
  private readonly lastCpu = new Map<string, { atMs: number; ns: number }>();
  private readonly nodeStartMs: number;

  constructor(
    private readonly runtime: RuntimeService,
    private readonly options: CriStatsProviderOptions,
  ) {
    this.nodeStartMs = options.nodeStartMs ?? options.clock.now();
  }

  async hasDedicatedImageFs(): Promise<boolean> {
    return (await this.options.dedicatedImageFs?.()) ?? false;
  }

  async snapshot(): Promise<StatsSnapshot> {
    const nowMs = this.options.clock.now();
    const [{ items: sandboxes }, { containers }] = await Promise.all([
      this.runtime.listPodSandbox({}),
      this.runtime.listContainers({}),
    ]);
    const containerStats = await this.containerStatsBySandbox();
    const identities = new Map<string, ContainerIdentity>();
    const created = new Map(containers.map((c) => [c.id, c]));
    const pods: PodStats[] = [];
    const seen = new Set<string>();
    for (const sb of sandboxes) {
      const uid = sb.labels[CriLabels.PodUID];
      if (!uid || !sb.metadata || sb.state !== 0 /* SANDBOX_READY */ || seen.has(uid)) continue;
      if (this.options.ownsSandbox && !this.options.ownsSandbox(sb.labels)) continue;
      seen.add(uid);
      const own = containerStats.get(sb.id) ?? [];
      const list: ContainerSummaryStats[] = [];
      for (const c of own) {
        const name = c.attributes?.metadata?.name ?? '';
        const info = created.get(c.attributes?.id ?? '');
        identities.set(containerKey(uid, name), {
          id: c.attributes?.id ?? '',
          image: info?.image?.image || info?.imageRef || '',
        });
        const stats = this.container(uid, c, info ? nsToMs(info.createdAt) : nowMs, nowMs);
        const ref = { name: sb.metadata.name, namespace: sb.metadata.namespace, uid };
        const logs = await this.options.logsUsage?.(ref, name).catch(() => undefined);
        if (logs !== undefined) stats.logs = { time: iso(nowMs), usedBytes: logs };
        list.push(stats);
      }
      const pod = this.pod(sb, uid, list, nowMs);
      if (!pod.network && this.options.sandboxNetDev) {
        const ifaces = await this.options.sandboxNetDev(sb.id).catch(() => undefined);
        if (ifaces && ifaces.length > 0)
          pod.network = { time: iso(nowMs), ...ifaces[0]!, interfaces: ifaces };
      }
      pods.push(pod);
    }
    for (const id of this.lastMemory.keys()) if (!created.has(id)) this.lastMemory.delete(id);
    const node = await this.node(pods, nowMs);
    return { node, pods, containerIdentities: identities };
  }

  /** Running containers' stats by sandbox id: the pod-level call first, the container call otherwise. */
  private async containerStatsBySandbox(): Promise<Map<string, CriContainerStats[]>> {
    const bySandbox = new Map<string, CriContainerStats[]>();
    if (this.podStatsUsable) {
      try {
        const { stats } = await this.runtime.listPodSandboxStats({});
        for (const s of stats) bySandbox.set(s.attributes?.id ?? '', s.linux?.containers ?? []);
        this.sandboxNetwork = new Map(stats.map((s) => [s.attributes?.id ?? '', s.linux?.network]));
        return bySandbox;
      } catch (err) {
        // Unimplemented, or a runtime that cannot give them for these sandboxes (containerd 1.6 wants a
        // pod cgroup: "cgroupPath is empty"): the container-level call serves from now on, as upstream's
        // kubelet does without PodAndContainerStatsFromCRI. Any other failure may be one sandbox's
        // (containerd 1.6 fails the whole call while any sandbox, of any client, is stopped: "… is not in
        // ready state"): the container-level call serves this time; a runtime that is away fails it too.
        if (isErrorCode(err, 'Unimplemented') || /cgroup/i.test(String((err as Error)?.message)))
          this.podStatsUsable = false;
      }
    }
    this.sandboxNetwork = new Map();
    const [{ stats }, { containers }] = await Promise.all([
      this.runtime.listContainerStats({}),
      this.runtime.listContainers({}),
    ]);
    const sandboxOf = new Map(containers.map((c) => [c.id, c.podSandboxId]));
    for (const s of stats) {
      const sandbox = sandboxOf.get(s.attributes?.id ?? '');
      if (sandbox === undefined) continue;
      const list = bySandbox.get(sandbox);
      if (list) list.push(s);
      else bySandbox.set(sandbox, [s]);
    }
    return bySandbox;
  }

  private sandboxNetwork = new Map<string, NetworkUsage | undefined>();
  /** The last memory sample of each container by id. */
  private readonly lastMemory = new Map<string, MemoryStats>();
  private podStatsUsable = true;

  private container(
    podUid: string,
    c: CriContainerStats,
    startMs: number,
    nowMs: number,
  ): ContainerSummaryStats {
    const name = c.attributes?.metadata?.name ?? '';
    const cumulative = num(c.cpu?.usageCoreNanoSeconds);
    const stats: ContainerSummaryStats = {
      name,
      startTime: iso(startMs),
      cpu: this.cpu(`${podUid}/${name}`, nowMs, cumulative, num(c.cpu?.usageNanoCores)),
      memory: this.memory(c, nowMs),
    };
    if (c.writableLayer) {
      stats.rootfs = {
        time: iso(nowMs),
        usedBytes: num(c.writableLayer.usedBytes) ?? 0,
        inodesUsed: num(c.writableLayer.inodesUsed) ?? 0,
      };
    }
    stats.logs = { time: iso(nowMs), usedBytes: 0 };
    return stats;
  }

  /**
   * A container's memory; when the runtime gives none this time, its last sample (containerd skips a
   * container whose shim does not answer in time: a running container would seem to use nothing).
   */
  private memory(c: CriContainerStats, nowMs: number): MemoryStats {
    const id = c.attributes?.id ?? '';
    if (!c.memory) {
      return (
        this.lastMemory.get(id) ?? {
          time: iso(nowMs),
          workingSetBytes: 0,
          usageBytes: 0,
          rssBytes: 0,
          pageFaults: 0,
          majorPageFaults: 0,
        }
      );
    }
    const memory: MemoryStats = {
      time: iso(nowMs),
      workingSetBytes: num(c.memory.workingSetBytes) ?? 0,
      usageBytes: num(c.memory.usageBytes) ?? 0,
      rssBytes: num(c.memory.rssBytes) ?? 0,
      pageFaults: num(c.memory.pageFaults) ?? 0,
      majorPageFaults: num(c.memory.majorPageFaults) ?? 0,
    };
    this.lastMemory.set(id, memory);
    return memory;
  }

  private pod(sb: PodSandbox, uid: string, containers: ContainerSummaryStats[], nowMs: number): PodStats {
    const sum = (pick: (c: ContainerSummaryStats) => number | undefined) =>
      containers.reduce((total, c) => total + (pick(c) ?? 0), 0);
    const cumulative = sum((c) => c.cpu?.usageCoreNanoSeconds);
    const memory: MemoryStats = {
      time: iso(nowMs),
      workingSetBytes: sum((c) => c.memory?.workingSetBytes),
      usageBytes: sum((c) => c.memory?.usageBytes),
      rssBytes: sum((c) => c.memory?.rssBytes),
      pageFaults: sum((c) => c.memory?.pageFaults),
      majorPageFaults: sum((c) => c.memory?.majorPageFaults),
    };
    const used = sum((c) => (c.rootfs?.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0));
    const stats: PodStats = {
      podRef: { name: sb.metadata!.name, namespace: sb.metadata!.namespace, uid },
      startTime: iso(nsToMs(sb.createdAt)),
      containers,
      cpu: this.cpu(
        uid,
        nowMs,
        cumulative,
        sum((c) => c.cpu?.usageNanoCores),
      ),
      memory,
      volume: [],
      'ephemeral-storage': { time: iso(nowMs), usedBytes: used, inodesUsed: 0 },
      process_stats: { process_count: containers.length },
    };
    const network = toNetwork(this.sandboxNetwork.get(sb.id), nowMs);
    if (network) stats.network = network;
    return stats;
  }

  private async node(pods: PodStats[], nowMs: number): Promise<NodeStats> {
    const read = this.options.readNode;
    const usage: HostNodeUsage = read ? await read() : {};
    const sum = (pick: (p: PodStats) => number | undefined) =>
      pods.reduce((total, p) => total + (pick(p) ?? 0), 0);
    const cumulative = read ? usage.cpuUsageNs : sum((p) => p.cpu?.usageCoreNanoSeconds);
    const workingSet = read
      ? usage.memoryWorkingSetBytes
      : sum((p) => p.memory?.workingSetBytes) + (this.options.nodeMemoryOverheadBytes?.() ?? 0);
    const capacity = usage.memoryCapacityBytes ?? this.options.memoryCapacityBytes ?? 16 * 2 ** 30;
    const cpu: CpuStats = this.cpu(
      '',
      nowMs,
      cumulative,
      read ? undefined : sum((p) => p.cpu?.usageNanoCores),
    );
    const o = this.options;
    const [fs, imageFs, systemContainers] = await Promise.all([
      o.nodeFs?.(nowMs).catch(() => undefined),
      o.imageFs?.(nowMs).catch(() => undefined),
      o.systemContainers?.(nowMs).catch(() => []) ?? [],
    ]);
    return {
      nodeName: this.options.nodeName ?? '',
      startTime: iso(this.nodeStartMs),
      systemContainers,
      ...(fs ? { fs } : {}),
      ...(imageFs ? { runtime: { imageFs } } : {}),
      ...(o.rlimit ? { rlimit: o.rlimit(nowMs) } : {}),
      cpu,
      memory: {
        time: iso(nowMs),
        availableBytes: workingSet === undefined ? undefined : Math.max(0, capacity - workingSet),
        usageBytes: read ? usage.memoryUsageBytes : workingSet,
        workingSetBytes: workingSet,
        rssBytes: read ? usage.memoryRssBytes : sum((p) => p.memory?.rssBytes),
        pageFaults: usage.pageFaults ?? 0,
        majorPageFaults: usage.majorPageFaults ?? 0,
      },
    };
  }

  /** CPU stats with a rate: the runtime's when it gives one, else from the previous sample. */
  private cpu(key: string, nowMs: number, cumulative?: number, given?: number): CpuStats {
    const stats: CpuStats = { time: iso(nowMs) };
    if (cumulative === undefined) return stats;
    stats.usageCoreNanoSeconds = cumulative;
    const last = this.lastCpu.get(key);
    this.lastCpu.set(key, { atMs: nowMs, ns: cumulative });
    if (given !== undefined) stats.usageNanoCores = given;
    else if (last && nowMs > last.atMs && cumulative >= last.ns)
      stats.usageNanoCores = Math.round(((cumulative - last.ns) * 1000) / (nowMs - last.atMs));
    return stats;
  }
}

function toNetwork(n: NetworkUsage | undefined, nowMs: number): NetworkStats | undefined {
  if (!n) return undefined;
  const iface = (i: NetworkInterfaceUsage) => ({
    name: i.name,
    rxBytes: num(i.rxBytes) ?? 0,
    rxErrors: num(i.rxErrors) ?? 0,
    txBytes: num(i.txBytes) ?? 0,
    txErrors: num(i.txErrors) ?? 0,
  });
  const main = n.defaultInterface ? iface(n.defaultInterface) : undefined;
  const interfaces = n.interfaces.length > 0 ? n.interfaces.map(iface) : main ? [main] : [];
  return { time: iso(nowMs), ...main, interfaces };
}

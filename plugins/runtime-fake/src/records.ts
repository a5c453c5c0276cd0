/**
 * What the fake runtime keeps per sandbox and container, and the CRI messages built from it. Every
 * message is a fresh object (maps and lists copied), so callers may change what they get back; the
 * copies are shallow where the data is flat, which keeps ListContainers cheap.
 */
import {
  type Container,
  ContainerStats,
  type ContainerConfig,
  type ContainerMetadata,
  ContainerState,
  type ContainerStatus,
  type ImageSpec,
  LinuxContainerResources,
  Mount,
  type NamespaceOption,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxMetadata,
  PodSandboxState,
  PodSandboxStats,
  type PodSandboxStatus,
} from '@nodelet/cri';
import type { ContainerBehavior, ProbeScript, ResolvedBehavior } from './behavior.js';
import { containerIdentity } from './container-view.js';
import type { ImageConfig } from './image-config.js';
import type { LogBuffer } from './cri-log.js';
import type { IpAllocator } from './ip-allocator.js';

export interface SandboxRecord {
  readonly id: string;
  /** `<name>_<namespace>_<uid>_<attempt>`, reserved while the sandbox exists (as containerd does). */
  readonly reservedName: string;
  readonly config: PodSandboxConfig;
  readonly metadata: PodSandboxMetadata;
  readonly runtimeHandler: string;
  readonly createdAt: bigint;
  /** The `io.kubernetes.pod.uid` label, the key of the pod index. */
  readonly podUid: string | undefined;
  /** '' for host-network sandboxes, and once the sandbox is stopped (its network is torn down). */
  ip: string;
  readonly ipPool: IpAllocator | undefined;
  /** Behaviours from the pod's annotations, by container name or `all`. */
  readonly behaviors: Map<string, ContainerBehavior> | undefined;
  readonly containers: Set<ContainerRecord>;
  state: PodSandboxState;
}

export interface ContainerRecord {
  readonly id: string;
  readonly sandbox: SandboxRecord;
  /** `<container>_<pod>_<namespace>_<uid>_<attempt>`, reserved while the container exists. */
  readonly reservedName: string;
  readonly config: ContainerConfig;
  readonly metadata: ContainerMetadata;
  readonly podUid: string | undefined;
  /** The image id (`sha256:…`). */
  readonly imageId: string;
  /** What ContainerStatus reports as the image: its first tag, or the id. */
  readonly statusImage: string;
  /** What ContainerStatus reports as imageRef: the repo digest, or the id. */
  readonly statusImageRef: string;
  /** The image's user, entrypoint and cmd, as the image was when the container was created. */
  readonly imageConfig: ImageConfig;
  /** `<sandbox logDirectory>/<logPath>`, or the logPath alone when the sandbox has no log directory. */
  readonly logPath: string;
  readonly createdAt: bigint;
  readonly behavior: ResolvedBehavior;
  state: ContainerState;
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  reason: string;
  message: string;
  resources: LinuxContainerResources | undefined;
  /** Set while StartContainer waits out startDelay. */
  starting: { cancel(): void; reject(err: Error): void } | undefined;
  /** The scripted exit (exitAfter), when one is pending. */
  cancelExit: (() => void) | undefined;
  /** The pending end of a StopContainer: when (clock ms) and how it ends. */
  termination: { atMs: number; exitCode: number; cancel(): void } | undefined;
  /** StopContainer calls waiting for the exit. */
  waiters: Array<() => void> | undefined;
  logs: LogBuffer | undefined;
  /** How its probes are answered (from the behaviour, or `scriptProbes`); undefined: healthy. */
  probes: ProbeScript | undefined;
  /** Probes answered so far, by type (for probeFailAfter); undefined until the first. */
  probeCounts: { liveness: number; readiness: number; startup: number } | undefined;
}

const copyMap = (m: { [key: string]: string }): { [key: string]: string } => ({ ...m });

function copyImageSpec(spec: ImageSpec | undefined): ImageSpec | undefined {
  return spec && { ...spec, annotations: copyMap(spec.annotations) };
}

function copyNamespaceOption(o: NamespaceOption | undefined): NamespaceOption | undefined {
  if (!o) return undefined;
  const userns = o.usernsOptions;
  return {
    ...o,
    usernsOptions: userns && {
      mode: userns.mode,
      uids: userns.uids.map((m) => ({ ...m })),
      gids: userns.gids.map((m) => ({ ...m })),
    },
  };
}

export function toPodSandbox(s: SandboxRecord): PodSandbox {
  return {
    id: s.id,
    metadata: { ...s.metadata },
    state: s.state,
    createdAt: s.createdAt,
    labels: copyMap(s.config.labels),
    annotations: copyMap(s.config.annotations),
    runtimeHandler: s.runtimeHandler,
  };
}

export function toPodSandboxStatus(s: SandboxRecord): PodSandboxStatus {
  return {
    id: s.id,
    metadata: { ...s.metadata },
    state: s.state,
    createdAt: s.createdAt,
    network: { ip: s.ip, additionalIps: [] },
    linux: {
      namespaces: { options: copyNamespaceOption(s.config.linux?.securityContext?.namespaceOptions) },
    },
    labels: copyMap(s.config.labels),
    annotations: copyMap(s.config.annotations),
    runtimeHandler: s.runtimeHandler,
  };
}

export function toContainer(c: ContainerRecord): Container {
  return {
    id: c.id,
    podSandboxId: c.sandbox.id,
    metadata: { ...c.metadata },
    image: copyImageSpec(c.config.image),
    imageRef: c.imageId,
    state: c.state,
    createdAt: c.createdAt,
    labels: copyMap(c.config.labels),
    annotations: copyMap(c.config.annotations),
    imageId: c.imageId,
  };
}

export function toContainerStatus(c: ContainerRecord): ContainerStatus {
  const identity = containerIdentity(c);
  return {
    id: c.id,
    metadata: { ...c.metadata },
    state: c.state,
    createdAt: c.createdAt,
    startedAt: c.startedAt,
    finishedAt: c.finishedAt,
    exitCode: c.exitCode,
    image: {
      image: c.statusImage,
      annotations: copyMap(c.config.image?.annotations ?? {}),
      userSpecifiedImage: c.config.image?.userSpecifiedImage ?? '',
      runtimeHandler: c.config.image?.runtimeHandler ?? '',
      imageRef: '',
    },
    imageRef: c.statusImageRef,
    reason: c.reason,
    message: c.message,
    labels: copyMap(c.config.labels),
    annotations: copyMap(c.config.annotations),
    mounts: c.config.mounts.map((m) => Mount.fromPartial(m)),
    logPath: c.logPath,
    resources: c.resources && { linux: LinuxContainerResources.fromPartial(c.resources) },
    imageId: c.imageId,
    user: {
      linux: {
        uid: identity.uid,
        gid: identity.gid,
        supplementalGroups: [...identity.supplementalGroups],
      },
    },
    stopSignal: c.config.stopSignal,
  };
}

/** Where containerd keeps image layers: the image filesystem ImageFsInfo and stats report. */
export const IMAGE_FS_MOUNTPOINT = '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs';

/**
 * Stats of a container: its identity, time stamps and simulated usage (the behaviour's `cpu`, `memory`,
 * `disk`). Cumulative CPU advances on the clock while the container runs, at its configured rate.
 */
export function toContainerStats(c: ContainerRecord, now: bigint): ContainerStats {
  const cpu = cumulativeCpuNs(c, now);
  const memory = running(c) ? BigInt(memoryUsageBytes(c, now)) : 0n;
  const disk = diskUsageBytes(c, now);
  return ContainerStats.fromPartial({
    attributes: {
      id: c.id,
      metadata: c.metadata,
      labels: c.config.labels,
      annotations: c.config.annotations,
    },
    cpu: {
      timestamp: now,
      usageCoreNanoSeconds: { value: cpu },
      usageNanoCores: { value: running(c) ? BigInt(c.behavior.usage.cpuMillicores) * 1_000_000n : 0n },
    },
    memory: {
      timestamp: now,
      workingSetBytes: { value: memory },
      usageBytes: { value: memory },
      rssBytes: { value: memory },
      availableBytes: { value: 0n },
      pageFaults: { value: 0n },
      majorPageFaults: { value: 0n },
    },
    writableLayer: {
      timestamp: now,
      fsId: { mountpoint: IMAGE_FS_MOUNTPOINT },
      usedBytes: { value: BigInt(disk) },
      inodesUsed: { value: disk > 0 ? 1n : 0n },
    },
  });
}

/** Seconds the container has run by `now` (until it exited). */
function secondsRun(c: ContainerRecord, now: bigint): number {
  if (c.state === ContainerState.CONTAINER_CREATED) return 0;
  const end = running(c) ? now : c.finishedAt > c.startedAt ? c.finishedAt : c.startedAt;
  return end > c.startedAt ? Number((end - c.startedAt) / 1_000_000n) / 1000 : 0;
}

/** The simulated working set: the scripted amount plus its growth over the time run. */
export function memoryUsageBytes(c: ContainerRecord, now: bigint): number {
  const { memoryBytes, memoryGrowthBytes } = c.behavior.usage;
  return Math.floor(memoryBytes + memoryGrowthBytes * secondsRun(c, now));
}

/** The simulated writable layer: kept after the container exits, until it is removed. */
export function diskUsageBytes(c: ContainerRecord, now: bigint): number {
  const { diskBytes, diskGrowthBytes } = c.behavior.usage;
  return Math.floor(diskBytes + diskGrowthBytes * secondsRun(c, now));
}

function running(c: ContainerRecord): boolean {
  return c.state === ContainerState.CONTAINER_RUNNING;
}

/** CPU time used so far: the configured rate times the time the container ran (until it exited). */
function cumulativeCpuNs(c: ContainerRecord, now: bigint): bigint {
  const millicores = BigInt(c.behavior.usage.cpuMillicores);
  if (millicores === 0n || c.state === ContainerState.CONTAINER_CREATED) return 0n;
  const end = running(c) ? now : c.finishedAt > c.startedAt ? c.finishedAt : c.startedAt;
  return end > c.startedAt ? ((end - c.startedAt) * millicores) / 1000n : 0n;
}

/** Stats of a sandbox and its running containers; the pod's usage is the sum of theirs. */
export function toPodSandboxStats(s: SandboxRecord, now: bigint): PodSandboxStats {
  const containers: ContainerStats[] = [];
  for (const c of s.containers) if (running(c)) containers.push(toContainerStats(c, now));
  const sum = (pick: (c: ContainerStats) => bigint | undefined) =>
    containers.reduce((total, c) => total + (pick(c) ?? 0n), 0n);
  const workingSet = sum((c) => c.memory?.workingSetBytes?.value);
  return PodSandboxStats.fromPartial({
    attributes: {
      id: s.id,
      metadata: s.metadata,
      labels: s.config.labels,
      annotations: s.config.annotations,
    },
    linux: {
      cpu: {
        timestamp: now,
        usageCoreNanoSeconds: { value: sum((c) => c.cpu?.usageCoreNanoSeconds?.value) },
        usageNanoCores: { value: sum((c) => c.cpu?.usageNanoCores?.value) },
      },
      memory: {
        timestamp: now,
        workingSetBytes: { value: workingSet },
        usageBytes: { value: workingSet },
        rssBytes: { value: workingSet },
      },
      network: {
        timestamp: now,
        defaultInterface: { name: 'eth0', rxBytes: { value: 0n }, txBytes: { value: 0n } },
      },
      containers,
    },
  });
}

export function containerStateName(state: ContainerState): string {
  return ContainerState[state] ?? String(state);
}

export function isSandboxReady(s: SandboxRecord): boolean {
  return s.state === PodSandboxState.SANDBOX_READY;
}

import { quantityValue } from '@nodelet/api';
import { CriStatsProvider, type FsStats, type StatsProvider } from '@nodelet/cri';
import { type Clock, invalidInput } from '@nodelet/kernel';

/**
 * The machine a fake runtime pretends to run on: its memory, one disk (the node's and the images' file
 * system, as on most nodes), inodes and process ids — and what the node uses besides its pods, which a
 * test (or a user of `nodelet up` through the plugin's configuration) raises to put the node under
 * pressure. Pods' usage comes from their behaviours (`memory`, `memoryGrowth`, `disk`, `diskGrowth`).
 */
export interface SimulatedNodeConfig {
  /** Memory capacity (default 16Gi). */
  memory?: string;
  /** The disk's capacity (default 100Gi). */
  disk?: string;
  /** Inodes of the disk (default 10 million). */
  inodes?: number;
  /** Process ids (`pid_max`, default 32768). */
  pids?: number;
  /** What the node uses besides its pods, from the start. */
  usage?: Partial<Record<keyof NodeUsage, string | number>>;
}

/** What the node uses besides its pods and images. */
export interface NodeUsage {
  memoryBytes: number;
  diskBytes: number;
  inodes: number;
  processes: number;
}

/** What the fake runtime holds on the disk and runs, summed. */
export interface RuntimeFootprint {
  imageBytes(): number;
  imageCount(): number;
  /** Writable layers of every container not removed. */
  containerDiskBytes(nowNs: bigint): number;
  runningContainers(): number;
}

const amount = (field: string, value: string | number | undefined, fallback: number): number => {
  if (value === undefined) return fallback;
  let n: number;
  try {
    n = typeof value === 'number' ? value : quantityValue(value);
  } catch {
    n = NaN;
  }
  if (!(Number.isFinite(n) && n >= 0))
    throw invalidInput(`runtime-fake: node.${field} must be a quantity >= 0, not ${JSON.stringify(value)}`);
  return n;
};

export class SimulatedNode {
  readonly memoryCapacityBytes: number;
  readonly diskCapacityBytes: number;
  readonly inodes: number;
  readonly maxPids: number;
  private current: NodeUsage;

  constructor(config: SimulatedNodeConfig = {}) {
    this.memoryCapacityBytes = amount('memory', config.memory, 16 * 2 ** 30);
    this.diskCapacityBytes = amount('disk', config.disk, 100 * 2 ** 30);
    this.inodes = amount('inodes', config.inodes, 10_000_000);
    this.maxPids = amount('pids', config.pids, 32_768);
    this.current = { memoryBytes: 0, diskBytes: 0, inodes: 0, processes: 0 };
    if (config.usage) this.setUsage(config.usage);
  }

  get usage(): Readonly<NodeUsage> {
    return this.current;
  }

  /** Sets what the node uses besides its pods (`{ diskBytes: '95Gi' }`); the other fields stay. */
  setUsage(usage: Partial<Record<keyof NodeUsage, string | number>>): void {
    const next = { ...this.current };
    for (const [key, value] of Object.entries(usage)) {
      if (!(key in next))
        throw invalidInput(
          `runtime-fake: unknown node usage field "${key}"; known: ${Object.keys(next).join(', ')}`,
        );
      next[key as keyof NodeUsage] = amount(`usage.${key}`, value, 0);
    }
    this.current = next;
  }

  /**
   * The Summary API of this node on `runtime`: pods from the CRI stats, the node's memory their working
   * set plus its own, its disk (nodefs and imagefs alike) the images, writable layers and its own use.
   */
  statsProvider(
    runtime: ConstructorParameters<typeof CriStatsProvider>[0],
    footprint: RuntimeFootprint,
    clock: Clock,
  ): StatsProvider {
    const disk = (nowMs: number): FsStats => {
      const used = Math.min(
        this.diskCapacityBytes,
        this.current.diskBytes +
          footprint.imageBytes() +
          footprint.containerDiskBytes(BigInt(nowMs) * 1_000_000n),
      );
      const inodesUsed = Math.min(this.inodes, this.current.inodes + footprint.imageCount() * 100);
      return {
        time: new Date(nowMs).toISOString(),
        capacityBytes: this.diskCapacityBytes,
        usedBytes: used,
        availableBytes: this.diskCapacityBytes - used,
        inodes: this.inodes,
        inodesUsed,
        inodesFree: this.inodes - inodesUsed,
      };
    };
    return new CriStatsProvider(runtime, {
      clock,
      memoryCapacityBytes: this.memoryCapacityBytes,
      nodeMemoryOverheadBytes: () => this.current.memoryBytes,
      nodeFs: async (nowMs) => disk(nowMs),
      imageFs: async (nowMs) => disk(nowMs),
      rlimit: (nowMs) => ({
        time: new Date(nowMs).toISOString(),
        maxpid: this.maxPids,
        curproc: this.current.processes + footprint.runningContainers(),
      }),
    });
  }
}

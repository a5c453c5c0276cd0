import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { detectCgroupMode } from './cgroup-mode.js';
import type { ResourceConfig } from './pod-resource-config.js';
import { sharesToWeight } from './pod-resource-config.js';

/**
 * Cgroups written through the cgroup file system (upstream's cgroupfs cgroup manager, by way of runc's
 * fs and fs2 drivers), on either layout:
 *
 *   v1 (legacy or hybrid: one hierarchy per controller under the root, say /sys/fs/cgroup/cpu)
 *      cpu.shares, cpu.cfs_quota_us, cpu.cfs_period_us, memory.limit_in_bytes, pids.max — a cgroup is
 *      made in the cpu, memory and pids hierarchies; the runtime makes the others it uses itself
 *   v2 (unified: /sys/fs/cgroup/cgroup.controllers exists)
 *      cpu.weight, cpu.max, memory.max, pids.max — the controllers enabled in every ancestor's
 *      cgroup.subtree_control on the way down
 *
 * A path is a cgroupfs name (`/kubepods/burstable/pod<uid>`). Removal takes the cgroup out of every
 * hierarchy it is in (the runtime's own included); a cgroup that still has processes or children stays
 * (rmdir refuses: EBUSY) and removal says so.
 */
export type CgroupLayout = 'v1' | 'v2';

/** The controllers the kubelet sets limits with. */
const V1_CONTROLLERS = ['cpu', 'memory', 'pids'] as const;
const V2_CONTROLLERS = ['cpu', 'memory', 'pids'];

/** How the kubelet writes limits under `root`: the v2 files only where it is the unified hierarchy. */
export function detectCgroupLayout(root: string): CgroupLayout {
  return detectCgroupMode(root) === 'v2' ? 'v2' : 'v1';
}

export class CgroupFs {
  readonly layout: CgroupLayout;

  constructor(
    /** Where the cgroup file system is mounted: /sys/fs/cgroup. */
    readonly root: string,
    layout?: CgroupLayout,
  ) {
    this.layout = layout ?? detectCgroupLayout(root);
  }

  /** Creates the cgroup (and its parents) where the kubelet sets limits, then sets `config`. */
  async create(path: string, config: ResourceConfig): Promise<void> {
    if (this.layout === 'v2') await this.createV2(path);
    else for (const c of V1_CONTROLLERS) await mkdir(this.v1Dir(c, path), { recursive: true });
    await this.update(path, config);
  }

  /** Writes what `config` sets; what it leaves out is left as it is. */
  async update(path: string, config: ResourceConfig): Promise<void> {
    if (this.layout === 'v2') return this.updateV2(path, config);
    const cpu = this.v1Dir('cpu', path);
    if (config.cpuShares !== undefined) await write(cpu, 'cpu.shares', config.cpuShares);
    if (config.cpuPeriod !== undefined) await write(cpu, 'cpu.cfs_period_us', config.cpuPeriod);
    if (config.cpuQuota !== undefined) await write(cpu, 'cpu.cfs_quota_us', config.cpuQuota);
    if (config.memory !== undefined)
      await write(this.v1Dir('memory', path), 'memory.limit_in_bytes', config.memory);
    if (config.pidsLimit !== undefined) await write(this.v1Dir('pids', path), 'pids.max', config.pidsLimit);
  }

  /** The cgroup's memory usage in bytes (v1 memory.usage_in_bytes, v2 memory.current). */
  async memoryUsage(path: string): Promise<number> {
    const file =
      this.layout === 'v2'
        ? join(this.root, path, 'memory.current')
        : join(this.v1Dir('memory', path), 'memory.usage_in_bytes');
    return Number((await readFile(file, 'utf8')).trim());
  }

  /** Whether the cgroup exists in every hierarchy the kubelet sets limits in. */
  exists(path: string): boolean {
    if (this.layout === 'v2') return existsSync(join(this.root, path));
    return V1_CONTROLLERS.every((c) => existsSync(this.v1Dir(c, path)));
  }

  /**
   * Removes the cgroup from every hierarchy, children first (what the runtime left of its containers'
   * cgroups once they are gone). Throws, naming the cgroup, when one still has processes.
   */
  async remove(path: string): Promise<void> {
    const dirs = this.layout === 'v2' ? [join(this.root, path)] : await this.v1DirsOf(path);
    for (const dir of dirs) await removeTree(dir);
  }

  /**
   * The cgroup's directories in every hierarchy under the root that has it: the v1 controllers' and, on
   * a hybrid host, the unified one (`unified/`), where runc puts containers too.
   */
  private async v1DirsOf(path: string): Promise<string[]> {
    const hierarchies = await readdir(this.root, { withFileTypes: true });
    return hierarchies
      .filter((d) => d.isDirectory())
      .map((d) => join(this.root, d.name, path))
      .filter((dir) => existsSync(dir));
  }

  private v1Dir(controller: string, path: string): string {
    return join(this.root, controller, path);
  }

  private async createV2(path: string): Promise<void> {
    await this.checkV2Controllers();
    const parts = path.split('/').filter((p) => p !== '');
    let dir = this.root;
    for (const part of parts) {
      await enableControllers(dir);
      dir = join(dir, part);
      await mkdir(dir, { recursive: true });
    }
  }

  /**
   * The hierarchy must offer the controllers the kubelet sets limits with; a v2 hierarchy whose
   * controllers are bound to v1 ones (a hybrid host's) offers none of them.
   */
  private async checkV2Controllers(): Promise<void> {
    const offered = (await readFile(join(this.root, 'cgroup.controllers'), 'utf8').catch(() => ''))
      .split(/\s+/)
      .filter((c) => c !== '');
    const missing = V2_CONTROLLERS.filter((c) => !offered.includes(c));
    if (missing.length > 0) {
      throw new Error(
        `the cgroup v2 hierarchy at ${this.root} does not offer the ${missing.join(', ')} controller${missing.length > 1 ? 's' : ''} the kubelet sets limits with (it offers: ${offered.join(' ') || 'none'})`,
      );
    }
  }

  private async updateV2(path: string, config: ResourceConfig): Promise<void> {
    const dir = join(this.root, path);
    if (config.cpuShares !== undefined) await write(dir, 'cpu.weight', sharesToWeight(config.cpuShares));
    if (config.cpuQuota !== undefined || config.cpuPeriod !== undefined) {
      const quota = config.cpuQuota === undefined || config.cpuQuota < 0 ? 'max' : String(config.cpuQuota);
      await write(dir, 'cpu.max', `${quota} ${config.cpuPeriod ?? 100_000}`);
    }
    if (config.memory !== undefined) await write(dir, 'memory.max', config.memory);
    if (config.pidsLimit !== undefined) await write(dir, 'pids.max', config.pidsLimit);
  }
}

async function write(dir: string, file: string, value: number | string): Promise<void> {
  try {
    await writeFile(join(dir, file), String(value));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(`cannot write ${value} to ${join(dir, file)}: ${e.code ?? e.message}`);
  }
}

/** Makes the kubelet's controllers available to the children of `dir` (v2), those the kernel offers. */
async function enableControllers(dir: string): Promise<void> {
  const available = await readFile(join(dir, 'cgroup.controllers'), 'utf8').catch(() => '');
  const enabled = await readFile(join(dir, 'cgroup.subtree_control'), 'utf8').catch(() => '');
  const have = new Set(enabled.split(/\s+/));
  const offered = new Set(available.split(/\s+/));
  const missing = V2_CONTROLLERS.filter((c) => offered.has(c) && !have.has(c));
  if (missing.length > 0) await write(dir, 'cgroup.subtree_control', missing.map((c) => `+${c}`).join(' '));
}

/** rmdir of a cgroup directory after its child cgroups (a cgroup's files cannot be unlinked). */
async function removeTree(dir: string): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const e of entries) if (e.isDirectory()) await removeTree(join(dir, e.name));
  try {
    await rmdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code === 'EBUSY') throw new Error(`cgroup ${dir} still has processes`);
    // A plain directory (the tests' stand-in for a cgroup file system) holds its files: remove them.
    if (code === 'ENOTEMPTY') return rm(dir, { recursive: true, force: true });
    throw err;
  }
}

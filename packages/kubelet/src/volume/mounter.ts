import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { VolumeError } from './volume-error.js';

/**
 * mount(8) and umount(8) for the volumes the kubelet keeps in memory (emptyDir `medium: Memory`,
 * secret, projected): a tmpfs is mounted when the kubelet runs as root on Linux; elsewhere (a non-root
 * kubelet, the fake runtime on a laptop) those volumes are plain directories.
 */
export interface Mounter {
  /** Whether tmpfs volumes are mounted (root on Linux unless configured otherwise). */
  readonly tmpfs: boolean;
  /** Mounts a tmpfs on `dir` unless one is there already (every sync sets volumes up again). */
  mountTmpfs(dir: string, sizeBytes?: number): Promise<void>;
  /** Unmounts everything mounted under `dir`, deepest first; throws when one stays (the caller retries). */
  unmountUnder(dir: string): Promise<void>;
}

export interface HostMounterOptions {
  /** Mount tmpfs volumes (default: running as root on Linux). */
  tmpfs?: boolean;
  /** Runs mount(8) / umount(8); injectable for tests. */
  run?: (command: string, args: string[]) => Promise<void>;
  /** Mount points of this mount namespace (default: from /proc/self/mountinfo). */
  mountPoints?: () => Promise<string[]>;
}

const execFileAsync = promisify(execFile);

export class HostMounter implements Mounter {
  readonly tmpfs: boolean;
  private readonly run: (command: string, args: string[]) => Promise<void>;
  private readonly mountPoints: () => Promise<string[]>;

  constructor(options: HostMounterOptions = {}) {
    this.tmpfs = options.tmpfs ?? (process.platform === 'linux' && process.getuid?.() === 0);
    this.run = options.run ?? runCommand;
    this.mountPoints = options.mountPoints ?? procMountPoints;
  }

  async mountTmpfs(dir: string, sizeBytes?: number): Promise<void> {
    if ((await this.mountPoints()).includes(dir)) return;
    const options = sizeBytes && sizeBytes > 0 ? ['-o', `size=${sizeBytes}`] : [];
    await this.run('mount', ['-t', 'tmpfs', ...options, 'tmpfs', dir]);
  }

  async unmountUnder(dir: string): Promise<void> {
    if (!this.tmpfs) return; // a kubelet that mounts nothing has nothing to unmount
    const mounted = (await this.mountPoints()).filter((p) => p.startsWith(dir + '/'));
    // Deepest first; a failed umount throws, so the cleanup is retried rather than rm-ing into a mount.
    for (const point of mounted.sort((a, b) => b.length - a.length)) await this.run('umount', [point]);
  }
}

async function runCommand(command: string, args: string[]): Promise<void> {
  try {
    await execFileAsync(command, args, { timeout: 30_000 });
  } catch (err) {
    const e = err as { stderr?: string; message?: string };
    throw new VolumeError(`${command} ${args.join(' ')}: ${(e.stderr || e.message || '').trim()}`);
  }
}

/** Mount points from /proc/self/mountinfo (field 5, octal escapes such as `\040` decoded). */
export async function procMountPoints(): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  return text
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => !!p)
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
}

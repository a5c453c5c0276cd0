import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Pod, quantityValue, type Volume } from '@nodelet/api';

/**
 * In-tree volumes the standalone kubelet supports: emptyDir (a per-pod directory under the kubelet root;
 * for `medium: Memory` a tmpfs mounted on it, sized by `sizeLimit` when set, when the kubelet runs as
 * root on Linux — elsewhere a plain directory) and hostPath (with its `type` checks). Other volume
 * sources are refused by name until they are implemented.
 */
export interface VolumeMountSource {
  hostPath: string;
  readOnly: boolean;
}

export class VolumeError extends Error {
  override name = 'VolumeError';
}

const supportedSources = ['emptyDir', 'hostPath'];

export function podVolumesDir(rootDir: string, uid: string): string {
  return join(rootDir, 'pods', uid, 'volumes');
}

export function emptyDirPath(rootDir: string, uid: string, name: string): string {
  return join(podVolumesDir(rootDir, uid), 'kubernetes.io~empty-dir', name);
}

/** The source field of a volume (`emptyDir`, `hostPath`, `configMap`, …). */
export function volumeSource(volume: Volume): string {
  return Object.keys(volume).find((k) => k !== 'name') ?? '(none)';
}

export interface VolumeManagerOptions {
  /** Mount a tmpfs for `emptyDir.medium: Memory` (default: running as root on Linux). */
  tmpfs?: boolean;
  /** Runs mount(8) / umount(8); injectable for tests. */
  run?: (command: string, args: string[]) => Promise<void>;
  /** Mount points of this mount namespace (default: from /proc/self/mountinfo). */
  mountPoints?: () => Promise<string[]>;
}

const execFileAsync = promisify(execFile);

/** Mount points from /proc/self/mountinfo (field 5, octal escapes such as `\040` decoded). */
export async function procMountPoints(): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  return text
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => !!p)
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
}

export class VolumeManager {
  private readonly tmpfs: boolean;
  private readonly run: (command: string, args: string[]) => Promise<void>;
  private readonly mountPoints: () => Promise<string[]>;

  constructor(
    private readonly rootDir: string,
    options: VolumeManagerOptions = {},
  ) {
    this.tmpfs = options.tmpfs ?? (process.platform === 'linux' && process.getuid?.() === 0);
    this.run =
      options.run ??
      (async (command, args) => {
        try {
          await execFileAsync(command, args, { timeout: 30_000 });
        } catch (err) {
          const e = err as { stderr?: string; message?: string };
          throw new VolumeError(`${command} ${args.join(' ')}: ${(e.stderr || e.message || '').trim()}`);
        }
      });
    this.mountPoints = options.mountPoints ?? procMountPoints;
  }

  /** Makes every volume of the pod ready on the host; returns host paths by volume name. */
  async setUp(pod: Pod): Promise<Map<string, string>> {
    const uid = pod.metadata!.uid!;
    const paths = new Map<string, string>();
    for (const volume of pod.spec?.volumes ?? []) {
      const source = volumeSource(volume);
      if (!supportedSources.includes(source)) {
        throw new VolumeError(
          `volume "${volume.name}": source "${source}" is not supported by nodelet yet (supported: ${supportedSources.join(', ')})`,
        );
      }
      if (volume.emptyDir) {
        const dir = emptyDirPath(this.rootDir, uid, volume.name);
        await mkdir(dir, { recursive: true, mode: 0o777 });
        if (volume.emptyDir.medium === 'Memory' && this.tmpfs) await this.mountTmpfs(volume, dir);
        paths.set(volume.name, dir);
      } else if (volume.hostPath) {
        await checkHostPath(volume.name, volume.hostPath.path, volume.hostPath.type ?? '');
        paths.set(volume.name, volume.hostPath.path);
      }
    }
    return paths;
  }

  /** Unmounts the pod's tmpfs volumes and removes its volume directories (emptyDir content goes with the pod). */
  async tearDown(uid: string): Promise<void> {
    const podDir = join(this.rootDir, 'pods', uid);
    if (this.tmpfs) {
      const mounted = (await this.mountPoints()).filter((p) => p.startsWith(podDir + '/'));
      // Deepest first; a failed umount throws, so the pod's cleanup is retried rather than rm-ing into a mount.
      for (const point of mounted.sort((a, b) => b.length - a.length)) await this.run('umount', [point]);
    }
    await rm(podDir, { recursive: true, force: true });
  }

  /** Mounts a tmpfs on an emptyDir of medium Memory, unless one is already there (every sync calls setUp). */
  private async mountTmpfs(volume: Volume, dir: string): Promise<void> {
    if ((await this.mountPoints()).includes(dir)) return;
    const limit = volume.emptyDir?.sizeLimit;
    let size: number | undefined;
    try {
      size = limit !== undefined ? quantityValue(limit) : undefined;
    } catch (err) {
      throw new VolumeError(`volume "${volume.name}": emptyDir sizeLimit: ${(err as Error).message}`);
    }
    const options = size && size > 0 ? ['-o', `size=${size}`] : [];
    await this.run('mount', ['-t', 'tmpfs', ...options, 'tmpfs', dir]);
  }
}

/** Upstream hostPath type checks. */
async function checkHostPath(volume: string, path: string, type: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  const fail = (what: string) => {
    throw new VolumeError(`volume "${volume}": hostPath type check failed: ${path} ${what}`);
  };
  switch (type) {
    case '':
      return;
    case 'DirectoryOrCreate':
      if (!info) await mkdir(path, { recursive: true, mode: 0o755 });
      else if (!info.isDirectory()) fail('is not a directory');
      return;
    case 'Directory':
      if (!info?.isDirectory()) fail('is not a directory');
      return;
    case 'FileOrCreate':
      if (!info) {
        const { writeFile } = await import('node:fs/promises');
        await writeFile(path, '', { mode: 0o644 });
      } else if (!info.isFile()) fail('is not a file');
      return;
    case 'File':
      if (!info?.isFile()) fail('is not a file');
      return;
    case 'Socket':
      if (!info?.isSocket()) fail('is not a socket file');
      return;
    case 'CharDevice':
      if (!info?.isCharacterDevice()) fail('is not a character device');
      return;
    case 'BlockDevice':
      if (!info?.isBlockDevice()) fail('is not a block device');
      return;
    default:
      fail(`has an unknown hostPath type "${type}"`);
  }
}

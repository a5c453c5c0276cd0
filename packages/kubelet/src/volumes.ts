import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod, Volume } from '@nodelet/api';

/**
 * In-tree volumes the standalone kubelet supports: emptyDir (a per-pod directory under the kubelet root,
 * tmpfs for `medium: Memory` on real runtimes) and hostPath (with its `type` checks). Other volume
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

export class VolumeManager {
  constructor(private readonly rootDir: string) {}

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
        paths.set(volume.name, dir);
      } else if (volume.hostPath) {
        await checkHostPath(volume.name, volume.hostPath.path, volume.hostPath.type ?? '');
        paths.set(volume.name, volume.hostPath.path);
      }
    }
    return paths;
  }

  /** Removes the pod's volume directories (emptyDir content goes with the pod). */
  async tearDown(uid: string): Promise<void> {
    await rm(join(this.rootDir, 'pods', uid), { recursive: true, force: true });
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

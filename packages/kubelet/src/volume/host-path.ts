import type { Stats } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import type { VolumeMountContext, VolumePlugin } from '@nodelet/volume';
import { VolumeError } from './volume-error.js';

/**
 * hostPath (upstream pkg/volume/hostpath): the host's own path, checked against `type` (`Directory`,
 * `DirectoryOrCreate`, `File`, `FileOrCreate`, `Socket`, `CharDevice`, `BlockDevice`, or none).
 */
export class HostPathPlugin implements VolumePlugin {
  readonly name = 'kubernetes.io/host-path';
  readonly source = 'hostPath';

  async setUp(ctx: VolumeMountContext): Promise<string> {
    const { path, type } = ctx.volume.hostPath!;
    await checkHostPath(path, type ?? '');
    return path;
  }
}

/** What each hostPath `type` requires of the path, and upstream's words when it is not so. */
const typeChecks: Record<string, [(info: Stats) => boolean, string]> = {
  Directory: [(i) => i.isDirectory(), 'is not a directory'],
  File: [(i) => i.isFile(), 'is not a file'],
  Socket: [(i) => i.isSocket(), 'is not a socket file'],
  CharDevice: [(i) => i.isCharacterDevice(), 'is not a character device'],
  BlockDevice: [(i) => i.isBlockDevice(), 'is not a block device'],
};

/** Upstream hostPath type checks; `DirectoryOrCreate` and `FileOrCreate` make what is missing. */
async function checkHostPath(path: string, type: string): Promise<void> {
  if (type === '') return;
  const info = await stat(path).catch(() => undefined);
  if (!info && type === 'DirectoryOrCreate') await mkdir(path, { recursive: true, mode: 0o755 });
  else if (!info && type === 'FileOrCreate') await writeFile(path, '', { mode: 0o644 });
  else {
    const check = typeChecks[type.replace(/OrCreate$/, '')];
    if (!check)
      throw new VolumeError(`hostPath type check failed: ${path} has an unknown hostPath type "${type}"`);
    if (!info || !check[0](info)) throw new VolumeError(`hostPath type check failed: ${path} ${check[1]}`);
  }
}

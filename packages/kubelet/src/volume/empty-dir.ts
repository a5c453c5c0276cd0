import { readdir } from 'node:fs/promises';
import { quantityValue } from '@nodelet/api';
import type { VolumeMountContext, VolumePlugin } from '@nodelet/volume';
import { applyFsGroup, ensureModeBits } from './fs-group.js';
import type { Mounter } from './mounter.js';
import { VolumeError } from './volume-error.js';

/**
 * emptyDir (upstream pkg/volume/emptydir): the volume's directory under the kubelet root, mode 0777 so
 * containers of any user can write; `medium: Memory` mounts a tmpfs on it (sized by `sizeLimit`) when
 * the kubelet can mount. With the pod's fsGroup the new directory is given the group (read-write).
 * Its content goes with the pod.
 */
export class EmptyDirPlugin implements VolumePlugin {
  readonly name = 'kubernetes.io/empty-dir';
  readonly source = 'emptyDir';

  constructor(private readonly mounter: Mounter) {}

  async setUp(ctx: VolumeMountContext): Promise<string> {
    const source = ctx.volume.emptyDir!;
    if (source.medium === 'Memory' && this.mounter.tmpfs) {
      await this.mounter.mountTmpfs(ctx.dir, sizeLimit(source.sizeLimit));
    } else if (source.medium && source.medium !== 'Memory') {
      throw new VolumeError(`emptyDir medium "${source.medium}" is not supported (supported: "", Memory)`);
    }
    await ensureModeBits(ctx.dir, 0o777);
    if (ctx.fsGroup !== undefined && (await readdir(ctx.dir)).length === 0) {
      await applyFsGroup(ctx, ctx.fsGroup, false);
    }
    return ctx.dir;
  }
}

function sizeLimit(limit: string | number | undefined): number | undefined {
  try {
    return limit !== undefined ? quantityValue(limit) : undefined;
  } catch (err) {
    throw new VolumeError(`emptyDir sizeLimit: ${(err as Error).message}`);
  }
}

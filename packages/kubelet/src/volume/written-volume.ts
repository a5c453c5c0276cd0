import { AtomicWriter, type Payload, type VolumeMountContext } from '@nodelet/volume';
import { podRef } from '../image-puller.js';
import { applyFsGroup, ensureModeBits } from './fs-group.js';
import type { Mounter } from './mounter.js';

/**
 * What configMap, secret, downwardAPI and projected volumes share (upstream wraps an emptyDir for
 * them): the directory — mode 0777 as upstream's emptyDir; for secret and projected, which hold
 * credentials, a tmpfs when the kubelet can mount one, else a plain directory of mode 0700 (said once
 * in the log) — and the files, through the atomic writer, given the pod's fsGroup (read-only) before
 * each new version is swapped in.
 */
export async function prepareVolumeDir(
  ctx: VolumeMountContext,
  memory: boolean,
  mounter: Mounter,
): Promise<void> {
  if (!memory) return ensureModeBits(ctx.dir, 0o777);
  if (mounter.tmpfs) {
    if (!ctx.refreshing) await mounter.mountTmpfs(ctx.dir);
    return ensureModeBits(ctx.dir, 0o777);
  }
  ctx.logger.once(
    'volumes-without-tmpfs',
    'info',
    'secret and projected volumes are plain directories of mode 0700 under the kubelet root, not tmpfs: the kubelet mounts no tmpfs (that needs root on Linux, and tmpfsVolumes not false)',
  );
  // The kubelet made the directory 0700; fsGroup's group bits, once added, stay.
}

/** Writes the volume's files if they changed; logs an update of a volume already in use. */
export async function writeVolumeFiles(ctx: VolumeMountContext, payload: Payload): Promise<void> {
  const writer = new AtomicWriter(ctx.dir, { now: () => ctx.clock.now() });
  const fsGroup = ctx.fsGroup;
  const setPerms = fsGroup === undefined ? undefined : () => applyFsGroup(ctx, fsGroup, true);
  const written = await writer.write(payload, setPerms);
  if (written && ctx.refreshing) {
    ctx.logger.info('Volume content updated', { pod: podRef(ctx.pod), volume: ctx.volume.name });
  }
}

import { chmod, stat } from 'node:fs/promises';
import { setVolumeOwnership, type VolumeMountContext } from '@nodelet/volume';
import { podRef } from '../image-puller.js';

/**
 * The pod's fsGroup on a volume's directory (read-only for the files the kubelet writes, read-write
 * for emptyDir); a chown or chmod that fails is logged, naming the pod and the volume, as upstream
 * does not fail the mount for it.
 */
export function applyFsGroup(ctx: VolumeMountContext, fsGroup: number, readOnly: boolean): Promise<void> {
  const policy = ctx.pod.spec?.securityContext?.fsGroupChangePolicy;
  return setVolumeOwnership(ctx.dir, fsGroup, {
    readOnly,
    ...(policy === 'OnRootMismatch' ? { changePolicy: policy } : {}),
    onError: (what, path, err) =>
      ctx.logger.warn(`fsGroup: ${what} failed`, {
        pod: podRef(ctx.pod),
        volume: ctx.volume.name,
        path,
        err: err.message,
      }),
  });
}

/** Adds the permission bits the directory lacks (what fsGroup added, setgid too, stays). */
export async function ensureModeBits(dir: string, bits: number): Promise<void> {
  const mode = (await stat(dir)).mode & 0o7777;
  if ((mode & bits) !== bits) await chmod(dir, mode | bits);
}

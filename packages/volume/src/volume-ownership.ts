import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * A pod's `fsGroup` on a volume (upstream pkg/volume SetVolumeOwnership): every file and directory
 * under `dir` is given the group, and the group the access its owner has — read and write (`0660`), or
 * read only (`0440`) for the volumes the kubelet writes for the pod (configMap, secret, downwardAPI,
 * projected) — and directories also search and the setgid bit, so files created in them later belong
 * to the group too. Symlinks are given the group only: chmod would follow them onto the files they
 * point at. Children first, the directory itself last.
 *
 * As upstream, a failed chown or chmod does not fail the volume; the first of each is reported.
 */
export interface OwnershipOptions {
  readOnly: boolean;
  /** Told of the first chown/chmod that failed (e.g. not running as root). */
  onError?: (what: string, path: string, err: Error) => void;
  /**
   * The pod's `fsGroupChangePolicy`: `OnRootMismatch` leaves the volume as it is when its root
   * directory already has the group, the permissions and setgid (upstream requiresPermissionChange) —
   * a large volume is not walked again at every mount. `Always` (the default) walks it.
   */
  changePolicy?: 'Always' | 'OnRootMismatch';
}

const rwMask = 0o660;
const roMask = 0o440;
const execMask = 0o110;
const setgid = 0o2000;

export async function setVolumeOwnership(
  dir: string,
  fsGroup: number | undefined,
  options: OwnershipOptions,
): Promise<void> {
  if (fsGroup === undefined) return;
  if (options.changePolicy === 'OnRootMismatch' && !(await needsChange(dir, fsGroup, options.readOnly)))
    return;
  const reported = new Set<string>();
  const report = (what: string, path: string, err: Error) => {
    if (reported.has(what)) return;
    reported.add(what);
    options.onError?.(what, path, err);
  };
  const visit = async (path: string): Promise<void> => {
    const info = await lstat(path);
    if (info.isDirectory()) {
      for (const name of await readdir(path)) await visit(join(path, name));
    }
    await lchown(path, -1, fsGroup).catch((err: Error) => report('chown', path, err));
    if (info.isSymbolicLink()) return;
    let mask = options.readOnly ? roMask : rwMask;
    if (info.isDirectory()) mask |= setgid | execMask;
    await chmod(path, (info.mode & 0o7777) | mask).catch((err: Error) => report('chmod', path, err));
  };
  await visit(dir);
}

/** Whether the root directory lacks the group, the permission bits or setgid that fsGroup gives. */
async function needsChange(dir: string, fsGroup: number, readOnly: boolean): Promise<boolean> {
  const info = await lstat(dir).catch(() => undefined);
  if (!info?.isDirectory() || info.gid !== fsGroup) return true;
  const wanted = (readOnly ? roMask : rwMask) | execMask;
  return (info.mode & wanted) !== wanted || (info.mode & setgid) === 0;
}

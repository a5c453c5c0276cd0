import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * How a host mounts its cgroups (libcontainer's IsCgroup2UnifiedMode / IsCgroup2HybridMode):
 *
 *   v2      the unified hierarchy at the mount point itself (cgroup2 on /sys/fs/cgroup)
 *   hybrid  v1 hierarchies per controller, and an unified one at `<mount point>/unified` holding no
 *           controller the kubelet uses (they are bound to v1): limits are written the v1 way
 *   v1      v1 hierarchies only
 */
export type CgroupMode = 'v1' | 'hybrid' | 'v2';

/**
 * The mode from a mount table (/proc/self/mountinfo): the file system last mounted on the mount
 * point, and on `<mount point>/unified`. Undefined when nothing is mounted on the mount point.
 */
export function cgroupModeFromMountinfo(mountinfo: string, mountPoint: string): CgroupMode | undefined {
  const types = new Map<string, string>();
  for (const line of mountinfo.split('\n')) {
    // `<id> <parent> <major:minor> <root> <mount point> <options> [optional…] - <type> <source> <super options>`
    const [before, after] = line.split(' - ');
    const fields = before?.split(' ');
    const type = after?.split(' ')[0];
    if (fields === undefined || fields.length < 5 || !type) continue;
    types.set(unescapeMountPath(fields[4]!), type); // a later mount hides an earlier one
  }
  const root = mountPoint.replace(/\/+$/, '') || '/';
  const top = types.get(root);
  if (top === undefined) return undefined;
  if (top === 'cgroup2') return 'v2';
  return types.get(join(root, 'unified')) === 'cgroup2' ? 'hybrid' : 'v1';
}

/** Mount tables write a space, tab, newline and backslash in a path as octal escapes (`\040`). */
function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/**
 * This host's mode at `mountPoint`: from the mount table, or — where the mount point is not one (a
 * directory standing in for it) — from the files there: `cgroup.controllers` exists only at the root of
 * a v2 hierarchy.
 */
export function detectCgroupMode(mountPoint: string, mountinfo = readMountinfo()): CgroupMode {
  const mode = mountinfo === undefined ? undefined : cgroupModeFromMountinfo(mountinfo, mountPoint);
  if (mode) return mode;
  if (existsSync(join(mountPoint, 'cgroup.controllers'))) return 'v2';
  return existsSync(join(mountPoint, 'unified', 'cgroup.controllers')) ? 'hybrid' : 'v1';
}

function readMountinfo(): string | undefined {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return undefined;
  }
}

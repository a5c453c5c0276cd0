import { chmod, mkdir, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import type { Container, VolumeMount } from '@nodelet/api';
import { Mount } from '@nodelet/cri';
import { expand } from '../expansion.js';
import { VolumeError } from '../volume/index.js';

/**
 * A container's volume mounts (upstream makeMounts): each names a volume of the pod, optionally a
 * `subPath` inside it — or a `subPathExpr`, expanded from the container's environment — which must be
 * relative and stay inside the volume; a subPath that does not exist yet is made as a directory with
 * the volume's mode (so a runtime does not make it with its own), and one that leads out of the
 * volume through a symlink is refused. Volumes of API data (configMap, secret, downwardAPI, projected)
 * are mounted read-only whatever the mount says, as upstream.
 */
export async function containerMounts(
  container: Container,
  volumePaths: ReadonlyMap<string, string>,
  env: readonly [string, string][],
  readOnlyVolumes: ReadonlySet<string> = new Set(),
): Promise<Mount[]> {
  const mounts: Mount[] = [];
  for (const vm of container.volumeMounts ?? []) {
    const at = `container "${container.name}": volumeMount "${vm.name}"`;
    const volumePath = volumePaths.get(vm.name);
    if (!volumePath) throw new VolumeError(`${at} names no volume of the pod`);
    const subPath = vm.subPathExpr ? expandSubPathExpr(vm, env, at) : (vm.subPath ?? '');
    let hostPath = volumePath;
    if (subPath) {
      if (isAbsolute(subPath))
        throw new VolumeError(`${at}: error SubPath \`${subPath}\` must not be an absolute path`);
      if (subPath.split(/[/\\]/).includes('..')) {
        throw new VolumeError(`${at}: unable to provision SubPath \`${subPath}\`: must not contain '..'`);
      }
      hostPath = await prepareSubPath(volumePath, subPath, at);
    }
    mounts.push(
      Mount.fromPartial({
        containerPath: vm.mountPath,
        hostPath,
        readonly: !!vm.readOnly || readOnlyVolumes.has(vm.name),
      }),
    );
  }
  return mounts;
}

/**
 * `subPathExpr` with `$(VAR)` from the environment (upstream ExpandContainerVolumeMounts): a variable
 * that is not set, or is empty, is an error, as is what is left of an unterminated `$(`.
 */
export function expandSubPathExpr(vm: VolumeMount, env: readonly [string, string][], at: string): string {
  const vars = new Map(env);
  const missing = new Set<string>();
  const expanded = expand(vm.subPathExpr!, (name) => {
    const value = vars.get(name);
    if (!value) missing.add(name);
    return value ?? '';
  });
  if (missing.size > 0) {
    throw new VolumeError(
      `${at}: subPathExpr "${vm.subPathExpr}": missing value for ${[...missing].sort().join(', ')}`,
    );
  }
  if (expanded.includes('$(')) {
    throw new VolumeError(
      `${at}: subPathExpr "${vm.subPathExpr}" expands to "${expanded}", which has an unterminated "$("`,
    );
  }
  return expanded;
}

/**
 * The subPath's host path, made when missing. What exists of it must resolve inside the volume (checked
 * before anything is made, so a symlink in the volume cannot have the kubelet make directories elsewhere).
 */
async function prepareSubPath(volumePath: string, subPath: string, at: string): Promise<string> {
  const hostPath = join(volumePath, subPath);
  const volume = await stat(volumePath).catch(() => undefined);
  if (!volume) return hostPath; // the runtime reports a volume that is not there
  const root = await realpath(volumePath);
  let existing = hostPath;
  while (existing !== volumePath && !(await stat(existing).catch(() => undefined)))
    existing = dirname(existing);
  const target = await realpath(existing);
  const inside = relative(root, target);
  if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    throw new VolumeError(`${at}: subPath \`${subPath}\` leads outside the volume (to ${target})`);
  }
  if (existing !== hostPath) {
    const mode = volume.mode & 0o7777;
    await mkdir(hostPath, { recursive: true, mode });
    // As upstream: the volume's mode exactly, not what the umask left of it (a container user may need g+w).
    for (let dir = hostPath; dir !== existing; dir = dirname(dir)) await chmod(dir, mode);
  }
  return hostPath;
}

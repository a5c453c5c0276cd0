import type { Pod } from '@nodelet/api';
import { qosClass } from '../pod-status.js';

/**
 * Cgroup names as upstream's container manager has them (pkg/kubelet/cm/cgroup_manager_linux.go): a name
 * is a list of components under the cgroup root — `[kubepods, burstable, pod<uid>]` — written for the
 * driver that owns the hierarchy:
 *
 *   cgroupfs   /kubepods/burstable/pod<uid>
 *   systemd    /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _ for ->.slice
 *
 * Guaranteed pods sit directly under `kubepods`; Burstable and BestEffort pods under their QoS cgroup.
 */
export type CgroupName = readonly string[];

export type CgroupDriver = 'cgroupfs' | 'systemd';

export const KUBEPODS = 'kubepods';
export const POD_PREFIX = 'pod';

/** `cgroupRoot` (`/`, `/nodelet`) as a name: its components. */
export function rootName(cgroupRoot: string): CgroupName {
  return cgroupRoot.split('/').filter((p) => p !== '');
}

/** The QoS cgroup a pod of this class goes in: kubepods itself for Guaranteed. */
export function qosCgroupName(root: CgroupName, qos: 'Guaranteed' | 'Burstable' | 'BestEffort'): CgroupName {
  const top = [...root, KUBEPODS];
  return qos === 'Guaranteed' ? top : [...top, qos.toLowerCase()];
}

/** The pod's own cgroup: `<qos cgroup>/pod<uid>`. */
export function podCgroupName(root: CgroupName, pod: Pod): CgroupName {
  return [...qosCgroupName(root, qosClass(pod)), `${POD_PREFIX}${pod.metadata!.uid!}`];
}

/** The name as a cgroupfs path: `/a/b/c`; `/` for the root. */
export function toCgroupfs(name: CgroupName): string {
  return `/${name.join('/')}`;
}

/**
 * The name as systemd's slice path (upstream ToSystemd): empty components dropped, each escaped (a `-`
 * separates slice levels, so one inside a component becomes `_`), joined with `-` into one slice, and
 * that expanded into its parents' slices.
 */
export function toSystemd(name: CgroupName): string {
  const parts = name.filter((p) => p !== '').map((p) => p.replaceAll('-', '_'));
  if (parts.length === 0) return '/';
  return expandSlice(`${parts.join('-')}${SLICE}`);
}

const SLICE = '.slice';

/**
 * A slice's path in the hierarchy (libcontainer's systemd ExpandSlice): `a-b-c.slice` lives at
 * `/a.slice/a-b.slice/a-b-c.slice`; `-.slice` is the root. A name without the suffix, with a `/`, or
 * with an empty level (`a--b`, `-a`, `a-`) is not a slice.
 */
export function expandSlice(slice: string): string {
  if (!slice.endsWith(SLICE) || slice.includes('/')) throw new Error(`invalid slice name: ${slice}`);
  const name = slice.slice(0, -SLICE.length);
  if (name === '-') return '/';
  let path = '';
  let prefix = '';
  for (const level of name.split('-')) {
    if (level === '') throw new Error(`invalid slice name: ${slice}`);
    path += `/${prefix}${level}${SLICE}`;
    prefix += `${level}-`;
  }
  return path;
}

/** The name in the driver's form: what the CRI runtime gets as the sandbox's `cgroup_parent`. */
export function cgroupParentName(driver: CgroupDriver, name: CgroupName): string {
  return driver === 'systemd' ? toSystemd(name) : toCgroupfs(name);
}

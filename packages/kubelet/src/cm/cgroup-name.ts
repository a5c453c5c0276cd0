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
 * The name as systemd's slice path (upstream ToSystemd + ExpandSlice): each component escaped (a `-`
 * separates slice levels, so it becomes `_`), joined with `-`, and expanded into its parent slices.
 */
export function toSystemd(name: CgroupName): string {
  if (name.length === 0) return '/';
  const parts = name.map((p) => p.replaceAll('-', '_'));
  let path = '';
  for (let i = 1; i <= parts.length; i++) path += `/${parts.slice(0, i).join('-')}.slice`;
  return path;
}

/** The name in the driver's form: what the CRI runtime gets as the sandbox's `cgroup_parent`. */
export function cgroupParentName(driver: CgroupDriver, name: CgroupName): string {
  return driver === 'systemd' ? toSystemd(name) : toCgroupfs(name);
}

/**
 * What a real host adds to the CRI stats: the node's file system (statfs of the kubelet's root dir),
 * the image file system (CRI ImageFsInfo), a pod's network from its sandbox's network namespace
 * (/proc/<sandbox pid>/net/dev, the pid from containerd's verbose PodSandboxStatus) when the runtime
 * does not report it, and the kubelet's own cgroup as the `kubelet` system container.
 */
import { readFileSync } from 'node:fs';
import { readdir, readFile, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { FsStats, ImageService, RuntimeService, ContainerSummaryStats, RlimitStats } from '@nodelet/cri';
import { cgroupLocation, readCgroupUsage, readNetDev, type NetDevCounters } from './cgroup-reader.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** statfs of `path` as the Summary API's FsStats. */
export async function fsStatsOf(path: string, nowMs: number): Promise<FsStats> {
  const s = await statfs(path);
  return {
    time: iso(nowMs),
    availableBytes: s.bavail * s.bsize,
    capacityBytes: s.blocks * s.bsize,
    usedBytes: (s.blocks - s.bfree) * s.bsize,
    inodesFree: s.ffree,
    inodes: s.files,
    inodesUsed: s.files - s.ffree,
  };
}

/** The image file system as the runtime reports it (first entry), with capacity from statfs. */
export async function imageFsStats(images: ImageService, nowMs: number): Promise<FsStats | undefined> {
  const { imageFilesystems } = await images.imageFsInfo({});
  const first = imageFilesystems[0];
  if (!first) return undefined;
  const stats: FsStats = {
    time: iso(nowMs),
    usedBytes: Number(first.usedBytes?.value ?? 0n),
    inodesUsed: Number(first.inodesUsed?.value ?? 0n),
  };
  const mountpoint = first.fsId?.mountpoint;
  if (mountpoint) {
    const fs = await fsStatsOf(mountpoint, nowMs).catch(() => undefined);
    if (fs) Object.assign(stats, { availableBytes: fs.availableBytes, capacityBytes: fs.capacityBytes });
  }
  return stats;
}

/**
 * Whether the runtime's image file system is another device than the one holding `rootDir` (upstream
 * HasDedicatedImageFs, as cAdvisor compares the devices of the root and image file systems). A runtime
 * that names no mount point shares the node's.
 */
export async function hasDedicatedImageFs(images: ImageService, rootDir: string): Promise<boolean> {
  const { imageFilesystems } = await images.imageFsInfo({});
  const mountpoint = imageFilesystems[0]?.fsId?.mountpoint;
  if (!mountpoint) return false;
  const [image, root] = await Promise.all([stat(mountpoint), stat(rootDir)]);
  return image.dev !== root.dev;
}

/** The pid of a sandbox from the runtime's verbose status (`info.info` JSON with `pid`, as containerd). */
export async function sandboxPid(runtime: RuntimeService, podSandboxId: string): Promise<number | undefined> {
  const { info } = await runtime.podSandboxStatus({ podSandboxId, verbose: true });
  const text = info['info'];
  if (!text) return undefined;
  try {
    const pid = (JSON.parse(text) as { pid?: unknown }).pid;
    return typeof pid === 'number' && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Sandbox pids remembered at most; past it the memory starts over (removed sandboxes go with it). */
const MAX_REMEMBERED_SANDBOX_PIDS = 4096;

/**
 * Interfaces of a sandbox's network namespace, or undefined when it cannot be read. The sandbox's pid
 * is asked of the runtime once per sandbox, not at every snapshot: containerd's verbose status is ~10
 * KiB of JSON (the whole OCI spec) and a snapshot reads every pod, so at 110 pods this was 110 status
 * calls every 10 s for the eviction manager, and as many per /stats/summary. The pid holds while the
 * sandbox is ready (its pause process); when its net/dev cannot be read any more the runtime is asked
 * again.
 */
export function sandboxNetDev(runtime: RuntimeService, procRoot = '/proc') {
  const pids = new Map<string, number>();
  return async (podSandboxId: string): Promise<NetDevCounters[] | undefined> => {
    const known = pids.get(podSandboxId);
    if (known !== undefined) {
      const counters = await readNetDev(known, procRoot);
      if (counters !== undefined) return counters;
      pids.delete(podSandboxId);
    }
    const pid = await sandboxPid(runtime, podSandboxId).catch(() => undefined);
    if (pid === undefined) return undefined;
    if (pids.size >= MAX_REMEMBERED_SANDBOX_PIDS) pids.clear();
    pids.set(podSandboxId, pid);
    return readNetDev(pid, procRoot);
  };
}

/** The cgroup path of this process for a v1 controller (or the v2 path, `0::`). */
export async function ownCgroupPath(controller: string, procRoot = '/proc'): Promise<string | undefined> {
  const text = await readFile(`${procRoot}/self/cgroup`, 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (controllers !== undefined && controllers.split(',').includes(controller)) return path;
  }
  return undefined;
}

/** The kubelet's own usage as the `kubelet` system container (v1 controllers; hybrid hosts have them). */
export async function kubeletSystemContainer(
  startMs: number,
  nowMs: number,
  cgroupRoot = '/sys/fs/cgroup',
): Promise<ContainerSummaryStats | undefined> {
  const [cpuPath, memPath] = await Promise.all([ownCgroupPath('cpuacct'), ownCgroupPath('memory')]);
  if (cpuPath === undefined || memPath === undefined) return undefined;
  const cpu = await readCgroupUsage(cgroupLocation(1, cgroupRoot, cpuPath));
  const mem = await readCgroupUsage(cgroupLocation(1, cgroupRoot, memPath));
  return {
    name: 'kubelet',
    startTime: iso(startMs),
    cpu: {
      time: iso(nowMs),
      ...(cpu.cpuUsageNs !== undefined ? { usageCoreNanoSeconds: cpu.cpuUsageNs } : {}),
    },
    memory: {
      time: iso(nowMs),
      ...(mem.memoryUsageBytes !== undefined ? { usageBytes: mem.memoryUsageBytes } : {}),
      ...(mem.memoryWorkingSetBytes !== undefined ? { workingSetBytes: mem.memoryWorkingSetBytes } : {}),
      ...(mem.memoryRssBytes !== undefined ? { rssBytes: mem.memoryRssBytes } : {}),
    },
  };
}

/** Bytes under `<podLogsDir>/<ns>_<name>_<uid>/<container>/` (every attempt's log), as upstream counts logs. */
export function containerLogsUsage(podLogsDir: string) {
  return async (pod: { name: string; namespace: string; uid: string }, container: string) => {
    const dir = join(podLogsDir, `${pod.namespace}_${pod.name}_${pod.uid}`, container);
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => undefined);
    if (!entries) return undefined;
    let bytes = 0;
    for (const e of entries) {
      if (!e.isFile()) continue;
      bytes += (await stat(join(dir, e.name)).catch(() => undefined))?.size ?? 0;
    }
    return bytes;
  };
}

/**
 * The node's process ids (upstream's rlimit stats, the `pid.available` signal): `pid_max`, and the
 * kernel's count of scheduling entities now (the total of /proc/loadavg's running/total, as sysinfo's
 * procs). Undefined where /proc cannot be read.
 */
export function hostRlimit(nowMs: number, procRoot = '/proc'): RlimitStats | undefined {
  try {
    const maxpid = Number(readFileSync(`${procRoot}/sys/kernel/pid_max`, 'utf8').trim());
    const total = /\d+\/(\d+)/.exec(readFileSync(`${procRoot}/loadavg`, 'utf8'))?.[1];
    if (!(maxpid > 0) || total === undefined) return undefined;
    return { time: iso(nowMs), maxpid, curproc: Number(total) };
  } catch {
    return undefined;
  }
}

/**
 * Reads CPU and memory usage of one cgroup, v1 or v2, as cAdvisor does:
 *
 *   v2  cpu.stat usage_usec; memory.current, memory.stat (inactive_file, anon, file, pgfault, pgmajfault)
 *   v1  cpuacct/cpuacct.usage (ns); memory/memory.usage_in_bytes, memory.stat (total_inactive_file,
 *       total_rss, total_cache, total_pgfault, total_pgmajfault)
 *
 * Working set = usage − inactive_file (never below 0). A file that is absent (a controller not
 * enabled, as on a hybrid host's unified tree) leaves its fields undefined. The v2 root cgroup has no
 * memory.current: its usage is anon + file of its memory.stat, as runc's cgroup library gives cAdvisor
 * (the sum v1's root usage_in_bytes reports).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface CgroupUsage {
  /** Cumulative CPU time, nanoseconds. */
  cpuUsageNs?: number;
  memoryUsageBytes?: number;
  memoryWorkingSetBytes?: number;
  memoryRssBytes?: number;
  memoryCacheBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

/** Where a cgroup's files are: one directory (v2), or one per controller (v1). */
export type CgroupLocation =
  { version: 2; dir: string } | { version: 1; cpuacctDir: string; memoryDir: string };

/** The location of the cgroup at `path` (as in /proc/<pid>/cgroup) under a mount root. */
export function cgroupLocation(version: 1 | 2, mountRoot: string, path: string): CgroupLocation {
  if (version === 2) return { version, dir: join(mountRoot, path) };
  return {
    version,
    cpuacctDir: join(mountRoot, 'cpuacct', path),
    memoryDir: join(mountRoot, 'memory', path),
  };
}

async function readText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** `key value` lines (memory.stat, cpu.stat) as numbers. */
export function parseFlatKeyed(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value !== undefined && /^\d+$/.test(value)) values.set(key, Number(value));
  }
  return values;
}

function single(text: string | undefined): number | undefined {
  const value = text?.trim();
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
}

function workingSet(usage: number | undefined, inactiveFile: number | undefined): number | undefined {
  if (usage === undefined) return undefined;
  return Math.max(0, usage - (inactiveFile ?? 0));
}

/** The usage of a v2 cgroup without memory.current (the root): anon + file, when memory.stat has both. */
function rootUsage(memStat: Map<string, number>): number | undefined {
  const anon = memStat.get('anon');
  const file = memStat.get('file');
  return anon === undefined || file === undefined ? undefined : anon + file;
}

export async function readCgroupUsage(location: CgroupLocation): Promise<CgroupUsage> {
  if (location.version === 2) {
    const [cpuStat, current, memStat] = await Promise.all([
      readText(join(location.dir, 'cpu.stat')),
      readText(join(location.dir, 'memory.current')),
      readText(join(location.dir, 'memory.stat')),
    ]);
    const cpu = cpuStat === undefined ? undefined : parseFlatKeyed(cpuStat).get('usage_usec');
    const mem = memStat === undefined ? new Map<string, number>() : parseFlatKeyed(memStat);
    const usage = single(current) ?? rootUsage(mem);
    return {
      cpuUsageNs: cpu === undefined ? undefined : cpu * 1000,
      memoryUsageBytes: usage,
      memoryWorkingSetBytes: workingSet(usage, mem.get('inactive_file')),
      memoryRssBytes: mem.get('anon'),
      memoryCacheBytes: mem.get('file'),
      pageFaults: mem.get('pgfault'),
      majorPageFaults: mem.get('pgmajfault'),
    };
  }
  const [cpu, usageText, memStat] = await Promise.all([
    readText(join(location.cpuacctDir, 'cpuacct.usage')),
    readText(join(location.memoryDir, 'memory.usage_in_bytes')),
    readText(join(location.memoryDir, 'memory.stat')),
  ]);
  const mem = memStat === undefined ? new Map<string, number>() : parseFlatKeyed(memStat);
  const usage = single(usageText);
  return {
    cpuUsageNs: single(cpu),
    memoryUsageBytes: usage,
    memoryWorkingSetBytes: workingSet(usage, mem.get('total_inactive_file')),
    memoryRssBytes: mem.get('total_rss'),
    memoryCacheBytes: mem.get('total_cache'),
    pageFaults: mem.get('total_pgfault'),
    majorPageFaults: mem.get('total_pgmajfault'),
  };
}

/** Per-interface counters of /proc/<pid>/net/dev (the pod's network namespace), loopback left out. */
export interface NetDevCounters {
  name: string;
  rxBytes: number;
  rxErrors: number;
  txBytes: number;
  txErrors: number;
}

export function parseNetDev(text: string): NetDevCounters[] {
  const result: NetDevCounters[] = [];
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    const f = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map(Number);
    if (name === 'lo' || f.length < 16 || f.some((n) => !Number.isFinite(n))) continue;
    result.push({ name, rxBytes: f[0]!, rxErrors: f[2]!, txBytes: f[8]!, txErrors: f[10]! });
  }
  return result;
}

export async function readNetDev(pid: number, procRoot = '/proc'): Promise<NetDevCounters[] | undefined> {
  const text = await readText(join(procRoot, String(pid), 'net', 'dev'));
  return text === undefined ? undefined : parseNetDev(text);
}

/** /proc/meminfo MemTotal in bytes. */
export async function readMemTotal(procRoot = '/proc'): Promise<number | undefined> {
  const text = await readText(join(procRoot, 'meminfo'));
  const kib = text && /^MemTotal:\s+(\d+) kB/m.exec(text)?.[1];
  return kib ? Number(kib) * 1024 : undefined;
}

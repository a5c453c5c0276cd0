/**
 * What a pod's emptyDir volumes hold on the node's disk (upstream's volume stats, `du` of the volume's
 * directory): bytes of regular files and the inodes used, for the eviction manager's disk ranking.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '@nodelet/api';
import type { VolumeStats } from '@nodelet/cri';
import { emptyDirPath } from '../volume/paths.js';

async function du(dir: string): Promise<{ bytes: number; inodes: number }> {
  let bytes = 0;
  let inodes = 1;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      const sub = await du(path);
      bytes += sub.bytes;
      inodes += sub.inodes;
    } else {
      inodes++;
      bytes += (await lstat(path).catch(() => undefined))?.size ?? 0;
    }
  }
  return { bytes, inodes };
}

/** The disk-backed emptyDir volumes of `pod` under `rootDir`, measured now. */
export async function emptyDirUsage(rootDir: string, pod: Pod, nowMs: number): Promise<VolumeStats[]> {
  const uid = pod.metadata?.uid ?? '';
  const out: VolumeStats[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    if (!v.emptyDir || v.emptyDir.medium === 'Memory') continue;
    const { bytes, inodes } = await du(emptyDirPath(rootDir, uid, v.name));
    out.push({ name: v.name, time: new Date(nowMs).toISOString(), usedBytes: bytes, inodesUsed: inodes });
  }
  return out;
}

/**
 * The node reader of a real host: the root cgroup's CPU and memory (v1 controllers when mounted, as
 * on a hybrid host; v2 otherwise) and MemTotal — what cAdvisor reports as the node (`id="/"`).
 */
import { existsSync } from 'node:fs';
import { cgroupLocation, readCgroupUsage, readMemTotal } from './cgroup-reader.js';
import type { HostNodeUsage } from '@nodelet/cri';

export function hostNodeReader(
  cgroupRoot = '/sys/fs/cgroup',
  procRoot = '/proc',
): () => Promise<HostNodeUsage> {
  const v1 = existsSync(`${cgroupRoot}/cpuacct/cpuacct.usage`);
  const location = v1 ? cgroupLocation(1, cgroupRoot, '/') : cgroupLocation(2, cgroupRoot, '/');
  return async () => {
    const [usage, memTotal] = await Promise.all([readCgroupUsage(location), readMemTotal(procRoot)]);
    const node: HostNodeUsage = { ...usage };
    if (memTotal !== undefined) node.memoryCapacityBytes = memTotal;
    return node;
  };
}

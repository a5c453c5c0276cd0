// Test support (not part of the package's API): a kubelet on this host's containerd with the pod
// cgroups under a cgroup root of the test's own, so kubelets of other tests on the host are not
// disturbed; its pods and cgroups removed when the test ends.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import type { Container, Pod } from '@nodelet/api';
import { createCriClient } from '@nodelet/cri';
import type { KubeletOptions } from '../kubelet.js';
import { containerdKubelet, hostNetworkPod, removeOwnPods } from '../test-containerd.js';
import { CgroupFs } from './cgroup-fs.js';
import type { CgroupsConfig } from './container-manager.js';

export const CGROUP_MOUNT = '/sys/fs/cgroup';

/** A host-network pod whose one container (`app`) sleeps for an hour, with these resources. */
export function sleepPod(name: string, uid: string, resources: Container['resources']): Pod {
  const pod = hostNetworkPod(name, uid, ['sleep', '3600']);
  pod.spec!.containers[0]!.resources = resources;
  return pod;
}

/** The pids of processes anywhere under a cgroup directory. */
export function pidsUnder(dir: string): number[] {
  if (!existsSync(dir)) return [];
  const own = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  const children = readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory());
  return [...own, ...children.flatMap((d) => pidsUnder(join(dir, d.name)))];
}

/** The pids under `dir` whose command is `command` (argv[0]). */
export function commandPidsUnder(dir: string, command: string): number[] {
  return pidsUnder(dir).filter((pid) =>
    readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(`${command}\0`),
  );
}

/**
 * Starts a kubelet on containerd at `endpoint` with `cgroups` (its root made the test's own) and the
 * other `options`; `uids` are the pods the test will run, removed at its end.
 */
export async function startCgroupsKubelet(
  t: ExecutionContext,
  endpoint: string,
  name: string,
  cgroups: Omit<CgroupsConfig, 'root'>,
  uids: string[],
  options: Partial<KubeletOptions> = {},
) {
  const cgroupRoot = `/nodelet-test-${name}-${process.pid}`;
  const dir = mkdtempSync(join(tmpdir(), `nodelet-${name}-`));
  t.teardown(async () => {
    await new CgroupFs(CGROUP_MOUNT).remove(cgroupRoot).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  const client = createCriClient(endpoint, { timeoutMs: 60_000 });
  t.teardown(() => client.close());
  const { kubelet, source, sink } = containerdKubelet(client, dir, `${name}-test-${process.pid}`, {
    cgroups: { ...cgroups, root: cgroupRoot },
    ...options,
  });
  await kubelet.start();
  t.teardown(async () => {
    await removeOwnPods(kubelet, source, client, uids);
  });
  return { kubelet, source, sink, cgroupRoot };
}

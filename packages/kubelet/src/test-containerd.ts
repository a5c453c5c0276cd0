// Test support (not part of the package's API): what the kubelet's tests on a shared, real containerd
// need — polling in real time, and removing only their own pods when they end.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { CriClient } from '@nodelet/cri';
import { CriLabels } from '@nodelet/cri';
import type { Kubelet } from './kubelet.js';
import type { TestSource } from './test-harness.js';

/** Polls `probe` every 100 ms until it gives a value; throws after `timeoutMs`. */
export async function until<T>(what: string, probe: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Removes these pods through the kubelet (their source emptied), stops it, then removes whatever of
 * them is left straight through CRI (should the kubelet not have finished). Nothing else on the
 * containerd is touched.
 */
export async function removeOwnPods(
  kubelet: Kubelet,
  source: TestSource,
  client: CriClient,
  uids: string[],
): Promise<void> {
  source.set([]);
  await until(
    'the pods to be removed',
    () => (kubelet.podList().items.length === 0 ? true : undefined),
    60_000,
  ).catch(() => undefined);
  await kubelet.stop();
  for (const uid of uids) {
    const { items } = await client.runtime.listPodSandbox({
      filter: { id: '', labelSelector: { [CriLabels.PodUID]: uid } },
    });
    for (const sb of items) {
      await client.runtime.stopPodSandbox({ podSandboxId: sb.id }).catch(() => undefined);
      await client.runtime.removePodSandbox({ podSandboxId: sb.id }).catch(() => undefined);
    }
  }
}

/**
 * Removes the image names (tags and digests) under `prefix` from containerd's `k8s.io` namespace, and
 * nothing else. Not CRI RemoveImage: that removes every name of the image, and an image pushed from the
 * local busybox build is the very image of the shared `docker.io/library/busybox:latest`.
 */
export async function removeImageNames(socket: string, prefix: string): Promise<void> {
  const ctr = (...args: string[]) =>
    promisify(execFile)('ctr', ['--address', socket, '--namespace', 'k8s.io', 'images', ...args]);
  const names = (await ctr('ls', '-q')).stdout.split('\n').filter((n) => n.startsWith(prefix));
  if (names.length > 0) await ctr('rm', ...names);
}

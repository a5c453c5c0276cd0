// Test support (not part of the package's API): what the kubelet's tests on a shared, real containerd
// need — polling in real time, and removing only their own pods when they end.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import type { Pod } from '@nodelet/api';
import type { CriClient } from '@nodelet/cri';
import { CriLabels } from '@nodelet/cri';
import { createLogger, EventBus, MemorySink, RealClock } from '@nodelet/kernel';
import { Kubelet, type KubeletOptions } from './kubelet.js';
import { TestSource } from './test-harness.js';

/** The busybox image the containerd tests run (imported by the containerd setup, never pulled). */
export const TEST_BUSYBOX = 'nodelet.test/busybox:1';

/**
 * A kubelet in real time on the containerd, as node `nodeName` (so it adopts no other test's pods), its
 * directories under `dir`, fed by a test source. Not started.
 */
export function containerdKubelet(
  client: CriClient,
  dir: string,
  nodeName: string,
  options: Partial<KubeletOptions> = {},
): { kubelet: Kubelet; source: TestSource; sink: MemorySink; clock: RealClock } {
  const clock = new RealClock();
  const sink = new MemorySink();
  const logger = createLogger({ sink: sink.sink });
  const source = new TestSource();
  const kubelet = new Kubelet(
    { runtime: client.runtime, images: client.image, bus: new EventBus(clock, logger), clock, logger },
    {
      nodeName,
      hostIP: '127.0.0.1',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      sources: [source],
      ...options,
    },
  );
  return { kubelet, source, sink, clock };
}

/** A host-network pod (no CNI needed) of one busybox container `app` running `command`. */
export function hostNetworkPod(
  name: string,
  uid: string,
  command: string[],
  spec: Partial<NonNullable<Pod['spec']>> = {},
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid },
    spec: {
      hostNetwork: true,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: TEST_BUSYBOX, imagePullPolicy: 'IfNotPresent', command }],
      ...spec,
    },
  };
}

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

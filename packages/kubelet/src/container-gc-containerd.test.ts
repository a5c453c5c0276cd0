import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import {
  ContainerConfig,
  ContainerState,
  createCriClient,
  CriLabels,
  NamespaceMode,
  PodSandboxConfig,
} from '@nodelet/cri';
import { createLogger, MemorySink, RealClock } from '@nodelet/kernel';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { ContainerGarbageCollector, NODE_NAME_LABEL } from './kuberuntime/index.js';
import { containerdKubelet, hostNetworkPod, removeOwnPods, TEST_BUSYBOX, until } from './test-containerd.js';

/**
 * Container garbage collection on a real containerd: a crash-looping container leaves at most one
 * dead container per pass; a deleted pod's sandbox, containers and log directory go in one pass. The
 * passes are driven directly, not waited for. Skipped (one line) without containerd, failed in CI.
 */
const containerd = await requireContainerd(test);

if (containerd) {
  const setup = (t: { teardown(fn: () => unknown): void }) => {
    const dir = mkdtempSync(join(tmpdir(), 'nodelet-container-gc-'));
    const client = createCriClient(containerd.endpoint, { timeoutMs: 60_000 });
    t.teardown(() => {
      client.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const containersOf = async (uid: string) =>
      (
        await client.runtime.listContainers({
          filter: { id: '', podSandboxId: '', labelSelector: { [CriLabels.PodUID]: uid } },
        })
      ).containers;
    return { dir, client, containersOf, nodeName: `container-gc-test-${process.pid}` };
  };

  test.serial(
    'containerd: a container that exits and restarts leaves at most one dead container after a pass',
    async (t) => {
      t.timeout(150_000);
      const { dir, client, containersOf, nodeName } = setup(t);
      const { kubelet, source } = containerdKubelet(client, dir, nodeName);
      const uid = `container-gc-${process.pid}-${Date.now()}`;
      const pod = hostNetworkPod('crash', uid, ['sh', '-c', 'exit 1'], { restartPolicy: 'Always' });
      await kubelet.start();
      t.teardown(() => removeOwnPods(kubelet, source, client, [uid]));
      source.set([pod]);
      // Starts at once, after the first death, then 10 s later (CrashLoopBackOff).
      const restarts = () => kubelet.podList().items[0]?.status?.containerStatuses?.[0]?.restartCount ?? 0;
      await until('two restarts', () => (restarts() >= 2 ? true : undefined), 90_000);
      t.true((await containersOf(uid)).length >= 3, 'three containers before the pass');

      await kubelet.containerGC.garbageCollect();
      const left = await containersOf(uid);
      // The newest stays (its restart count needs it) and at most one dead one before it; the newest may
      // have died since the pass.
      t.true(
        left.length <= 2,
        `containers left: ${left.map((c) => `${c.metadata?.attempt}:${c.state}`).join(', ')}`,
      );
      const newest = Math.max(...left.map((c) => c.metadata?.attempt ?? 0));
      t.true(newest >= 2, 'the newest attempt is kept');
      t.true(restarts() >= 2, 'the restart count survives the pass');
    },
  );

  test.serial(
    'containerd: a deleted pod’s sandbox, its containers and its log directory go in one pass',
    async (t) => {
      t.timeout(60_000);
      const { dir, client, containersOf, nodeName } = setup(t);
      const uid = `container-gc-deleted-${process.pid}-${Date.now()}`;
      const podLogsDir = join(dir, 'logs');
      const logDirectory = join(podLogsDir, `default_gone_${uid}`);
      const labels = {
        [CriLabels.PodName]: 'gone',
        [CriLabels.PodNamespace]: 'default',
        [CriLabels.PodUID]: uid,
        [NODE_NAME_LABEL]: nodeName,
      };
      const sandboxConfig = PodSandboxConfig.fromPartial({
        metadata: { name: 'gone', namespace: 'default', uid, attempt: 0 },
        logDirectory,
        labels,
        linux: { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } },
      });
      const { podSandboxId } = await client.runtime.runPodSandbox({
        config: sandboxConfig,
        runtimeHandler: '',
      });
      t.teardown(async () => {
        await client.runtime.stopPodSandbox({ podSandboxId }).catch(() => undefined);
        await client.runtime.removePodSandbox({ podSandboxId }).catch(() => undefined);
      });
      const { containerId } = await client.runtime.createContainer({
        podSandboxId,
        sandboxConfig,
        config: ContainerConfig.fromPartial({
          metadata: { name: 'app', attempt: 0 },
          image: { image: TEST_BUSYBOX },
          command: ['sh', '-c', 'echo bye'],
          labels: { ...labels, [CriLabels.ContainerName]: 'app' },
          logPath: 'app/0.log',
        }),
      });
      await client.runtime.startContainer({ containerId });
      for (const deadline = Date.now() + 30_000; ;) {
        const { status } = await client.runtime.containerStatus({ containerId, verbose: false });
        if (status?.state === ContainerState.CONTAINER_EXITED) break;
        if (Date.now() > deadline)
          throw new Error('timed out after 30000 ms waiting for the container to exit');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await client.runtime.stopPodSandbox({ podSandboxId });
      t.true(existsSync(join(logDirectory, 'app', '0.log')), 'the container logged');

      // The kubelet that ran it is gone (deleted while it was down): the pod is deleted to the collector.
      const logger = createLogger({ sink: new MemorySink().sink });
      const gc = new ContainerGarbageCollector({
        runtime: client.runtime,
        removeContainer: async (id) => void (await client.runtime.removeContainer({ containerId: id })),
        clock: new RealClock(),
        logger,
        nodeName,
        podLogsDir,
        pods: { isDeleted: (u) => u === uid, isTerminated: (u) => u === uid },
        allSourcesReady: () => true,
      });
      await gc.garbageCollect();
      t.deepEqual(await containersOf(uid), []);
      const { items } = await client.runtime.listPodSandbox({
        filter: { id: '', labelSelector: { [CriLabels.PodUID]: uid } },
      });
      t.deepEqual(items, []);
      t.false(existsSync(logDirectory), 'the log directory is gone');
    },
  );
}

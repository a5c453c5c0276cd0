// Test support (not part of the package's API): containers and sandboxes on the fake runtime under
// virtual time, each created at its own second, for the container garbage collector's tables.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerConfig, CriLabels, PodSandboxConfig } from '@nodelet/cri';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { ContainerGarbageCollector } from './container-gc.js';
import type { ContainerGCPolicy } from './container-gc-policy.js';
import { NODE_NAME_LABEL } from './sandbox.js';

export const SECOND = 1000;
export const HOUR = 3_600_000;
/** "Now" in each case: containers created at second N are N s after the clock's start, long before. */
export const NOW = 2 * HOUR;

export type State = 'exited' | 'running' | 'created';
export interface GCContainer {
  pod: string;
  name: string;
  attempt: number;
  /** Seconds after the start, or `now` (too young for a minimum age). */
  createdAt: number | 'now';
  state: State;
  sandboxAttempt?: number;
  /** The node whose kubelet made it (default node1, the collector's). */
  node?: string;
}
export interface GCSandbox {
  pod: string;
  attempt: number;
  ready: boolean;
  createdAt: number;
}
export interface PodStates {
  deleted: string[];
  terminated: string[];
}

export const c = (
  pod: string,
  name: string,
  attempt: number,
  createdAt: number | 'now',
  state: State = 'exited',
) => ({
  pod,
  name,
  attempt,
  createdAt,
  state,
});

/** Exited containers of attempts `newest` … 0, each created at second = its attempt. */
export const attempts = (pod: string, name: string, newest: number) =>
  Array.from({ length: newest + 1 }, (_, i) => c(pod, name, newest - i, newest - i));

export async function world(
  pods: PodStates,
  options: { allSourcesReady?: boolean; policy?: ContainerGCPolicy } = {},
) {
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const runtime = new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0, writeLogs: false } });
  runtime.loadImage('test-image');
  const podLogsDir = await mkdtemp(join(tmpdir(), 'nodelet-gc-logs-'));
  const gc = new ContainerGarbageCollector(
    {
      runtime,
      removeContainer: async (containerId) => void (await runtime.removeContainer({ containerId })),
      clock,
      logger,
      nodeName: 'node1',
      podLogsDir,
      pods: {
        isDeleted: (uid) => pods.deleted.includes(uid),
        isTerminated: (uid) => pods.terminated.includes(uid),
      },
      allSourcesReady: () => options.allSourcesReady ?? true,
    },
    options.policy,
  );
  const sandboxIds = new Map<string, string>();
  const runSandbox = async (pod: string, attempt: number, node = 'node1') => {
    const { podSandboxId } = await runtime.runPodSandbox({
      config: PodSandboxConfig.fromPartial({
        metadata: { name: pod, namespace: 'test-ns', uid: pod, attempt },
        logDirectory: join(podLogsDir, `test-ns_${pod}_${pod}`),
        labels: {
          [CriLabels.PodName]: pod,
          [CriLabels.PodNamespace]: 'test-ns',
          [CriLabels.PodUID]: pod,
          [NODE_NAME_LABEL]: node,
        },
      }),
      runtimeHandler: '',
    });
    sandboxIds.set(`${node}/${pod}/${attempt}`, podSandboxId);
    return podSandboxId;
  };
  const at = (ms: number) => clock.advance(Math.max(0, ms - clock.elapsed()));

  /** Creates the sandboxes, then the containers, each at its time; returns their ids in table order. */
  async function populate(sandboxes: GCSandbox[], containers: GCContainer[]) {
    const byTime = <T extends { createdAt: number | 'now' }>(list: T[]) =>
      list
        .map((item, index) => ({ item, index, ms: item.createdAt === 'now' ? NOW : item.createdAt * SECOND }))
        .sort((a, b) => a.ms - b.ms);
    const sbIds: string[] = [];
    for (const { item, index, ms } of byTime(sandboxes)) {
      await at(ms);
      sbIds[index] = await runSandbox(item.pod, item.attempt);
    }
    const ids: string[] = [];
    for (const { item, index, ms } of byTime(containers)) {
      await at(ms);
      const key = `${item.node ?? 'node1'}/${item.pod}/${item.sandboxAttempt ?? 0}`;
      const podSandboxId =
        sandboxIds.get(key) ?? (await runSandbox(item.pod, item.sandboxAttempt ?? 0, item.node));
      const sandboxConfig = runtime.sandboxConfig(podSandboxId);
      const { containerId } = await runtime.createContainer({
        podSandboxId,
        sandboxConfig,
        config: ContainerConfig.fromPartial({
          metadata: { name: item.name, attempt: item.attempt },
          image: { image: 'test-image' },
          labels: { ...sandboxConfig.labels, [CriLabels.ContainerName]: item.name },
          logPath: `${item.name}/${item.attempt}.log`,
        }),
      });
      if (item.state !== 'created') await runtime.startContainer({ containerId });
      if (item.state === 'exited') runtime.killContainer(containerId, 0);
      ids[index] = containerId;
    }
    for (const [i, sb] of sandboxes.entries()) {
      if (!sb.ready) await runtime.stopPodSandbox({ podSandboxId: sbIds[i]! });
    }
    await at(NOW);
    return { containerIds: ids, sandboxIds: sbIds };
  }
  const remaining = async (ids: string[], list: () => Promise<string[]>) => {
    const left = new Set(await list());
    return ids.flatMap((id, i) => (left.has(id) ? [i] : []));
  };
  return {
    clock,
    runtime,
    gc,
    podLogsDir,
    populate,
    remainingContainers: (ids: string[]) =>
      remaining(ids, async () => (await runtime.listContainers({})).containers.map((x) => x.id)),
    remainingSandboxes: (ids: string[]) =>
      remaining(ids, async () => (await runtime.listPodSandbox({})).items.map((x) => x.id)),
  };
}

export const sb = (pod: string, attempt: number, ready: boolean, createdAt = 0): GCSandbox => ({
  pod,
  attempt,
  ready,
  createdAt,
});

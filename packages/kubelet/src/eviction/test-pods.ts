// Test support: pods and their stats as upstream's eviction tests build them (podMaker, podStatsMaker).
import type { Pod } from '@nodelet/api';
import type { PodStats } from '@nodelet/cri';

export const Mi = 2 ** 20;
export const Gi = 2 ** 30;

/** A pod of one container `main` with these requests and limits (empty: BestEffort). */
export function pod(
  name: string,
  options: {
    priority?: number;
    requests?: Record<string, string>;
    limits?: Record<string, string>;
    grace?: number;
    volumes?: string[];
  } = {},
): Pod {
  const resources =
    options.requests || options.limits
      ? {
          ...(options.requests ? { requests: options.requests } : {}),
          ...(options.limits ? { limits: options.limits } : {}),
        }
      : undefined;
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: {
      ...(options.priority !== undefined ? { priority: options.priority } : {}),
      ...(options.grace !== undefined ? { terminationGracePeriodSeconds: options.grace } : {}),
      containers: [{ name: 'main', image: 'busybox', ...(resources ? { resources } : {}) }],
      volumes: (options.volumes ?? []).map((v) => ({ name: v, emptyDir: {} })),
    },
  };
}

/** Stats of a pod: working set, writable layer, logs and volumes (bytes), process count. */
export function stats(
  p: Pod,
  usage: {
    memory?: number;
    rootfs?: number;
    logs?: number;
    volumes?: Record<string, number>;
    processes?: number;
  } = {},
): PodStats {
  const time = '';
  return {
    podRef: { name: p.metadata!.name!, namespace: 'default', uid: p.metadata!.uid! },
    startTime: time,
    containers: [
      {
        name: 'main',
        startTime: time,
        memory: { time, workingSetBytes: usage.memory ?? 0 },
        rootfs: { time, usedBytes: usage.rootfs ?? 0, inodesUsed: 0 },
        logs: { time, usedBytes: usage.logs ?? 0, inodesUsed: 0 },
      },
    ],
    memory: { time, workingSetBytes: usage.memory ?? 0 },
    volume: Object.entries(usage.volumes ?? {}).map(([name, usedBytes]) => ({ name, time, usedBytes })),
    process_stats: { process_count: usage.processes ?? 0 },
  };
}

export const names = (pods: Pod[]) => pods.map((p) => p.metadata!.name);

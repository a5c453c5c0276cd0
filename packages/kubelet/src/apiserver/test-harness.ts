// Test support (not part of the package's API): a kubelet on the fake runtime, joined to the in-memory
// FakeKubeApi, under virtual time. Static pods come from a source the test controls.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '@nodelet/api';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { BehaviorSubject } from 'rxjs';
import { applyStaticPodDefaults, type PodSource } from '../config/index.js';
import { Kubelet, type KubeletOptions } from '../kubelet.js';
import { FakeKubeApi } from '@nodelet/client/testing';
import type { ApiServerOptions } from './node-agent.js';

export class StaticSource implements PodSource {
  readonly name = 'file' as const;
  private readonly subject = new BehaviorSubject<Pod[]>([]);
  readonly snapshots$ = this.subject.asObservable();
  originOf(pod: Pod): string {
    return `/manifests/${pod.metadata?.name}.yaml`;
  }
  start(): void {}
  stop(): void {}
  set(pods: Pod[]): void {
    this.subject.next(pods);
  }
}

export interface ClusterHarness {
  clock: VirtualClock;
  runtime: FakeRuntime;
  api: FakeKubeApi;
  kubelet: Kubelet;
  statics: StaticSource;
  logs: MemorySink;
  bus: EventBus;
  /** A new kubelet on the same runtime and API (a restart). */
  restart(): Promise<Kubelet>;
}

export const nodeName = 'node1';

export async function startCluster(
  options: {
    api?: FakeKubeApi;
    clock?: VirtualClock;
    runtime?: FakeRuntime;
    apiServer?: Partial<ApiServerOptions>;
    /** Kubelet options beside the harness's (a reservation, say). */
    kubelet?: Partial<KubeletOptions>;
    start?: boolean;
    /** Give the kubelet the fake runtime's simulated node stats: eviction and image GC run. */
    stats?: boolean;
  } = {},
): Promise<ClusterHarness> {
  const clock = options.clock ?? new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const bus = new EventBus(clock, logger);
  // Instant pulls: these tests time the kubelet, not a registry (the fake's default is 100 ms).
  const runtime = options.runtime ?? new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0 } });
  const api = options.api ?? new FakeKubeApi();
  api.now = () => clock.now();
  const statics = new StaticSource();
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-cluster-'));
  const make = () =>
    new Kubelet(
      {
        runtime,
        images: runtime,
        bus,
        clock,
        logger,
        ...(options.stats ? { stats: runtime.statsProvider() } : {}),
      },
      {
        nodeName,
        hostIP: '192.0.2.10',
        rootDir: join(dir, 'root'),
        tmpfsVolumes: false, // simulated pods: no tmpfs mounts on the host
        podLogsDir: join(dir, 'logs'),
        // A cluster's node knows its DNS service (without it every ClusterFirst pod warns MissingClusterDNS).
        clusterDNS: ['10.96.0.10'],
        clusterDomain: 'cluster.local',
        sources: [statics],
        ...options.kubelet,
        apiServer: {
          api,
          capacity: { cpu: '4', memory: '8Gi', pods: '110' },
          ...options.apiServer,
        },
      },
    );
  let kubelet = make();
  const h: ClusterHarness = {
    clock,
    runtime,
    api,
    kubelet,
    statics,
    logs,
    bus,
    async restart() {
      await h.kubelet.stop();
      kubelet = make();
      h.kubelet = kubelet;
      await kubelet.start();
      return kubelet;
    },
  };
  if (options.start !== false) await kubelet.start();
  return h;
}

/** A pod as a user creates it in the API, bound to the node. */
export function apiPod(name: string, spec: Partial<NonNullable<Pod['spec']>> = {}, annotations = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', annotations },
    spec: {
      nodeName,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'main', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent' }],
      ...spec,
    },
  };
}

/** A static pod as the file source gives it (static identity: hashed UID, `-<node>` name). */
export function staticPod(name: string, spec: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  return applyStaticPodDefaults(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'kube-system' },
      spec: {
        containers: [{ name: 'main', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent' }],
        ...spec,
      },
    },
    { source: 'file', origin: `/manifests/${name}.yaml`, nodeName, now: Date.UTC(2026, 0, 1) },
  );
}

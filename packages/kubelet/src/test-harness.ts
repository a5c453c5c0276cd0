// Test support (not part of the package's API): a kubelet on the fake runtime under virtual time, fed by
// a source the test controls.
import type { Pod } from '@nodelet/api';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime, type FakeRuntimeConfig } from '@nodelet/runtime-fake';
import { BehaviorSubject } from 'rxjs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kubelet, type KubeletOptions } from './kubelet.js';
import type { PodSource } from './config/index.js';
import type { ProbeHandler } from './prober/index.js';
import type { PodObjects } from '@nodelet/volume';
import { HostMounter } from './volume/index.js';
import type { PodNetworkSettings } from './network/index.js';

export class TestSource implements PodSource {
  readonly name = 'api' as const;
  private readonly subject = new BehaviorSubject<Pod[]>([]);
  readonly snapshots$ = this.subject.asObservable();
  originOf(): string {
    return 'test';
  }
  start(): void {}
  stop(): void {}
  set(pods: Pod[]): void {
    this.subject.next(pods);
  }
}

export interface Harness {
  clock: VirtualClock;
  runtime: FakeRuntime;
  kubelet: Kubelet;
  source: TestSource;
  logs: MemorySink;
  bus: EventBus;
  status(uid: string): NonNullable<Pod['status']>;
}

export async function startHarness(
  options: {
    hostIP?: string;
    probeHandlers?: ProbeHandler[];
    objects?: PodObjects;
    /** clusterDNS, clusterDomain, resolvConf (default: none, none, the host's /etc/resolv.conf). */
    network?: PodNetworkSettings;
    /**
     * Run the eviction manager and image GC on the fake runtime's simulated node stats, with these
     * kubelet options (`eviction`, `imageGC`, `evictionMonitoringPeriodMs`).
     */
    eviction?: Pick<KubeletOptions, 'eviction' | 'imageGC' | 'evictionMonitoringPeriodMs'>;
    /** Container garbage collection's policy and period (default: upstream's, every minute). */
    containerGC?: KubeletOptions['containerGC'];
    /** The fake runtime's configuration (default: instant pulls). */
    runtimeConfig?: FakeRuntimeConfig;
  } = {},
): Promise<Harness> {
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const bus = new EventBus(clock, logger);
  // Instant pulls: these tests time the kubelet, not a registry (the fake's default is 100 ms).
  const runtime = new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0, ...options.runtimeConfig } });
  const source = new TestSource();
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-kubelet-'));
  const kubelet = new Kubelet(
    {
      runtime,
      images: runtime,
      bus,
      clock,
      logger,
      probeHandlers: options.probeHandlers,
      objects: options.objects,
      // Memory-backed volumes are plain directories: a test mounts nothing on the host.
      mounter: new HostMounter({ tmpfs: false }),
      ...(options.eviction ? { stats: runtime.statsProvider() } : {}),
    },
    {
      nodeName: 'node1',
      hostIP: options.hostIP ?? '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      sources: [source],
      ...options.network,
      ...options.eviction,
      ...(options.containerGC ? { containerGC: options.containerGC } : {}),
    },
  );
  await kubelet.start();
  return {
    clock,
    runtime,
    kubelet,
    source,
    logs,
    bus,
    status: (uid) => kubelet.podList().items.find((p) => p.metadata?.uid === uid)?.status ?? {},
  };
}

/**
 * Records the virtual time of every StartContainer, by container name (restarts and backoff are read
 * from these).
 */
export function recordStarts(h: Harness): { name: string; at: number }[] {
  const starts: { name: string; at: number }[] = [];
  const created = new Map<string, string>();
  const create = h.runtime.createContainer.bind(h.runtime);
  const start = h.runtime.startContainer.bind(h.runtime);
  h.runtime.createContainer = async (req: Parameters<typeof create>[0]) => {
    const res = await create(req);
    created.set(res.containerId, req.config!.metadata!.name);
    return res;
  };
  h.runtime.startContainer = async (req: Parameters<typeof start>[0]) => {
    starts.push({ name: created.get(req.containerId) ?? '?', at: h.clock.elapsed() });
    return start(req);
  };
  return starts;
}

export function makePod(
  name: string,
  spec: Partial<NonNullable<Pod['spec']>>,
  annotations: Record<string, string> = {},
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `uid-${name}`, annotations },
    spec: {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'main', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent' }],
      ...spec,
    },
  };
}

/**
 * A kubelet (not started) on the fake runtime under virtual time, its directories removed at the
 * test's end, with these options over the defaults.
 */
export function fakeRuntimeKubelet(
  t: { teardown(fn: () => void): void },
  options: Partial<KubeletOptions> = {},
): Kubelet {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const runtime = new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0 } });
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-kubelet-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return new Kubelet(
    { runtime, images: runtime, bus: new EventBus(clock, logger), clock, logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      ...options,
    },
  );
}

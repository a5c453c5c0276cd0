/**
 * The kubelet's own Prometheus metrics (`/metrics`) and the prober's (`/metrics/probes`), with
 * upstream's names and labels (pkg/kubelet/metrics/metrics.go, pkg/kubelet/prober/prober_manager.go).
 * Each kubelet has its own registries — a hundred simulated kubelets in one process must not share
 * series. Everything is fed by observing the bus: producers know nothing of metrics.
 */
import type { EventBus } from '@nodelet/kernel';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Subscription } from 'rxjs';
import '../events.js';

/** Upstream's buckets for pod start duration (metrics.go, PodStartDuration). */
const POD_START_BUCKETS = [
  0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700,
  3600,
];
/** prometheus.DefBuckets, used by the PLEG and runtime operation histograms. */
const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const OPERATION_BUCKETS = [
  0.005, 0.0125, 0.03125, 0.078125, 0.1953125, 0.48828125, 1.220703125, 3.0517578125, 7.62939453125,
  19.073486328125, 47.6837158203125, 119.20928955078125, 298.0232238769531, 745.0580596923828,
];

export interface KubeletMetricsOptions {
  nodeName: string;
  /** Pod name and namespace by UID, for the probe series' labels. */
  podRef?: (uid: string) => { name: string; namespace: string } | undefined;
}

export class KubeletMetrics {
  /** `/metrics`. */
  readonly registry = new Registry();
  /** `/metrics/probes`. */
  readonly probesRegistry = new Registry();

  readonly podStartDuration: Histogram;
  readonly podWorkerDuration: Histogram<'operation_type'>;
  readonly plegRelistDuration: Histogram;
  readonly plegRelistInterval: Histogram;
  readonly runningPods: Gauge;
  readonly runningContainers: Gauge<'container_state'>;
  readonly runtimeOperations: Counter<'operation_type'>;
  readonly runtimeOperationsErrors: Counter<'operation_type'>;
  readonly runtimeOperationsDuration: Histogram<'operation_type'>;
  readonly evictions: Counter<'eviction_signal'>;
  readonly startedPods: Counter;
  readonly startedPodsErrors: Counter;
  readonly startedContainers: Counter<'container_type'>;
  readonly probeTotal: Counter<'probe_type' | 'result' | 'container' | 'pod' | 'namespace' | 'pod_uid'>;

  private readonly subscriptions: Subscription[] = [];
  /** First time each pod was seen (ms), until it first runs. */
  private readonly firstSeen = new Map<string, number>();
  private readonly started = new Set<string>();
  /** Container id → state as PLEG last saw it, and its pod. */
  private readonly containers = new Map<
    string,
    { podUid: string; state: 'running' | 'exited' | 'unknown' }
  >();
  private lastRelistStart?: number;

  get nodeName(): string {
    return this.options.nodeName;
  }

  constructor(
    bus: EventBus,
    private readonly options: KubeletMetricsOptions,
  ) {
    const registers = [this.registry];
    this.podStartDuration = new Histogram({
      name: 'kubelet_pod_start_duration_seconds',
      help: 'Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run',
      buckets: POD_START_BUCKETS,
      registers,
    });
    this.podWorkerDuration = new Histogram({
      name: 'kubelet_pod_worker_duration_seconds',
      help: 'Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
      labelNames: ['operation_type'],
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    this.plegRelistDuration = new Histogram({
      name: 'kubelet_pleg_relist_duration_seconds',
      help: 'Duration in seconds for relisting pods in PLEG.',
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    this.plegRelistInterval = new Histogram({
      name: 'kubelet_pleg_relist_interval_seconds',
      help: 'Interval in seconds between relisting in PLEG.',
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    const containers = this.containers;
    this.runningPods = new Gauge({
      name: 'kubelet_running_pods',
      help: 'Number of pods that have a running pod sandbox',
      registers,
      collect() {
        const pods = new Set<string>();
        for (const c of containers.values()) if (c.state === 'running') pods.add(c.podUid);
        this.set(pods.size);
      },
    });
    this.runningContainers = new Gauge({
      name: 'kubelet_running_containers',
      help: 'Number of containers currently running',
      labelNames: ['container_state'],
      registers,
      collect() {
        const counts = { running: 0, exited: 0, unknown: 0 };
        for (const c of containers.values()) counts[c.state]++;
        for (const [state, n] of Object.entries(counts)) this.set({ container_state: state }, n);
      },
    });
    this.runtimeOperations = new Counter({
      name: 'kubelet_runtime_operations_total',
      help: 'Cumulative number of runtime operations by operation type.',
      labelNames: ['operation_type'],
      registers,
    });
    this.runtimeOperationsErrors = new Counter({
      name: 'kubelet_runtime_operations_errors_total',
      help: 'Cumulative number of runtime operation errors by operation type.',
      labelNames: ['operation_type'],
      registers,
    });
    this.runtimeOperationsDuration = new Histogram({
      name: 'kubelet_runtime_operations_duration_seconds',
      help: 'Duration in seconds of runtime operations. Broken down by operation type.',
      labelNames: ['operation_type'],
      buckets: OPERATION_BUCKETS,
      registers,
    });
    this.evictions = new Counter({
      name: 'kubelet_evictions',
      help: 'Cumulative number of pod evictions by eviction signal',
      labelNames: ['eviction_signal'],
      registers,
    });
    this.startedPods = new Counter({
      name: 'kubelet_started_pods_total',
      help: 'Cumulative number of pods started',
      registers,
    });
    this.startedPodsErrors = new Counter({
      name: 'kubelet_started_pods_errors_total',
      help: 'Cumulative number of errors when starting pods',
      registers,
    });
    this.startedContainers = new Counter({
      name: 'kubelet_started_containers_total',
      help: 'Cumulative number of containers started',
      labelNames: ['container_type'],
      registers,
    });
    new Gauge({
      name: 'kubelet_node_name',
      help: "The node's name. The count is always 1.",
      labelNames: ['node'],
      registers,
    }).set({ node: options.nodeName }, 1);
    this.probeTotal = new Counter({
      name: 'prober_probe_total',
      help: 'Cumulative number of a liveness, readiness or startup probe for a container by result.',
      labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
      registers: [this.probesRegistry],
    });
    this.observe(bus);
  }

  private observe(bus: EventBus): void {
    const subscribe = this.subscriptions.push.bind(this.subscriptions);
    subscribe(
      bus.subscribe('[Source] Pod Added', (e) => {
        const uid = e.pod.metadata?.uid;
        if (uid && !this.firstSeen.has(uid) && !this.started.has(uid)) this.firstSeen.set(uid, e.at);
      }),
      bus.subscribe('[Status] Pod Status Changed', (e) => {
        if (e.status.phase !== 'Running' || this.started.has(e.podUid)) return;
        this.started.add(e.podUid);
        this.startedPods.inc();
        const seen = this.firstSeen.get(e.podUid);
        this.firstSeen.delete(e.podUid);
        if (seen !== undefined) this.podStartDuration.observe((e.at - seen) / 1000);
      }),
      bus.subscribe('[Source] Pod Removed', (e) => {
        const uid = e.pod.metadata?.uid ?? '';
        this.firstSeen.delete(uid);
        this.started.delete(uid);
      }),
      bus.subscribe('[PLEG] Container Started', (e) => {
        this.containers.set(e.containerId, { podUid: e.podUid, state: 'running' });
        this.startedContainers.inc({ container_type: 'container' });
      }),
      bus.subscribe('[PLEG] Container Died', (e) =>
        this.containers.set(e.containerId, { podUid: e.podUid, state: 'exited' }),
      ),
      bus.subscribe('[PLEG] Container Changed', (e) =>
        this.containers.set(e.containerId, { podUid: e.podUid, state: 'unknown' }),
      ),
      bus.subscribe('[PLEG] Container Removed', (e) => this.containers.delete(e.containerId)),
      bus.subscribe('[PLEG] Relisted', (e) => {
        this.plegRelistDuration.observe(e.durationMs / 1000);
        if (this.lastRelistStart !== undefined)
          this.plegRelistInterval.observe((e.startedAt - this.lastRelistStart) / 1000);
        this.lastRelistStart = e.startedAt;
      }),
      bus.subscribe('[Eviction] Eviction Started', (e) => this.evictions.inc({ eviction_signal: e.signal })),
      bus.subscribe('[Prober] Probe Result', (e) => {
        const ref = this.options.podRef?.(e.podUid);
        this.probeTotal.inc({
          probe_type: e.probe[0]!.toUpperCase() + e.probe.slice(1),
          result: e.result === 'success' ? 'successful' : e.result === 'failure' ? 'failed' : 'unknown',
          container: e.container,
          pod: ref?.name ?? '',
          namespace: ref?.namespace ?? '',
          pod_uid: e.podUid,
        });
      }),
    );
  }

  /** Records one sync of a pod worker (`create`, `update`, `sync`, `kill`). */
  observePodWorker(operation: string, seconds: number): void {
    this.podWorkerDuration.observe({ operation_type: operation }, seconds);
  }

  stop(): void {
    for (const s of this.subscriptions.splice(0)) s.unsubscribe();
  }
}

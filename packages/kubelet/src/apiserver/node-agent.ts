import { hostname as osHostname } from 'node:os';
import { join } from 'node:path';
import { ConfigSourceAnnotation, type Pod, type PodStatus } from '@nodelet/api';
import type { RuntimeService } from '@nodelet/cri';
import {
  type Clock,
  errorMessage,
  type EventBus,
  type Logger,
  type Loop,
  type StepResult,
} from '@nodelet/kernel';
import type { Subscription } from 'rxjs';
import type { PodConfig } from '../config/pod-config.js';
import { admitPod, type AdmitResult, rejectedStatus } from '../admission.js';
import { ApiPodSource } from './api-source.js';
import type { ClientNodeApi } from '@nodelet/client/client-node';
import { EventRecorder } from './event-recorder.js';
import { ApiError, type KubeApi, type Taint } from '@nodelet/client';
import { MirrorPodManager } from './mirror-pods.js';
import { NodeStatusController } from './node-controller.js';
import { NodeLeaseController } from './node-lease.js';
import type { ReservationConfig } from '../cm/node-allocatable.js';
import { allocatableOf, hostResources, type NodeIdentity } from './node-status.js';
import { PodEventSource } from './pod-event-source.js';
import { PodStatusSyncer } from './status-sync.js';

/**
 * How the kubelet joins a cluster (`--kubeconfig`, `--bootstrap-kubeconfig`, `--node-labels`,
 * `--register-with-taints`, …). With none of `kubeconfig`, `bootstrapKubeconfig` or `api`, the kubelet
 * runs standalone.
 */
export interface ApiServerOptions {
  /** The kubeconfig to reach the API server with (`--kubeconfig`). */
  kubeconfig?: string;
  /**
   * TLS bootstrap (`--bootstrap-kubeconfig`): when `kubeconfig` does not exist (or its certificate
   * expired), request a client certificate with these credentials and write `kubeconfig`.
   */
  bootstrapKubeconfig?: string;
  /** Where bootstrap writes the node's key and certificate (default `<rootDir>/pki`). */
  certDir?: string;
  /** An API client to use instead of a kubeconfig (tests, embedders, simulated nodes). */
  api?: KubeApi;
  /** `kubernetes.io/hostname` and the Hostname address (default: the node name). */
  hostname?: string;
  /** `--node-labels`. */
  nodeLabels?: Record<string, string>;
  /** `--register-with-taints`. */
  registerWithTaints?: Taint[];
  /** Node capacity instead of the host's (simulated nodes): `cpu`, `memory`, `pods`, … */
  capacity?: Record<string, string>;
  /** `maxPods` (110). */
  maxPods?: number;
  /** Client rate limit (kubeAPIQPS / kubeAPIBurst: 50 / 100). */
  kubeAPIQPS?: number;
  kubeAPIBurst?: number;
  /** Event rate limit (eventRecordQPS / eventBurst: 50 / 100). */
  eventRecordQPS?: number;
  eventBurst?: number;
  nodeStatusUpdateFrequencyMs?: number;
  nodeStatusReportFrequencyMs?: number;
  nodeLeaseDurationSeconds?: number;
  /** Port in the Node's `daemonEndpoints` (10250). */
  kubeletPort?: number;
}

/** What the node agent needs of the kubelet (so it stays a separate, testable piece). */
export interface NodeAgentHost {
  nodeName: string;
  hostIP: string;
  rootDir: string;
  runtime: RuntimeService;
  bus: EventBus;
  clock: Clock;
  logger: Logger;
  podConfig: PodConfig;
  /** PLEG health. */
  healthz(): { healthy: boolean; message: string };
  /** Whether the kubelet has a worker for this pod (running or terminating). */
  isActive(uid: string): boolean;
  /** Pods admitted and not finished (for admission). */
  activePods(): Pod[];
  /** The status the kubelet holds for each of its pods now. */
  podStatuses?(): { pod: Pod; status: PodStatus }[];
  /** systemReserved, kubeReserved, evictionHard: what allocatable holds back (default: the thresholds). */
  reservation?: ReservationConfig;
}

/**
 * The kubelet's connection to an API server: node registration and status, the node lease, the API pod
 * source, pod status sync and the final delete, mirror pods, and events. Everything runs in the
 * background: while the API server is away (or the kubeconfig is wrong), pods keep running and static
 * pods keep being managed; writes are retried with backoff and catch up when it returns.
 */
export class NodeAgent {
  api?: KubeApi;
  nodeStatus?: NodeStatusController;
  lease?: NodeLeaseController;
  readonly source?: ApiPodSource;
  syncer?: PodStatusSyncer;
  mirrors?: MirrorPodManager;
  recorder?: EventRecorder;
  readonly podEvents: PodEventSource;
  /** Pods the kubelet knows by UID (from the sources), for events and status targets. */
  private readonly pods = new Map<string, Pod>();
  private readonly subscriptions: Subscription[] = [];
  private running = false;
  private connecting?: Promise<StepResult>;
  private connectLoop?: Loop;
  private readonly identity: NodeIdentity;
  private ownedApi?: ClientNodeApi;
  private readonly abort = new AbortController();
  private lastError = '';

  constructor(
    private readonly host: NodeAgentHost,
    private readonly options: ApiServerOptions,
  ) {
    if (!options.api && !options.kubeconfig && !options.bootstrapKubeconfig) {
      throw new Error('an API server connection needs a kubeconfig (or a bootstrap kubeconfig)');
    }
    // Registered now, before any source sends: until the API's pods are listed, housekeeping removes
    // nothing — pods of a restarted kubelet are adopted, not killed.
    host.podConfig.register('api', () => 'api');
    const resources = options.capacity
      ? { capacity: { pods: String(options.maxPods ?? 110), ...options.capacity }, allocatable: {} }
      : hostResources({ maxPods: options.maxPods, rootDir: host.rootDir, reservation: host.reservation });
    this.identity = {
      nodeName: host.nodeName,
      hostname: options.hostname ?? host.nodeName ?? osHostname(),
      nodeIP: host.hostIP,
      labels: options.nodeLabels,
      taints: options.registerWithTaints,
      capacity: resources.capacity,
      allocatable: options.capacity
        ? allocatableOf(resources.capacity, host.reservation)
        : resources.allocatable,
      kubeletPort: options.kubeletPort,
    };
    this.podEvents = new PodEventSource(host.bus, (uid) => this.pods.get(uid));
  }

  /**
   * The port the kubelet API listens on, once its server has started (port 0 resolved): the Node's
   * `daemonEndpoints.kubeletEndpoint.Port`, which the API server dials for logs, exec and metrics.
   */
  setKubeletPort(port: number): void {
    if (this.identity.kubeletPort === port) return;
    this.identity.kubeletPort = port;
    this.nodeStatus?.kick();
  }

  /** The node's allocatable resources and labels, as admission sees them. */
  get node(): NodeIdentity {
    return this.identity;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const bus = this.host.bus;
    this.subscriptions.push(
      bus.subscribe(['[Source] Pod Added', '[Source] Pod Updated'], (e) => {
        this.pods.set(e.pod.metadata!.uid!, e.pod);
        if (e.source !== 'api') this.mirrors?.trigger();
      }),
      bus.subscribe('[Source] Pod Removed', (e) => {
        if (e.source !== 'api') this.mirrors?.trigger();
        // A pod that never ran (rejected by admission) gets no Pod Terminated: forget it now.
        const uid = e.pod.metadata!.uid!;
        if (!this.host.isActive(uid)) {
          this.pods.delete(uid);
          this.podEvents.forget(uid);
        }
      }),
      bus.subscribe('[PodWorker] Pod Terminated', (e) => this.pods.delete(e.podUid)),
      bus.subscribe('[Kubelet] Node Event', (e) => this.recorder?.node(e.eventType, e.reason, e.message)),
      bus.subscribe('[Kubelet] Pod Event', (e) => {
        const pod = this.pods.get(e.podUid) ?? {
          metadata: { uid: e.podUid, name: e.podName, namespace: e.namespace },
        };
        this.recorder?.pod(pod, e.eventType, e.reason, e.message, e.container);
      }),
    );
    this.podEvents.start();
    if (this.options.api) return this.startControllers(this.options.api);
    // Until a client is made (credentials bootstrapped, the kubeconfig readable and accepted), retry
    // with backoff, 1 s doubling to 30 s.
    this.connectLoop = this.host.clock.loop(() => (this.connecting = this.connect()), {
      period: 0,
      backoff: { initialMs: 1_000, maxMs: 30_000 },
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    this.abort.abort(new Error('the kubelet is stopping'));
    this.connectLoop?.stop();
    for (const s of this.subscriptions.splice(0)) s.unsubscribe();
    this.podEvents.stop();
    this.nodeStatus?.stop();
    this.lease?.stop();
    this.source?.stop();
    this.syncer?.stop();
    this.mirrors?.stop();
    this.recorder?.stop();
    this.ownedApi?.close();
    await this.connecting;
  }

  /**
   * The eviction manager's pressure conditions now (the others are False): written to the Node's status
   * at once, as upstream's eviction manager asks for a node status update.
   */
  setPressure(conditions: readonly ('MemoryPressure' | 'DiskPressure' | 'PIDPressure')[]): void {
    this.pressure = conditions;
    this.applyPressure();
  }

  private pressure: readonly ('MemoryPressure' | 'DiskPressure' | 'PIDPressure')[] = [];

  private applyPressure(): void {
    const status = this.nodeStatus;
    if (!status) return;
    for (const type of ['MemoryPressure', 'DiskPressure', 'PIDPressure'] as const)
      status.setPressure(type, this.pressure.includes(type));
    status.kick();
  }

  /** Whether the node is registered (its Node exists in the API). */
  get registered(): boolean {
    return !!this.nodeStatus?.registered;
  }

  /**
   * Admission of a new API pod. A static pod is always admitted (it is the node's own), but its
   * requests count against what API pods may use.
   */
  admit(pod: Pod): AdmitResult {
    if (pod.metadata?.annotations?.[ConfigSourceAnnotation] !== 'api') return { admit: true };
    const labels = { ...this.nodeStatus?.node?.metadata?.labels };
    const result = admitPod(pod, this.host.activePods(), {
      name: this.identity.nodeName,
      labels: Object.keys(labels).length > 0 ? labels : this.initialLabels(),
      allocatable: this.identity.allocatable,
      taints: this.nodeStatus?.node?.spec?.taints ?? this.identity.taints ?? [],
    });
    if (!result.admit) {
      this.host.logger.warn('Pod rejected by admission', {
        pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
        reason: result.reason,
        message: result.message,
      });
      this.host.bus.emit('[Kubelet] Pod Event', {
        podUid: pod.metadata!.uid!,
        podName: pod.metadata!.name!,
        namespace: pod.metadata!.namespace ?? 'default',
        eventType: 'Warning',
        reason: result.reason!,
        message: result.message!,
      });
    }
    return result;
  }

  /** The status of a pod admission rejected (upstream rejectPod). */
  static rejectedStatus(result: AdmitResult, previous: PodStatus | undefined): PodStatus {
    return rejectedStatus(result, previous);
  }

  private initialLabels(): Record<string, string> {
    return {
      'kubernetes.io/hostname': this.identity.hostname,
      'kubernetes.io/os': process.platform,
      ...this.identity.labels,
    };
  }

  /** One try to get an API client (bootstrapping credentials if needed); then every controller starts. */
  private async connect(): Promise<StepResult> {
    let api: KubeApi;
    try {
      api = await this.makeApi();
    } catch (err) {
      const message = errorMessage(err);
      if (message !== this.lastError) {
        this.host.logger.error(
          `Cannot connect to the API server: ${message}; pods keep running, retrying`,
          {},
        );
        this.lastError = message;
      }
      return false;
    }
    this.connectLoop?.stop();
    if (this.running) this.startControllers(api);
  }

  private async makeApi(): Promise<KubeApi> {
    // @kubernetes/client-node takes over a second to load: only a kubelet that joins a cluster pays it.
    const [{ ClientNodeApi, loadKubeConfig }, { bootstrapClientCredentials }] = await Promise.all([
      import('@nodelet/client/client-node'),
      import('./bootstrap.js'),
    ]);
    const { kubeconfig, bootstrapKubeconfig } = this.options;
    const clientOptions = {
      clock: this.host.clock,
      qps: this.options.kubeAPIQPS,
      burst: this.options.kubeAPIBurst,
    };
    let path = kubeconfig;
    if (bootstrapKubeconfig) {
      path = await bootstrapClientCredentials({
        nodeName: this.host.nodeName,
        kubeconfig: kubeconfig ?? join(this.host.rootDir, 'kubeconfig'),
        bootstrapKubeconfig,
        certDir: this.options.certDir ?? join(this.host.rootDir, 'pki'),
        clock: this.host.clock,
        logger: this.host.logger.child('bootstrap'),
        makeApi: (kc) => new ClientNodeApi(kc, clientOptions),
        signal: this.abort.signal,
      });
    }
    const api = new ClientNodeApi(loadKubeConfig(path!), clientOptions);
    await checkCredentials(api, this.host.nodeName, path!);
    this.ownedApi = api;
    return api;
  }

  private startControllers(api: KubeApi): void {
    const { host, options } = this;
    const { clock, bus } = host;
    const logger = host.logger;
    this.api = api;
    this.recorder = new EventRecorder(api, clock, logger.child('events'), {
      nodeName: host.nodeName,
      qps: options.eventRecordQPS,
      burst: options.eventBurst,
    });
    this.nodeStatus = new NodeStatusController(
      {
        api,
        runtime: host.runtime,
        clock,
        bus,
        logger: logger.child('node-status'),
        pleg: () => host.healthz(),
        recorder: this.recorder,
      },
      {
        identity: this.identity,
        statusUpdateFrequencyMs: options.nodeStatusUpdateFrequencyMs,
        statusReportFrequencyMs: options.nodeStatusReportFrequencyMs,
      },
    );
    this.applyPressure();
    this.lease = new NodeLeaseController(api, clock, logger.child('node-lease'), {
      nodeName: host.nodeName,
      leaseDurationSeconds: options.nodeLeaseDurationSeconds,
    });
    const source = new ApiPodSource(api, clock, logger.child('api-source'), { nodeName: host.nodeName });
    (this as { source?: ApiPodSource }).source = source;
    this.syncer = new PodStatusSyncer(
      api,
      {
        apiPod: (namespace, name) => source.get(namespace, name),
        isActive: (uid) => host.isActive(uid),
      },
      bus,
      clock,
      logger.child('status'),
    );
    this.mirrors = new MirrorPodManager(
      api,
      {
        staticPods: () => [...host.podConfig.podsOf('file'), ...host.podConfig.podsOf('http')],
        apiPods: () => source.mirrorPods(),
        ready: () => host.podConfig.seenAllSources(),
      },
      clock,
      logger.child('mirror-pods'),
      { nodeName: host.nodeName },
    );
    source.onChange((pods, changed) => {
      this.syncer?.apiChanged(pods, changed);
      this.mirrors?.trigger();
    });
    void this.nodeStatus.whenRegistered().then((node) => {
      this.lease?.setNode(node);
      this.mirrors?.setNode(node);
    });

    this.recorder.start();
    this.nodeStatus.start();
    this.lease.start();
    this.syncer.start();
    // Statuses reported before the API connection existed (static pods start at once) are written too.
    for (const { pod, status } of host.podStatuses?.() ?? []) {
      this.syncer.set(pod.metadata!.uid!, pod.metadata!.namespace ?? 'default', pod.metadata!.name!, status);
    }
    this.mirrors.start();
    host.podConfig.addSource(source);
    source.start();
    logger.info('Connecting to the API server', { server: api.server, node: host.nodeName });
  }
}

/**
 * One read of the Node before any controller starts: credentials the server refuses (a client
 * certificate of another CA, an expired or revoked one) become one clear error naming the kubeconfig,
 * retried with backoff by the caller, instead of a 401 from every controller.
 */
async function checkCredentials(api: KubeApi, nodeName: string, kubeconfig: string): Promise<void> {
  try {
    await api.getNode(nodeName);
  } catch (err) {
    if (!(err instanceof ApiError) || (err.code !== 401 && err.code !== 403)) return;
    throw new Error(
      err.code === 401
        ? `the API server at ${api.server} refused the credentials of kubeconfig ${kubeconfig} (401 Unauthorized): its client certificate is not signed by the cluster's CA, or it expired; renew it, or start with --bootstrap-kubeconfig to request one`
        : `the API server at ${api.server} does not let the user of kubeconfig ${kubeconfig} read Node ${nodeName} (403 Forbidden): a kubelet needs the credentials of system:node:${nodeName}`,
    );
  }
}

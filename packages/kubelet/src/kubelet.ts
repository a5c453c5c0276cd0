import { hostname, totalmem } from 'node:os';
import type { Pod, PodList } from '@nodelet/api';
import { CriAnnotations, CriLabels, type ImageService, type RuntimeService } from '@nodelet/cri';
import { type Clock, type EventBus, errorMessage, type Logger } from '@nodelet/kernel';
import type { Subscription } from 'rxjs';
import { type ApiServerOptions, NodeAgent, tapLogger } from './apiserver/index.js';
import { FileSource, PodConfig, type PodSource, UrlSource } from './config/index.js';
import { ImagePuller, podRef } from './image-puller.js';
import { KubeRuntime, NODE_NAME_LABEL } from './kuberuntime.js';
import { GenericPleg, type PlegChange } from './pleg.js';
import type { ProbeVerdicts } from './pod-actions.js';
import { generatePodStatus, rfc3339, type WaitingReason } from './pod-status.js';
import { type ProbeHandler, ProberManager } from './prober/index.js';
import { type PodSyncer, PodWorkers, type SyncOutcome } from './pod-workers.js';
import { RuntimeCache } from './runtime-cache.js';
import { emptyRuntimePodStatus, type RuntimePodStatus } from './runtime-pod.js';
import { StatusManager } from './status-manager.js';
import { VolumeManager } from './volumes.js';

/**
 * The kubelet: pod sources feed the pod manager; each pod has a worker that runs `syncPod`; PLEG relists
 * the runtime every second and wakes the workers of pods whose containers changed; housekeeping removes
 * what no source wants any more; the status manager keeps every pod's API status.
 *
 *   sources ──► PodConfig ──[Source] Pod Added/Updated/Removed──► pod manager ──► PodWorkers ──► syncPod
 *                                                                                    ▲            │ CRI
 *   runtime ◄──────────────── PLEG relist (1 s) ──[PLEG] Container …──────────────────┘            ▼
 *                                                                             StatusManager ◄── status
 */
export interface KubeletOptions {
  nodeName: string;
  hostIP: string;
  /** Kubelet root directory (`rootDirectory`): volumes live under `<root>/pods/<uid>`. */
  rootDir: string;
  /** Pod log root (`podLogsDir`, upstream /var/log/pods). */
  podLogsDir: string;
  podManifestPath?: string;
  manifestUrl?: string;
  manifestUrlHeaders?: Record<string, string>;
  fileCheckFrequencyMs?: number;
  httpCheckFrequencyMs?: number;
  /** Periodic resync of every pod (upstream syncFrequency, 1 min). */
  syncFrequencyMs?: number;
  housekeepingPeriodMs?: number;
  plegRelistPeriodMs?: number;
  memoryCapacityBytes?: number;
  /** Extra sources (tests, embedders). */
  sources?: PodSource[];
  /** Join a cluster: register the node, run its API pods, report status (`--kubeconfig`). */
  apiServer?: ApiServerOptions;
}

export interface KubeletDeps {
  runtime: RuntimeService;
  images: ImageService;
  bus: EventBus;
  clock: Clock;
  logger: Logger;
  /** Overrides the prober manager's verdicts in syncPod (tests). */
  probes?: ProbeVerdicts;
  /** Probe handlers besides the built-in ones (the `probe.handler` capability's providers). */
  probeHandlers?: ProbeHandler[];
}

export class Kubelet implements PodSyncer {
  readonly podConfig: PodConfig;
  readonly workers: PodWorkers;
  readonly pleg: GenericPleg;
  readonly statusManager: StatusManager;
  readonly kubeRuntime: KubeRuntime;
  readonly prober: ProberManager;
  readonly startedAt: number;
  /** The API server connection, when the kubelet joined a cluster. */
  readonly nodeAgent?: NodeAgent;
  /** API pods done with for good (rejected by admission, or deleted and terminated): never run again. */
  private readonly finished = new Set<string>();
  /** Desired pods by UID (upstream pod manager). */
  private readonly desired = new Map<string, Pod>();
  /** Pods being terminated: still reported until they are gone. */
  private readonly terminating = new Map<string, Pod>();
  /** When each pod in `terminating` was removed by its source: its deletion time in `/pods`. */
  private readonly removedAt = new Map<string, number>();
  private readonly waiting = new Map<string, Map<string, WaitingReason>>();
  private readonly sources: PodSource[] = [];
  /** What is known of the runtime between reads (shared by PLEG and KubeRuntime). */
  readonly runtimeCache = new RuntimeCache();
  /** Sandbox and container states each pod's last sync saw, by id. */
  private readonly lastSeen = new Map<string, Map<string, string>>();
  /** What PLEG reported for each pod since its last sync started. */
  private readonly plegNews = new Map<string, PlegChange[]>();
  private readonly subscriptions: Subscription[] = [];
  private cancelHousekeeping?: () => void;
  private housekeepingFailures = 0;
  private readonly logger: Logger;

  constructor(
    private readonly deps: KubeletDeps,
    readonly options: KubeletOptions,
  ) {
    const { clock, bus } = deps;
    // With an API server, image pulls the puller logs also become Pulling events.
    this.logger = options.apiServer
      ? tapLogger(deps.logger, (m, f) => this.nodeAgent?.podEvents.onLog(m, f))
      : deps.logger;
    this.startedAt = clock.now();
    const puller = new ImagePuller(deps.images, clock, this.logger.child('images'));
    this.kubeRuntime = new KubeRuntime(deps.runtime, puller, new VolumeManager(options.rootDir), {
      nodeName: options.nodeName,
      podLogsDir: options.podLogsDir,
      memoryCapacityBytes: options.memoryCapacityBytes ?? totalmem(),
      clock,
      logger: this.logger.child('kuberuntime'),
      cache: this.runtimeCache,
    });
    this.statusManager = new StatusManager(bus, this.logger.child('status'));
    this.workers = new PodWorkers(this, clock, this.logger.child('pod-workers'), {
      resyncIntervalMs: options.syncFrequencyMs ?? 60_000,
    });
    this.prober = new ProberManager({
      runtime: deps.runtime,
      bus,
      clock,
      logger: this.logger.child('prober'),
      handlers: deps.probeHandlers,
      onResultChanged: (uid) => this.workers.requestSync(uid),
    });
    this.pleg = new GenericPleg(
      deps.runtime,
      bus,
      clock,
      this.logger.child('pleg'),
      (changes) => {
        for (const [uid, list] of changes) {
          if (!this.workers.isKnown(uid)) continue;
          const news = this.plegNews.get(uid);
          if (news) news.push(...list);
          else this.plegNews.set(uid, list);
          this.workers.requestSync(uid, { optional: true });
        }
      },
      { relistPeriodMs: options.plegRelistPeriodMs },
      this.runtimeCache,
    );
    this.podConfig = new PodConfig({ bus, clock, logger: this.logger.child('config') });
    if (options.podManifestPath) {
      this.sources.push(
        new FileSource({
          path: options.podManifestPath,
          nodeName: options.nodeName,
          clock,
          logger: this.logger.child('file-source'),
          bus,
          fileCheckFrequencyMs: options.fileCheckFrequencyMs,
        }),
      );
    }
    if (options.manifestUrl) {
      this.sources.push(
        new UrlSource({
          url: options.manifestUrl,
          headers: options.manifestUrlHeaders,
          nodeName: options.nodeName,
          clock,
          logger: this.logger.child('url-source'),
          bus,
          checkFrequencyMs: options.httpCheckFrequencyMs,
        }),
      );
    }
    this.sources.push(...(options.sources ?? []));
    if (options.apiServer) {
      this.nodeAgent = new NodeAgent(
        {
          ...options,
          runtime: deps.runtime,
          bus,
          clock,
          logger: this.logger.child('node-agent'),
          podConfig: this.podConfig,
          healthz: () => this.healthz(),
          isActive: (uid) => this.workers.isKnown(uid),
          activePods: () =>
            [...this.desired.values()].filter((p) => {
              const phase = this.statusManager.get(p.metadata!.uid!)?.phase;
              return phase !== 'Succeeded' && phase !== 'Failed';
            }),
          podStatuses: () =>
            [...this.desired.values()].flatMap((pod) => {
              const status = this.statusManager.get(pod.metadata!.uid!);
              return status ? [{ pod, status }] : [];
            }),
        },
        options.apiServer,
      );
    }
  }

  async start(): Promise<void> {
    const { bus } = this.deps;
    this.subscriptions.push(
      bus.subscribe(['[Source] Pod Added', '[Source] Pod Updated'], (e) => this.handlePodUpsert(e.pod)),
      bus.subscribe('[Source] Pod Removed', (e) => this.handlePodRemoved(e.pod)),
    );
    await this.learnRuntimeName();
    this.nodeAgent?.start();
    for (const source of this.sources) this.podConfig.attach(source);
    this.pleg.start();
    this.scheduleHousekeeping();
    this.logger.info('kubelet started', {
      node: this.options.nodeName,
      sources: this.sources.map((s) => s.name).join(','),
    });
  }

  /**
   * The runtime's name from CRI Version, for container IDs (`<name>://<id>`). A runtime that does not
   * answer now is asked again by the next status update; until then IDs say `containerd`.
   */
  private runtimeName: string | undefined;
  private askingRuntimeName = false;
  private async learnRuntimeName(): Promise<void> {
    if (this.runtimeName !== undefined || this.askingRuntimeName) return;
    this.askingRuntimeName = true;
    try {
      this.runtimeName = (await this.deps.runtime.version({ version: 'v1' })).runtimeName || 'containerd';
    } catch {
      // asked again later
    } finally {
      this.askingRuntimeName = false;
    }
  }

  async stop(): Promise<void> {
    await this.nodeAgent?.stop();
    for (const s of this.subscriptions) s.unsubscribe();
    this.subscriptions.length = 0;
    this.podConfig.stop();
    this.pleg.stop();
    this.cancelHousekeeping?.();
    this.prober.stop();
    this.workers.stop();
    await this.workers.whenIdle();
  }

  /** Every pod the kubelet runs or is terminating, with its latest status (the `/pods` endpoint). */
  podList(): PodList {
    const items: Pod[] = [];
    for (const [uid, pod] of [...this.desired, ...this.terminating]) {
      items.push({
        ...this.withDeletion(uid, pod),
        status: this.statusManager.get(uid) ?? { phase: 'Pending' },
      });
    }
    return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items };
  }

  /**
   * A pod its source removed (a static manifest deleted) is being deleted as an API pod is: it is listed
   * with the deletionTimestamp and grace of its kill, so it prints `Terminating` (as upstream's mirror
   * pod does), not the `Running` it was or the `Error` its SIGTERM exit (143) reads as.
   */
  private withDeletion(uid: string, pod: Pod): Pod {
    const at = this.removedAt.get(uid);
    if (at === undefined || pod.metadata?.deletionTimestamp) return pod;
    const grace = pod.spec?.terminationGracePeriodSeconds ?? 30;
    return {
      ...pod,
      metadata: { ...pod.metadata, deletionTimestamp: rfc3339(at), deletionGracePeriodSeconds: grace },
    };
  }

  getPod(namespace: string, name: string): Pod | undefined {
    return this.podList().items.find(
      (p) => p.metadata?.name === name && (p.metadata?.namespace ?? 'default') === namespace,
    );
  }

  /** The pod's last events (probe failures and the kills they caused) as a v1 EventList. */
  podEvents(namespace: string, name: string): object | undefined {
    const pod = [...this.desired.values(), ...this.terminating.values()].find(
      (p) => p.metadata?.name === name && (p.metadata?.namespace ?? 'default') === namespace,
    );
    return pod && this.prober.eventList(pod, this.options.nodeName);
  }

  healthz(): { healthy: boolean; message: string } {
    return this.pleg.healthy();
  }

  // --- source events -------------------------------------------------------------------------------

  private handlePodUpsert(pod: Pod): void {
    const uid = pod.metadata!.uid!;
    if (this.finished.has(uid)) return;
    if (this.nodeAgent && !this.desired.has(uid) && !this.workers.isKnown(uid)) {
      const verdict = this.nodeAgent.admit(pod);
      if (!verdict.admit) {
        this.finished.add(uid);
        this.statusManager.set(pod, NodeAgent.rejectedStatus(verdict, pod.status));
        return;
      }
    }
    this.desired.set(uid, pod);
    // Deleted in the API server: terminate with the grace period the deletion asked for.
    if (pod.metadata?.deletionTimestamp) {
      if (!this.workers.isKnown(uid)) this.workers.updatePod(pod); // adopted (a restart): its containers too
      this.prober.stopLivenessAndStartup(uid);
      this.workers.killPod(uid, pod.metadata.deletionGracePeriodSeconds ?? undefined);
      return;
    }
    this.workers.updatePod(pod);
  }

  private handlePodRemoved(pod: Pod): void {
    const uid = pod.metadata!.uid!;
    const known = this.desired.get(uid) ?? pod;
    this.desired.delete(uid);
    if (this.finished.delete(uid) && !this.workers.isKnown(uid)) {
      this.statusManager.delete(uid);
      return;
    }
    this.terminating.set(uid, known);
    if (!this.removedAt.has(uid)) this.removedAt.set(uid, this.deps.clock.now());
    this.prober.stopLivenessAndStartup(uid);
    this.workers.killPod(uid);
  }

  /**
   * Whether a sync PLEG asked for has anything to learn: not when every change PLEG reported since the
   * last sync started is a state that sync already saw, or one it saw the object move past (PLEG's
   * relist raced the sync: the container it saw created, the sync saw running). Then the sync would
   * read the runtime only to find nothing to do.
   */
  syncNeeded(pod: Pod): boolean {
    const uid = pod.metadata!.uid!;
    const news = this.plegNews.get(uid);
    const seen = this.lastSeen.get(uid);
    if (!news || !seen) return true;
    const confirmed = news.every((c) => {
      const state = seen.get(c.id);
      if (state === undefined || c.state === 'removed') return false;
      return state === c.state || (stateOrder[state] ?? 0) >= (stateOrder[c.state] ?? Infinity);
    });
    if (confirmed) this.plegNews.delete(uid);
    return !confirmed;
  }

  // --- PodSyncer -----------------------------------------------------------------------------------

  async syncPod(pod: Pod): Promise<SyncOutcome> {
    const {
      uid,
      name,
      namespace = 'default',
    } = pod.metadata! as { uid: string; name: string; namespace?: string };
    this.plegNews.delete(uid); // this sync reads the runtime afresh
    // A pod the runtime is known to hold nothing for (a new pod) needs no listing.
    const before = this.runtimeCache.knownEmpty(uid)
      ? emptyRuntimePodStatus(uid, name, namespace)
      : await this.kubeRuntime.getPodStatus(uid, name, namespace);
    const result = await this.kubeRuntime.syncPod(
      pod,
      before,
      this.options.hostIP,
      this.deps.probes ?? this.prober,
      this.waiting.get(uid),
    );
    this.prober.recordKills(pod, result.actions.containersToKill);
    // Only pods with a waiting reason keep a map: an empty one per running pod cost ~0.3 KiB of heap.
    if (result.waiting.size > 0) this.waiting.set(uid, result.waiting);
    else this.waiting.delete(uid);
    const after = await this.kubeRuntime.statusAfterSync(before, result);
    this.lastSeen.set(uid, statesOf(after));
    this.updateStatus(pod, after);
    return { requeueAfterMs: result.requeueAfterMs };
  }

  async terminatePod(pod: Pod, gracePeriodSeconds: number | undefined): Promise<void> {
    const {
      uid,
      name,
      namespace = 'default',
    } = pod.metadata! as { uid: string; name: string; namespace?: string };
    const status = await this.kubeRuntime.getPodStatus(uid, name, namespace);
    this.logger.info('Terminating pod', { pod: podRef(pod), podUID: uid });
    await this.kubeRuntime.killPodWithStatus(pod, status, gracePeriodSeconds);
    this.updateStatus(pod, await this.kubeRuntime.getPodStatus(uid, name, namespace), true);
  }

  async cleanupPod(pod: Pod): Promise<void> {
    const {
      uid,
      name,
      namespace = 'default',
    } = pod.metadata! as { uid: string; name: string; namespace?: string };
    const status = await this.kubeRuntime.getPodStatus(uid, name, namespace);
    await this.kubeRuntime.removePod(pod, status);
  }

  podTerminated(pod: Pod): void {
    const uid = pod.metadata!.uid!;
    // A pod deleted in the API stays there until the kubelet's final delete: it must not start again.
    if (this.desired.get(uid)?.metadata?.deletionTimestamp) {
      this.desired.delete(uid);
      this.finished.add(uid);
    }
    this.lastSeen.delete(uid);
    this.plegNews.delete(uid);
    this.prober.removePod(uid);
    this.terminating.delete(uid);
    this.removedAt.delete(uid);
    this.waiting.delete(uid);
    this.statusManager.delete(uid);
    this.deps.bus.emit('[PodWorker] Pod Terminated', {
      podUid: uid,
      podName: pod.metadata!.name!,
      namespace: pod.metadata!.namespace ?? 'default',
    });
    this.logger.info('Pod terminated and removed', { pod: podRef(pod), podUID: uid });
  }

  private updateStatus(pod: Pod, runtime: ReturnType<typeof emptyRuntimePodStatus>, terminal = false): void {
    const uid = pod.metadata!.uid!;
    this.prober.updatePod(pod, runtime, this.options.hostIP);
    const status = generatePodStatus({
      pod,
      runtime,
      waiting: this.waiting.get(uid) ?? new Map(),
      ready: (id, container) => this.prober.ready(id, container),
      started: (id, container) => this.prober.started(id, container),
      hostIP: this.options.hostIP,
      now: this.deps.clock.now(),
      previous: this.statusManager.get(uid),
      terminal,
      ...(this.runtimeName !== undefined ? { runtimeName: this.runtimeName } : {}),
    });
    if (this.runtimeName === undefined) void this.learnRuntimeName();
    this.statusManager.set(pod, status);
  }

  // --- housekeeping --------------------------------------------------------------------------------

  private scheduleHousekeeping(): void {
    this.cancelHousekeeping = this.deps.clock.setTimeout(() => {
      void this.housekeeping().finally(() => {
        if (this.cancelHousekeeping) this.scheduleHousekeeping();
      });
    }, this.options.housekeepingPeriodMs ?? 2_000);
  }

  /**
   * Removes what no source wants: sandboxes and containers of pods that are neither desired nor being
   * terminated (deleted while the kubelet was down), once every source has been seen — so a restart
   * adopts its pods instead of killing them. Also keeps only the newest dead container per name.
   */
  async housekeeping(): Promise<void> {
    if (!this.podConfig.seenAllSources()) return;
    try {
      const { items } = await this.deps.runtime.listPodSandbox({});
      const orphans = new Map<string, { name: string; namespace: string }>();
      for (const sb of items) {
        const uid = sb.labels[CriLabels.PodUID];
        // Only this node's sandboxes: another kubelet on the same runtime owns the others.
        if (!uid || sb.labels[NODE_NAME_LABEL] !== this.options.nodeName) continue;
        if (this.desired.has(uid) || this.workers.isKnown(uid)) continue;
        orphans.set(uid, {
          name: sb.labels[CriLabels.PodName] ?? '',
          namespace: sb.labels[CriLabels.PodNamespace] ?? '',
        });
      }
      for (const [uid, { name, namespace }] of orphans) {
        const status = await this.kubeRuntime.getPodStatus(uid, name, namespace);
        const grace = Number(
          (
            await this.deps.runtime.listContainers({
              filter: { id: '', podSandboxId: '', labelSelector: { [CriLabels.PodUID]: uid } },
            })
          ).containers[0]?.annotations[CriAnnotations.PodTerminationGracePeriod] ?? 30,
        );
        const pod: Pod = {
          metadata: { uid, name, namespace },
          spec: { containers: [], terminationGracePeriodSeconds: grace },
        };
        this.logger.info('Cleaning up orphaned pod', { pod: `${namespace}/${name}`, podUID: uid });
        await this.kubeRuntime.killPodWithStatus(pod, status, undefined, 'the pod is no longer wanted');
        await this.kubeRuntime.removePod(pod, await this.kubeRuntime.getPodStatus(uid, name, namespace));
      }
      await this.garbageCollectContainers();
      if (this.housekeepingFailures > 0) this.logger.info('housekeeping succeeded again');
      this.housekeepingFailures = 0;
    } catch (err) {
      // Once per backoff step (1, 2, 4, … failures in a row), not every period while the runtime is down.
      const failures = ++this.housekeepingFailures;
      if ((failures & (failures - 1)) === 0) {
        this.logger.warn('housekeeping failed; will retry', { failures, err: errorMessage(err) });
      }
    }
  }

  /** Keeps the newest container of each (pod, name) and one dead one before it; removes older dead ones. */
  private async garbageCollectContainers(): Promise<void> {
    const { containers } = await this.deps.runtime.listContainers({});
    const byKey = new Map<string, typeof containers>();
    for (const c of containers) {
      if (c.labels[NODE_NAME_LABEL] !== this.options.nodeName) continue;
      const key = `${c.labels[CriLabels.PodUID]}/${c.labels[CriLabels.ContainerName]}`;
      const list = byKey.get(key) ?? [];
      list.push(c);
      byKey.set(key, list);
    }
    for (const list of byKey.values()) {
      if (list.length <= 2) continue;
      list.sort((a, b) => Number(b.createdAt - a.createdAt));
      for (const old of list.slice(2)) {
        if (old.state === 2 /* EXITED */) await this.deps.runtime.removeContainer({ containerId: old.id });
      }
    }
  }
}

/** Each state after the ones an object passes through before it (container: created → running → exited). */
const stateOrder: Record<string, number> = { created: 1, running: 2, exited: 3, ready: 1, notready: 2 };

/** Sandbox and container states of a pod's runtime status, by id. */
function statesOf(status: RuntimePodStatus): Map<string, string> {
  const states = new Map<string, string>();
  for (const sb of status.sandboxes) states.set(sb.id, sb.ready ? 'ready' : 'notready');
  for (const c of status.containers) states.set(c.id, c.state);
  return states;
}

export const defaultNodeName = () => hostname().toLowerCase();
export { emptyRuntimePodStatus };

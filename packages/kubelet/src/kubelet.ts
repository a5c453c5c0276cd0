import { hostname, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '@nodelet/api';
import type { Clock, Logger } from '@nodelet/kernel';
import type { PodObjects } from '@nodelet/volume';
import type { Subscription } from 'rxjs';
import { admissionNode, type AdmissionNode, PodAdmission, rejectedStatus } from './admission.js';
import { NodeAgent } from './apiserver/index.js';
import { allocatableOf, hostResources } from './apiserver/node-status.js';
import { validateNodeAllocatable } from './cm/node-allocatable.js';
import { ContainerManager } from './cm/container-manager.js';
import { applyOwnOomScoreAdj } from './own-oom-score-adj.js';
import { PodConfig, type PodSource } from './config/index.js';
import { Housekeeping } from './housekeeping.js';
import type { EvictionManager } from './eviction/index.js';
import { nodePressureManagers } from './eviction/kubelet-pressure.js';
import type { ImageGarbageCollector } from './images/image-gc.js';
import { ImagePuller } from './image-puller.js';
import type { ContainerGarbageCollector } from './kuberuntime/index.js';
import { KubeRuntime, RuntimeGarbageCollector } from './kuberuntime/index.js';
import { kubeletContainerGC } from './kubelet-container-gc.js';
import { type KubeletDeps, type KubeletOptions, podSources } from './kubelet-options.js';
import { LifecycleHookRunner } from './lifecycle/hook-runner.js';
import { PodNetwork } from './network/index.js';
import { type KubeletObjects, kubeletObjects } from './objects/index.js';
import { GenericPleg } from './pleg.js';
import { isStaticPod, PodManager } from './pod-manager.js';
import { PodSync } from './pod-sync.js';
import { PodWorkers } from './pod-workers.js';
import { ProberManager } from './prober/index.js';
import { RuntimeCache } from './runtime-cache.js';
import { emptyRuntimePodStatus } from './runtime-pod.js';
import { StatusManager } from './status-manager.js';
import { admitPodOS, SysctlAllowlist } from './sysctl-admission.js';
import { housekeepingTicks, KubeletSyncHandler, runSyncLoop } from './sync-loop.js';
import { HostMounter, VolumeManager } from './volume/index.js';

/**
 * The kubelet: its parts, wired. Pod sources feed the sync loop, which keeps the pod manager and tells
 * each pod's worker what to do; a worker runs `syncPod` (pod-sync.ts → kuberuntime/); PLEG relists the
 * runtime every second and its changes come back through the loop; housekeeping removes what no source
 * wants; the status manager keeps every pod's API status.
 *
 *   sources ──► PodConfig ──[Source] Pod …──► sync-loop.ts ──► PodWorkers ──► PodSync.syncPod ──► CRI
 *                                              ▲  ▲  ▲  ▲                        │
 *   PLEG relist (1 s) ─────────────────────────┘  │  │  └── housekeeping (2 s)   ▼
 *   prober: a result changed ─────────────────────┘  └──── requeues      StatusManager ◄── status
 */
export class Kubelet {
  readonly podConfig: PodConfig;
  readonly podManager = new PodManager();
  readonly workers: PodWorkers;
  readonly pleg: GenericPleg;
  readonly statusManager: StatusManager;
  readonly kubeRuntime: KubeRuntime;
  readonly prober: ProberManager;
  readonly startedAt: number;
  /** The kernel clock the kubelet runs on. */
  readonly clock: Clock;
  /** The API server connection, when the kubelet joined a cluster. */
  readonly nodeAgent?: NodeAgent;
  /** What is known of the runtime between reads (shared by PLEG and KubeRuntime). */
  readonly runtimeCache = new RuntimeCache();
  /** The ConfigMaps, Secrets, Services and tokens pods reference: one view, for all that read them. */
  readonly objects: PodObjects;
  private readonly podObjects: KubeletObjects;
  readonly volumes: VolumeManager;
  /** Pods' hostnames, DNS config and /etc/hosts. */
  readonly network: PodNetwork;
  /** The pod cgroups (cgroupsPerQOS); absent for simulated nodes. */
  readonly containerManager?: ContainerManager;
  private readonly podSync: PodSync;
  private readonly admission: PodAdmission;
  private readonly sysctls: SysctlAllowlist;
  /** The node as admission sees it without an API server (read once: the host does not change). */
  private localNode?: AdmissionNode;
  private readonly cleanups: Housekeeping;
  /** Evicts pods under resource pressure and reports the pressure conditions (with a stats provider). */
  readonly evictionManager?: EvictionManager;
  /** Removes unused images when the image file system fills up (with a stats provider). */
  readonly imageGC?: ImageGarbageCollector;
  readonly containerGC: ContainerGarbageCollector;
  private readonly sources: PodSource[];
  private syncLoop?: Subscription;
  /** When the sync loop last ran an iteration (0: not yet), for `/healthz/syncloop`. */
  latestLoopEntryTime = 0;
  private readonly logger: Logger;

  constructor(
    private readonly deps: KubeletDeps,
    readonly options: KubeletOptions,
  ) {
    const { clock, bus, runtime } = deps;
    this.logger = deps.logger;
    this.clock = clock;
    this.startedAt = clock.now();
    this.podObjects = kubeletObjects({
      given: deps.objects,
      joined: !!options.apiServer,
      api: () => this.nodeAgent?.api,
      clock,
      logger: this.logger.child('objects'),
    });
    this.objects = this.podObjects.objects;
    if (this.podObjects.registry) this.podManager.setRegistry(this.podObjects.registry);
    const puller = new ImagePuller(deps.images, clock, this.logger.child('images'), {
      bus,
      objects: this.objects,
    });
    this.volumes = new VolumeManager(options.rootDir, {
      objects: this.objects,
      facts: (pod) => ({
        nodeName: options.nodeName,
        hostIPs: [options.hostIP],
        podIPs: (this.statusManager.get(pod.metadata!.uid!)?.podIPs ?? []).map((p) => p.ip),
        allocatable: this.admissionNode().allocatable,
      }),
      plugins: deps.volumePlugins,
      mounter: deps.mounter ?? new HostMounter({ tmpfs: options.tmpfsVolumes }),
      bus,
      clock,
      logger: this.logger.child('volumes'),
    });
    this.network = new PodNetwork(options, {
      rootDir: options.rootDir,
      nodeIPs: options.hostIP ? [options.hostIP] : [],
      logger: this.logger.child('dns'),
      bus,
    });
    if (options.cgroups) {
      this.containerManager = new ContainerManager(options.cgroups, {
        logger: this.logger.child('cm'),
        capacity: options.apiServer?.capacity ?? hostResources({ rootDir: options.rootDir }).capacity,
        ...(options.reservation ? { reservation: options.reservation } : {}),
      });
    }
    const cgroups = this.containerManager;
    this.kubeRuntime = new KubeRuntime(runtime, puller, this.volumes, {
      ...(cgroups ? { cgroupParent: (pod: Pod) => cgroups.cgroupParent(pod) } : {}),
      objects: this.objects,
      services: this.podObjects.services,
      allocatable: () => this.admissionNode().allocatable,
      bus,
      nodeName: options.nodeName,
      podLogsDir: options.podLogsDir,
      rootDir: options.rootDir,
      memoryCapacityBytes: options.memoryCapacityBytes ?? totalmem(),
      clock,
      logger: this.logger.child('kuberuntime'),
      cache: this.runtimeCache,
      security: {
        seccompProfileRoot: join(options.rootDir, 'seccomp'),
        seccompDefault: options.seccompDefault ?? false,
      },
      hooks: new LifecycleHookRunner({
        runtime,
        clock,
        logger: this.logger.child('lifecycle'),
        handlers: () => this.prober.handlers,
      }),
      network: this.network,
    });
    this.statusManager = new StatusManager(bus, this.logger.child('status'));
    this.prober = new ProberManager({
      runtime,
      bus,
      clock,
      logger: this.logger.child('prober'),
      handlers: deps.probeHandlers,
    });
    this.podSync = new PodSync({
      ...deps,
      kubeRuntime: this.kubeRuntime,
      runtimeCache: this.runtimeCache,
      prober: this.prober,
      statusManager: this.statusManager,
      podManager: this.podManager,
      logger: this.logger,
      hostIP: options.hostIP,
      ...(cgroups ? { podCgroups: cgroups } : {}),
    });
    this.workers = new PodWorkers(this.podSync, clock, this.logger.child('pod-workers'), {
      resyncIntervalMs: options.syncFrequencyMs ?? 60_000,
    });
    this.pleg = new GenericPleg(
      runtime,
      bus,
      clock,
      this.logger.child('pleg'),
      { relistPeriodMs: options.plegRelistPeriodMs },
      this.runtimeCache,
    );
    this.podConfig = new PodConfig({ bus, clock, logger: this.logger.child('config') });
    this.sources = podSources(options, deps, this.logger);
    const orphans = new RuntimeGarbageCollector(runtime, this.kubeRuntime, {
      nodeName: options.nodeName,
      logger: this.logger,
    });
    this.containerGC = kubeletContainerGC(this, deps);
    this.cleanups = new Housekeeping({
      gc: orphans,
      volumes: this.volumes,
      seenAllSources: () => this.podConfig.seenAllSources(),
      wanted: (uid) => this.podManager.has(uid) || this.workers.isKnown(uid),
      logger: this.logger,
    });
    this.sysctls = new SysctlAllowlist(options.allowedUnsafeSysctls);
    if (options.reservation) {
      const capacity = options.apiServer?.capacity ?? hostResources({ rootDir: options.rootDir }).capacity;
      validateNodeAllocatable(capacity, options.reservation);
    }
    if (deps.stats) {
      const managers = nodePressureManagers({
        runtime,
        images: deps.images,
        stats: deps.stats,
        clock,
        bus,
        logger: this.logger,
        rootDir: options.rootDir,
        containerGC: this.containerGC,
        // A pod already chosen is being stopped: not a candidate again (upstream: termination requested).
        activePods: () => this.activePods().filter((p) => !this.podSync.isEvicted(p.metadata!.uid!)),
        evict: (pod, grace, message) => {
          this.podSync.evict(pod, grace, message);
          this.workers.requestSync(pod.metadata!.uid!);
        },
        // The pod's sync has stopped its containers and set its final phase, or its worker is gone.
        podIsFinished: (pod) => {
          const uid = pod.metadata!.uid!;
          const phase = this.statusManager.get(uid)?.phase;
          return phase === 'Failed' || phase === 'Succeeded' || !this.workers.isKnown(uid);
        },
        conditionsChanged: (conditions) => this.nodeAgent?.setPressure(conditions),
        settings: options,
      });
      this.evictionManager = managers.evictionManager;
      this.imageGC = managers.imageGC;
    }
    this.admission = new PodAdmission({
      node: () => this.admissionNode(),
      activePods: () => this.activePods(),
      bus,
      logger: this.logger,
    });
    if (options.apiServer) {
      this.nodeAgent = new NodeAgent(
        {
          ...options,
          runtime,
          bus,
          clock,
          logger: this.logger.child('node-agent'),
          podConfig: this.podConfig,
          healthz: () => this.healthz(),
          isActive: (uid) => this.workers.isKnown(uid),
          activePods: () => this.activePods(),
          podStatuses: () =>
            this.podManager.desiredPods().flatMap((pod) => {
              const status = this.statusManager.get(pod.metadata!.uid!);
              return status ? [{ pod, status }] : [];
            }),
        },
        options.apiServer,
      );
      this.podManager.setMirrorPods(() => this.nodeAgent?.source?.mirrorPods() ?? new Map());
    }
  }

  async start(): Promise<void> {
    const { bus, clock } = this.deps;
    await this.containerManager?.start();
    if (this.options.oomScoreAdj !== undefined)
      await applyOwnOomScoreAdj(this.options.oomScoreAdj, this.logger);
    const handler = new KubeletSyncHandler({
      podManager: this.podManager,
      workers: this.workers,
      clock,
      admit: (pod) => this.admit(pod),
      notePlegChanges: (uid, changes) => this.podSync.notePlegChanges(uid, changes),
      stopProbes: (uid) => this.prober.stopLivenessAndStartup(uid),
      forgetStatus: (uid) => this.statusManager.delete(uid),
      housekeeping: () => {
        this.latestLoopEntryTime = clock.now();
        return this.housekeeping();
      },
    });
    this.syncLoop = runSyncLoop(
      {
        bus,
        pleg$: this.pleg.changes$,
        probe$: this.prober.updates$,
        requeue$: this.workers.requeue$,
        housekeeping$: housekeepingTicks(clock, this.options.housekeepingPeriodMs ?? 2_000),
      },
      handler,
      this.logger,
    );
    await this.podSync.learnRuntimeName();
    void this.network.checkNodeResolvConf();
    this.nodeAgent?.start();
    for (const source of this.sources) this.podConfig.attach(source);
    this.pleg.start();
    this.evictionManager?.start(this.options.evictionMonitoringPeriodMs);
    this.imageGC?.start();
    this.containerGC.start(this.options.containerGC?.periodMs);
    this.logger.info('kubelet started', {
      node: this.options.nodeName,
      sources: this.sources.map((s) => s.name).join(','),
    });
  }

  async stop(): Promise<void> {
    this.evictionManager?.stop();
    this.imageGC?.stop();
    this.containerGC.stop();
    await this.nodeAgent?.stop();
    this.syncLoop?.unsubscribe();
    this.syncLoop = undefined;
    this.podConfig.stop();
    this.pleg.stop();
    this.prober.stop();
    this.workers.stop();
    await this.workers.whenIdle();
    this.podObjects.stop();
  }

  /** One housekeeping pass (the sync loop runs one every `housekeepingPeriodMs`). */
  housekeeping(): Promise<void> {
    return this.cleanups.run();
  }

  /** Every pod the kubelet runs or is terminating, with its latest status (the `/pods` endpoint). */
  podList(): PodList {
    const items: Pod[] = this.podManager.listed().map(([uid, pod]) => ({
      ...pod,
      status: this.statusManager.get(uid) ?? { phase: 'Pending' },
    }));
    return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items };
  }

  getPod(namespace: string, name: string): Pod | undefined {
    return this.podList().items.find(
      (p) => p.metadata?.name === name && (p.metadata?.namespace ?? 'default') === namespace,
    );
  }

  /** The pod's last events (probe failures and the kills they caused) as a v1 EventList. */
  podEvents(namespace: string, name: string): object | undefined {
    const pod = this.podManager.find(namespace, name);
    return pod && this.prober.eventList(pod, this.options.nodeName);
  }

  healthz(): { healthy: boolean; message: string } {
    return this.pleg.healthy();
  }

  /** Desired pods that are not done (admission counts their requests). */
  private activePods(): Pod[] {
    return this.podManager.desiredPods().filter((p) => {
      const phase = this.statusManager.get(p.metadata!.uid!)?.phase;
      return phase !== 'Succeeded' && phase !== 'Failed';
    });
  }

  /**
   * Admission of a pod not run yet, whatever its source: the API server's pods as the node agent admits
   * them (against the registered Node), every other pod against this node. A rejected pod is Failed.
   */
  private admit(pod: Pod): boolean {
    // What no node of this kubelet can run comes first, whatever the pod's source (upstream's order);
    // then what the node cannot take under resource pressure.
    const refused = [
      admitPodOS(pod),
      this.sysctls.admit(pod),
      this.evictionManager?.admit(pod) ?? { admit: true },
    ].find((r) => !r.admit);
    if (refused) this.admission.rejected(pod, refused);
    const verdict =
      refused ??
      (this.nodeAgent && !isStaticPod(pod) ? this.nodeAgent.admit(pod) : this.admission.admit(pod));
    if (!verdict.admit) this.statusManager.set(pod, rejectedStatus(verdict, pod.status));
    return verdict.admit;
  }

  private admissionNode(): AdmissionNode {
    const { options } = this;
    if (this.nodeAgent) return admissionNode(this.nodeAgent.node);
    if (!this.localNode) {
      const { reservation } = options;
      const { allocatable } = hostResources({
        maxPods: options.maxPods,
        rootDir: options.rootDir,
        reservation,
      });
      // A simulated node's memory is the one it was given, less its reservation.
      if (options.memoryCapacityBytes !== undefined)
        allocatable.memory = allocatableOf(
          { memory: String(options.memoryCapacityBytes) },
          reservation,
        ).memory!;
      this.localNode = admissionNode({ nodeName: options.nodeName, hostname: options.nodeName, allocatable });
    }
    return this.localNode;
  }
}

export type { KubeletDeps, KubeletOptions } from './kubelet-options.js';
export const defaultNodeName = () => hostname().toLowerCase();
export { emptyRuntimePodStatus };

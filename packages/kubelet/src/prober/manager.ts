import type { Container, Pod } from '@nodelet/api';
import { isSidecar } from '../sidecar-actions.js';
import type { RuntimeService } from '@nodelet/cri';
import type { Clock, EventBus, Logger } from '@nodelet/kernel';
import { type Observable, Subject } from 'rxjs';
import { podRef } from '../image-puller.js';
import type { ContainerToKill, ProbeVerdicts } from '../pod-actions.js';
import { latestContainer, type RuntimePodStatus } from '../runtime-pod.js';
import { builtInProbeHandlers } from './handlers.js';
import { eventList, PodEventLog } from './pod-events.js';
import {
  KUBE_PROBE_USER_AGENT,
  type ProbeHandler,
  ProbeHandlerRegistry,
  type ProbeOutcome,
  type ProbeType,
} from './probe-handler.js';
import { PROBE_TYPES, probeOf, probeTypeTitle } from './probe-spec.js';
import { type ContainerProbeState, ProbeWorker, type WorkerHost } from './worker.js';

/**
 * The prober manager (upstream prober_manager.go): the probe workers of every pod, the kubelet's view of
 * each probe, and what follows from it.
 *
 *   syncPod ─► updateStatus ─► updatePod(pod, runtime status): a worker per (container, probe type) of
 *                              each running container; stopped containers stop their workers
 *   worker ─► handler (httpGet | tcpSocket | exec | grpc | a plugin's) ─► thresholds ─► result
 *   result ─► '[Prober] Probe Result' on the bus; when it changed: `updates$` (the sync loop syncs the pod)
 *          ─► ready()/started() in the pod status (container `ready`, ContainersReady, Ready)
 *          ─► livenessFailed()/startupFailed() in computePodActions: kill, restart per restartPolicy
 *
 * Failures and kills are kept per pod as events (`PodEventLog`) for `nodelet describe pod`.
 */
export interface ProberManagerOptions {
  runtime: RuntimeService;
  bus: EventBus;
  clock: Clock;
  logger: Logger;
  /** Handlers besides the built-in ones; one of a built-in type replaces it. */
  handlers?: Iterable<ProbeHandler>;
  /** For the jitter of first probes after a restart (default Math.random). */
  random?: () => number;
  userAgent?: string;
  /** Distinct events kept per pod (default 20). */
  eventsPerPod?: number;
}

type Results = Partial<Record<ProbeType, ContainerProbeState>>;

export class ProberManager implements ProbeVerdicts, WorkerHost {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly runtime: RuntimeService;
  readonly handlers: ProbeHandlerRegistry;
  readonly userAgent: string;
  readonly startedAt: number;
  readonly events: PodEventLog;
  /** Workers by pod UID, then by `<container>/<type>`. */
  private readonly pods = new Map<string, Map<string, ProbeWorker>>();
  /** The kubelet's view of each probe, by runtime container id. */
  private readonly results = new Map<string, Results>();
  /** Pods being terminated: their liveness and startup workers are quiet and not made again. */
  private readonly terminating = new Set<string>();
  private readonly updates = new Subject<string>();
  /** The UID of a pod one of whose probe results changed (upstream's results manager Updates()). */
  readonly updates$: Observable<string> = this.updates.asObservable();

  constructor(private readonly options: ProberManagerOptions) {
    this.clock = options.clock;
    this.logger = options.logger;
    this.runtime = options.runtime;
    this.handlers = new ProbeHandlerRegistry([...builtInProbeHandlers, ...(options.handlers ?? [])]);
    this.userAgent = options.userAgent ?? KUBE_PROBE_USER_AGENT;
    this.startedAt = options.clock.now();
    this.events = new PodEventLog(options.eventsPerPod ?? 20);
  }

  random(): number {
    return (this.options.random ?? Math.random)();
  }

  // --- what the kubelet tells the manager -----------------------------------------------------------

  /** Starts, updates and stops the workers of a pod from what the runtime holds now. */
  updatePod(pod: Pod, runtime: RuntimePodStatus, hostIP: string): void {
    const uid = pod.metadata!.uid!;
    let workers = this.pods.get(uid);
    const sandbox = runtime.sandboxes[0];
    const podIP = sandbox?.ip || (pod.spec?.hostNetwork ? hostIP : '');
    const wanted = workers ? new Set<string>() : undefined;
    // Sidecars (init containers with restartPolicy Always) are probed like app containers.
    const probed = [...(pod.spec?.initContainers ?? []).filter(isSidecar), ...(pod.spec?.containers ?? [])];
    for (const container of probed) {
      if (!container.livenessProbe && !container.readinessProbe && !container.startupProbe) continue;
      const latest = latestContainer(runtime, container.name);
      const running = latest?.state === 'running';
      for (const type of PROBE_TYPES) {
        const probe = probeOf(container, type);
        if (!probe) continue;
        const key = `${container.name}/${type}`;
        wanted?.add(key);
        let worker = workers?.get(key);
        if (!worker) {
          if (!running || (type !== 'readiness' && this.terminating.has(uid))) continue;
          worker = new ProbeWorker(this, uid, type, pod, container, probe);
          if (!workers) this.pods.set(uid, (workers = new Map()));
          workers.set(key, worker);
        }
        worker.update(pod, container, probe);
        if (running) worker.observeRunning(latest.id, latest.startedAt, podIP);
        else worker.observeStopped(latest?.id);
      }
    }
    if (wanted && workers) {
      for (const [key, worker] of workers) {
        if (!wanted.has(key)) {
          worker.stop();
          workers.delete(key);
        }
      }
    }
  }

  /** The pod is being terminated: liveness and startup end with a success (no kill during shutdown). */
  stopLivenessAndStartup(podUid: string): void {
    this.terminating.add(podUid);
    for (const worker of this.pods.get(podUid)?.values() ?? []) {
      if (worker.type !== 'readiness') worker.quiesce();
    }
  }

  /** The pod is gone: every worker stopped, its results and events forgotten. */
  removePod(podUid: string): void {
    for (const worker of this.pods.get(podUid)?.values() ?? []) worker.stop();
    this.pods.delete(podUid);
    this.terminating.delete(podUid);
    this.events.delete(podUid);
  }

  stop(): void {
    for (const uid of [...this.pods.keys()]) {
      for (const worker of this.pods.get(uid)!.values()) worker.stop();
    }
    this.pods.clear();
  }

  /** Records the kills of one sync that probes caused as `Killing` events, with an event-like log line. */
  recordKills(pod: Pod, kills: readonly ContainerToKill[]): void {
    for (const kill of kills) {
      if (kill.reason !== 'LivenessProbe' && kill.reason !== 'StartupProbe') continue;
      const uid = pod.metadata!.uid!;
      this.events.record(
        uid,
        { type: 'Normal', reason: 'Killing', message: kill.message, container: kill.container.name },
        this.clock.now(),
      );
      this.logger.info(kill.message, { pod: podRef(pod), podUID: uid, containerID: kill.container.id });
    }
  }

  /** The pod's recorded events as a v1 EventList. */
  eventList(pod: Pod, nodeName: string): object {
    return eventList(pod, this.events.list(pod.metadata!.uid!), nodeName);
  }

  workerCount(): number {
    let n = 0;
    for (const workers of this.pods.values()) n += workers.size;
    return n;
  }

  // --- what the kubelet asks ------------------------------------------------------------------------

  /** Ready, as far as probes go: a container with a readiness probe is ready once the probe succeeded. */
  ready(containerId: string, container: Container): boolean {
    return !container.readinessProbe || this.results.get(containerId)?.readiness === 'success';
  }

  /** Started: a container with a startup probe has started once the probe succeeded. */
  started(containerId: string, container: Container): boolean {
    return !container.startupProbe || this.results.get(containerId)?.startup === 'success';
  }

  livenessFailed(containerId: string): boolean {
    return this.results.get(containerId)?.liveness === 'failure';
  }

  startupFailed(containerId: string): boolean {
    return this.results.get(containerId)?.startup === 'failure';
  }

  /** The kubelet's view of a probe of a container (tests, debugging). */
  result(containerId: string, type: ProbeType): ContainerProbeState | undefined {
    return this.results.get(containerId)?.[type];
  }

  // --- WorkerHost -----------------------------------------------------------------------------------

  isStarted(containerId: string, container: Container): boolean {
    return this.started(containerId, container);
  }

  setResult(containerId: string, type: ProbeType, value: ContainerProbeState): boolean {
    let results = this.results.get(containerId);
    if (!results) this.results.set(containerId, (results = {}));
    if (results[type] === value) return false;
    results[type] = value;
    return true;
  }

  removeResult(containerId: string, type: ProbeType): void {
    const results = this.results.get(containerId);
    if (!results) return;
    delete results[type];
    if (!results.liveness && !results.readiness && !results.startup) this.results.delete(containerId);
  }

  report(worker: ProbeWorker, outcome: ProbeOutcome, changed: boolean): void {
    const { podUid, type, container, containerId } = worker;
    const result = outcome.result === 'warning' ? 'success' : outcome.result;
    this.options.bus.emit('[Prober] Probe Result', {
      podUid,
      container: container.name,
      containerId,
      probe: type,
      result,
      message: outcome.output,
      changed,
    });
    const title = probeTypeTitle(type);
    const event =
      outcome.result === 'failure'
        ? {
            type: 'Warning' as const,
            reason: 'Unhealthy',
            message: `${title} probe failed: ${outcome.output}`,
          }
        : outcome.result === 'unknown'
          ? {
              type: 'Warning' as const,
              reason: 'Unhealthy',
              message: `${title} probe errored: ${outcome.output}`,
            }
          : outcome.result === 'warning'
            ? {
                type: 'Warning' as const,
                reason: 'ProbeWarning',
                message: `${title} probe warning: ${outcome.output}`,
              }
            : undefined;
    if (event) {
      this.events.record(podUid, { ...event, container: container.name }, this.clock.now());
      this.logger.info(event.message.trimEnd(), {
        pod: podRef(worker.pod),
        podUID: podUid,
        container: container.name,
      });
    }
    if (changed) {
      this.logger.debug('Probe result changed', {
        pod: podRef(worker.pod),
        container: container.name,
        probe: type,
        result,
      });
      this.updates.next(podUid);
    }
  }
}

import type { RuntimeService } from '@nodelet/cri';
import { type Clock, type EventBus, errorMessage, type Logger, type Loop } from '@nodelet/kernel';
import type { EventRecorder } from './event-recorder.js';
import { isAlreadyExists, isNotFound, type KubeApi, type Node, type NodeStatus } from '@nodelet/client';
import {
  hostSystemInfo,
  initialNode,
  type NodeHealth,
  type NodeIdentity,
  nodeStatus,
  nodeStatusChanged,
  reconcileLabels,
  type SystemInfo,
} from './node-status.js';

export interface NodeControllerOptions {
  identity: NodeIdentity;
  /** How often the status is computed, and written when it changed (nodeStatusUpdateFrequency, 10 s). */
  statusUpdateFrequencyMs?: number;
  /** Written at least this often even unchanged (nodeStatusReportFrequency, 5 min). */
  statusReportFrequencyMs?: number;
}

export interface NodeControllerDeps {
  api: KubeApi;
  runtime: RuntimeService;
  clock: Clock;
  bus: EventBus;
  logger: Logger;
  /** PLEG health (`kubelet.healthz()`). */
  pleg: () => { healthy: boolean; message: string };
  recorder?: EventRecorder;
}

/**
 * Registers the Node and keeps its status current (upstream registerWithAPIServer + syncNodeStatus):
 *
 *   unregistered ──create (AlreadyExists: get, reconcile labels)──► registered ──every 10 s──► sync
 *        ▲  retry 100 ms doubling to 7 s                                 │ GET node; compute status;
 *        └──────────────────────── node deleted (404) ◄──────────────────┘ patch when changed or ≥ 5 min
 *
 * Nothing here blocks the kubelet: pods keep running while the API server is away.
 */
export class NodeStatusController {
  /** The Node as the API server last returned it. */
  node?: Node;
  private system?: SystemInfo;
  private lastReportAt = -Infinity;
  private loop?: Loop;
  private syncing?: Promise<boolean>;
  private readonly pressure: NonNullable<NodeHealth['pressure']> = {};
  private readonly updateMs: number;
  private readonly reportMs: number;
  private readonly registeredWaiters: ((node: Node) => void)[] = [];
  private podCidr = '';
  private cancelPodCidrPoll?: () => void;
  /** Condition statuses last reported as events. */
  private readonly reported = new Map<string, string>();

  constructor(
    private readonly deps: NodeControllerDeps,
    private readonly options: NodeControllerOptions,
  ) {
    this.updateMs = options.statusUpdateFrequencyMs ?? 10_000;
    this.reportMs = options.statusReportFrequencyMs ?? 300_000;
  }

  get registered(): boolean {
    return this.node?.metadata?.uid !== undefined;
  }

  /** Resolves with the Node once registered (for the lease's and mirror pods' owner references). */
  whenRegistered(): Promise<Node> {
    if (this.node?.metadata?.uid) return Promise.resolve(this.node);
    return new Promise((resolve) => this.registeredWaiters.push(resolve));
  }

  start(): void {
    if (this.loop && !this.loop.stopped) return;
    this.deps.recorder?.node('Normal', 'Starting', 'Starting kubelet.');
    // Registration retries back off (100 ms doubling to 7 s); status syncs run every update period.
    this.loop = this.deps.clock.loop(
      () => {
        this.syncing = this.sync().finally(() => (this.syncing = undefined));
        return this.syncing;
      },
      { period: this.updateMs, backoff: { initialMs: 100, maxMs: 7_000 } },
    );
  }

  stop(): void {
    this.loop?.stop();
    this.cancelPodCidrPoll?.();
  }

  /** A status sync now rather than at the next period (the identity changed). */
  kick(): void {
    this.loop?.kick();
  }

  /**
   * A pressure condition from the eviction manager (True while under pressure). (The bus's
   * `[Node] Condition Changed` cannot carry it: its payload's `type` is shadowed by the envelope's.)
   */
  setPressure(
    type: 'MemoryPressure' | 'DiskPressure' | 'PIDPressure',
    status: boolean,
    message?: string,
  ): void {
    this.pressure[type] = { status, message };
  }

  /** Resolves when the current sync (if any) has finished. */
  async idle(): Promise<void> {
    await this.syncing;
  }

  /** One step: register when needed, else write the status if due. False when registration failed. */
  async sync(): Promise<boolean> {
    if (!this.loop || this.loop.stopped) return true;
    if (!this.registered) return this.register();
    await this.syncNodeStatus();
    return true;
  }

  /** One registration attempt (upstream tryRegisterWithAPIServer). True when the Node exists now. */
  async register(): Promise<boolean> {
    const { api, logger, clock } = this.deps;
    const name = this.options.identity.nodeName;
    try {
      const node = initialNode(
        this.options.identity,
        await this.systemInfo(),
        await this.health(),
        clock.now(),
      );
      logger.info('Attempting to register node', { node: name, server: api.server });
      try {
        this.node = await api.createNode(node);
        this.lastReportAt = clock.now();
        logger.info('Successfully registered node', { node: name });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        let existing = await api.getNode(name);
        logger.info('Node was previously registered', { node: name });
        const labels = reconcileLabels(existing, node);
        if (labels) existing = await api.patchNode(name, { metadata: { labels } });
        this.node = existing;
        await this.syncNodeStatus(true);
      }
      this.recordConditionEvents(this.node.status);
      this.applyPodCidr(this.node);
      if (!this.podCidr) this.pollPodCidr();
      for (const resolve of this.registeredWaiters.splice(0)) resolve(this.node);
      return true;
    } catch (err) {
      logger.error('Unable to register node with API server', { node: name, err: errorMessage(err) });
      return false;
    }
  }

  /**
   * One status update (upstream tryUpdateNodeStatus): read the Node, compute the status, and patch it
   * when it changed or the report period passed. Errors are logged; the next period retries.
   */
  async syncNodeStatus(force = false): Promise<void> {
    const { api, logger, clock } = this.deps;
    const name = this.options.identity.nodeName;
    try {
      const current = await api.getNode(name);
      this.node = current;
      this.applyPodCidr(current);
      const next = nodeStatus(
        this.options.identity,
        await this.systemInfo(),
        await this.health(),
        current.status,
        clock.now(),
      );
      const now = clock.now();
      if (!force && now - this.lastReportAt < this.reportMs && !nodeStatusChanged(current.status, next))
        return;
      this.node = await api.patchNodeStatus(name, { status: statusPatch(current.status, next) });
      this.lastReportAt = now;
      this.recordConditionEvents(next);
    } catch (err) {
      if (isNotFound(err)) {
        logger.warn('Node object is gone from the API server; registering it again', { node: name });
        this.node = undefined;
        return;
      }
      logger.error('Error updating node status, will retry', { node: name, err: errorMessage(err) });
    }
  }

  /** Node conditions as last computed, for tests and `kubectl describe`-like output. */
  async currentStatus(): Promise<NodeStatus> {
    return nodeStatus(
      this.options.identity,
      await this.systemInfo(),
      await this.health(),
      this.node?.status,
      this.deps.clock.now(),
    );
  }

  private async systemInfo(): Promise<SystemInfo> {
    if (this.system) return this.system;
    let runtimeVersion = 'unknown://unknown';
    try {
      const v = await this.deps.runtime.version({ version: 'v1' });
      runtimeVersion = `${v.runtimeName}://${v.runtimeVersion}`;
    } catch (err) {
      this.deps.logger.warn('Container runtime version unknown', { err: errorMessage(err) });
      return hostSystemInfo(runtimeVersion); // not cached: asked again next time
    }
    this.system = hostSystemInfo(runtimeVersion);
    return this.system;
  }

  private async health(): Promise<NodeHealth> {
    const health: NodeHealth = { pleg: this.deps.pleg(), pressure: { ...this.pressure } };
    try {
      const status = await this.deps.runtime.status({ verbose: false });
      health.runtime = status.status?.conditions ?? [];
    } catch (err) {
      health.runtimeError = errorMessage(err);
    }
    return health;
  }

  /**
   * After registering, a Node without a podCIDR reads it again at 100 ms, doubling, until the first
   * status sync takes over (as upstream's fastStatusUpdateOnce reads it early): the node IPAM controller
   * sets it within moments, so the node's first pods already get IPs from it, and a cluster without one
   * costs a few reads per node.
   */
  private pollPodCidr(): void {
    const { api, clock } = this.deps;
    const until = clock.now() + this.updateMs;
    const attempt = (delay: number) => {
      this.cancelPodCidrPoll = clock.setTimeout(() => {
        if (this.podCidr || !this.loop || this.loop.stopped) return;
        api
          .getNode(this.options.identity.nodeName)
          .then((node) => this.applyPodCidr(node))
          .catch(() => undefined) // the status sync reports an API server that is away
          .finally(() => {
            if (!this.podCidr && clock.now() + delay * 2 < until) attempt(delay * 2);
          });
      }, delay);
    };
    this.cancelPodCidrPoll?.();
    attempt(100);
  }

  private applyPodCidr(node: Node): void {
    const cidr = node.spec?.podCIDRs?.join(',') || node.spec?.podCIDR || '';
    if (!cidr || cidr === this.podCidr) return;
    this.podCidr = cidr;
    this.deps.runtime
      .updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: cidr } } })
      .then(() => this.deps.logger.info('Updated pod CIDR', { podCIDR: cidr }))
      .catch((err) => {
        this.podCidr = '';
        this.deps.logger.warn('Failed to update the runtime pod CIDR', {
          podCIDR: cidr,
          err: errorMessage(err),
        });
      });
  }

  /** NodeReady / NodeNotReady, NodeHasSufficientMemory, … when a condition changes (upstream node events). */
  private recordConditionEvents(status: NodeStatus | undefined): void {
    const recorder = this.deps.recorder;
    if (!recorder) return;
    const name = this.options.identity.nodeName;
    for (const c of status?.conditions ?? []) {
      if (this.reported.get(c.type) === c.status) continue;
      this.reported.set(c.type, c.status);
      const event =
        c.type === 'Ready'
          ? c.status === 'True'
            ? 'NodeReady'
            : 'NodeNotReady'
          : `Node${(c.reason ?? '').replace(/^Kubelet/, '')}`;
      recorder.node('Normal', event, `Node ${name} status is now: ${event}`);
    }
  }
}

/**
 * A merge patch from the API's status to ours: conditions, addresses and other lists are sent whole;
 * fields we no longer report are removed.
 */
export function statusPatch(before: NodeStatus | undefined, after: NodeStatus): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...after };
  // Conditions another writer added (a network plugin's NetworkUnavailable, say) are kept.
  const ours = new Set((after.conditions ?? []).map((c) => c.type));
  const theirs = (before?.conditions ?? []).filter((c) => !ours.has(c.type));
  patch.conditions = [...theirs, ...(after.conditions ?? [])];
  return patch;
}

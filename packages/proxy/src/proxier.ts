import { type Clock, errorMessage, type EventBus, type Logger } from '@nodelet/kernel';
import type { ProxyBackend } from './backend.js';
import { ChangeTracker } from './change-tracker.js';
import { HealthzServer, ProxyHealth, parseBindAddress } from './health.js';
import { MetricsServer, ProxyMetrics } from './metrics.js';
import type { EndpointSlice, Service } from './objects.js';
import type { ProxySource, ProxySourceHandler } from './source.js';
import { type ChangeSet, type NodeContext, type ProxyState, type SyncResult } from './state.js';
import { SyncRunner } from './sync-runner.js';

export interface ProxierOptions {
  node: NodeContext;
  /** Minimum time between two syncs (upstream minSyncPeriod). Default 1 s. */
  minSyncPeriodMs?: number;
  /** Maximum time between two syncs (upstream syncPeriod). Default 30 s. */
  syncPeriodMs?: number;
  /** A full resync at least this often, even without errors (upstream FullSyncPeriod). Default 1 h. */
  fullSyncPeriodMs?: number;
  /** `host:port` of /healthz; '' disables it. Default 127.0.0.1:10256. */
  healthzBindAddress?: string;
  /** `host:port` of /metrics (and /healthz); '' or absent disables it. Upstream's default: 127.0.0.1:10249. */
  metricsBindAddress?: string;
}

export interface ProxierDeps {
  backend: ProxyBackend;
  source?: ProxySource;
  clock: Clock;
  logger: Logger;
  bus?: EventBus;
}

/** What one sync did, for tests and the bench. */
export interface SyncRecord {
  full: boolean;
  ok: boolean;
  durationMs: number;
  changes: ChangeSet;
  result?: SyncResult;
  error?: string;
}

/**
 * The proxy: a source feeds the change tracker; a bounded-frequency runner calls `syncOnce`, which hands
 * the desired state and what changed to the backend.
 *
 *     source ──upsert/delete──► ChangeTracker ──dirty──► SyncRunner (≥ minSyncPeriod apart, ≤ syncPeriod)
 *                                                            │
 *                                  full at start, after an error, every fullSyncPeriod; partial otherwise
 *                                                            ▼
 *                                         backend.sync(state, changes, full) ──► /healthz timestamps
 *
 * A failed sync logs one line, leaves the previous rules in force (backends apply atomically), marks the
 * next sync full and retries after minSyncPeriod, doubling up to syncPeriod while it keeps failing.
 */
export class Proxier {
  readonly tracker: ChangeTracker;
  readonly health: ProxyHealth;
  readonly runner: SyncRunner;
  /** This proxy's metrics (its own registry), fed from the bus. */
  readonly metrics: ProxyMetrics;
  private readonly healthz: HealthzServer;
  private readonly metricsServer: MetricsServer;
  private metricsInfo: { address: string; port: number } | undefined;
  private healthzInfo: { address: string; port: number } | undefined;
  private readonly minSync: number;
  private readonly syncPeriod: number;
  private readonly fullSyncPeriod: number;
  private initialized = false;
  private needFull = true;
  private lastFull = 0;
  private retryDelay = 0;
  private started = false;
  private readonly records: SyncRecord[] = [];
  private readonly waiters: (() => void)[] = [];

  constructor(
    private readonly deps: ProxierDeps,
    private readonly options: ProxierOptions,
  ) {
    this.minSync = options.minSyncPeriodMs ?? 1000;
    this.syncPeriod = options.syncPeriodMs ?? 30_000;
    this.fullSyncPeriod = options.fullSyncPeriodMs ?? 3_600_000;
    this.tracker = new ChangeTracker(options.node, deps.logger.child('tracker'), deps.bus);
    this.health = new ProxyHealth(deps.clock, 2 * this.syncPeriod, deps.backend.name);
    this.healthz = new HealthzServer(this.health, deps.clock, deps.logger);
    this.metrics = new ProxyMetrics(deps.bus);
    this.metricsServer = new MetricsServer(this.metrics, this.health, deps.clock, deps.logger);
    this.runner = new SyncRunner(() => this.syncOnce().then(() => undefined), {
      minIntervalMs: this.minSync,
      maxIntervalMs: this.syncPeriod,
      clock: deps.clock,
    });
  }

  /** The handler a source calls; also usable directly by embedders and tests. */
  readonly handler: ProxySourceHandler = {
    upsertService: (svc: Service) => this.changed(this.tracker.upsertService(svc)),
    deleteService: (svc: Service) => this.changed(this.tracker.deleteService(svc)),
    upsertEndpointSlice: (s: EndpointSlice) => this.changed(this.tracker.upsertEndpointSlice(s)),
    deleteEndpointSlice: (s: EndpointSlice) => this.changed(this.tracker.deleteEndpointSlice(s)),
    synced: () => {
      if (this.initialized) return;
      this.initialized = true;
      this.deps.logger.info('services and endpoint slices listed; syncing rules');
      if (this.started) this.runner.start();
    },
  };

  /** Where /healthz listens, once started (undefined when disabled). */
  get healthzAddress(): { address: string; port: number } | undefined {
    return this.healthzInfo;
  }

  /** Where /metrics listens, once started (undefined when disabled). */
  get metricsAddress(): { address: string; port: number } | undefined {
    return this.metricsInfo;
  }

  get backendName(): string {
    return this.deps.backend.name;
  }

  /** Every sync so far (bounded to the last 100). */
  get syncs(): readonly SyncRecord[] {
    return this.records;
  }

  /** Starts the healthz server and the source; syncing begins once the source has listed everything. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const bind = this.options.healthzBindAddress ?? '127.0.0.1:10256';
    if (bind !== '') {
      const { host, port } = parseBindAddress(bind, 'healthzBindAddress');
      const info = await this.healthz.listen(host, port);
      this.healthzInfo = { address: info.address, port: info.port };
    }
    const metricsBind = this.options.metricsBindAddress ?? '';
    if (metricsBind !== '') {
      const { host, port } = parseBindAddress(metricsBind, 'metricsBindAddress');
      const info = await this.metricsServer.listen(host, port);
      this.metricsInfo = { address: info.address, port: info.port };
    }
    // While the source lists (which takes a while), the backend starts what its first sync will use
    // (the iptables back end's detection, a shell for the first restore); a sync that begins before
    // that is done waits for it in the backend.
    const prepared = this.deps.backend.prepare?.().catch((err: Error) =>
      this.deps.logger.warn('preparing the proxy backend failed; its syncs will retry', {
        err: err.message,
      }),
    );
    if (this.initialized) this.runner.start();
    await Promise.all([prepared, this.deps.source?.start(this.handler)]);
  }

  /** Stops syncing, the source and healthz. Kernel rules stay in force, as upstream. */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.deps.source?.stop();
    await this.runner.stop();
    await this.healthz.close();
    await this.metricsServer.close();
    await this.deps.backend.stop?.();
  }

  /** Marks the next sync full (a new node context, a rules flush seen from outside). */
  forceFullSync(): void {
    this.needFull = true;
    this.runner.run();
  }

  setNode(node: NodeContext): void {
    this.tracker.setNode(node);
    this.forceFullSync();
  }

  /** Resolves after the next sync attempt completes (success or failure). */
  nextSync(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** One sync step: commit the tracker, call the backend, record the outcome. */
  async syncOnce(): Promise<SyncRecord | undefined> {
    if (!this.initialized) return undefined;
    const { clock, logger, backend, bus } = this.deps;
    const start = clock.now();
    const wallStart = performance.now();
    const full = this.needFull || (this.lastFull > 0 && start - this.lastFull >= this.fullSyncPeriod);
    const seen = this.health.syncing();
    const { state, changes } = this.tracker.commit();
    let record: SyncRecord;
    try {
      const result = await backend.sync(state, changes, full);
      const durationMs = performance.now() - wallStart;
      this.needFull = false;
      if (result.full) this.lastFull = clock.now();
      this.retryDelay = 0;
      this.health.updated(result.full, seen);
      record = { full: result.full, ok: true, durationMs, changes, result };
      const level = result.full || changes.updated.size + changes.removed.size > 0 ? 'info' : 'debug';
      logger[level]('synced proxy rules', {
        backend: backend.name,
        full: result.full,
        servicePorts: state.servicePorts.size,
        changed: changes.updated.size + changes.removed.size,
        ms: Math.round(durationMs),
        ...(result.summary ? { summary: result.summary } : {}),
      });
      bus?.emit('[Proxy] Rules Synced', { backend: backend.name, durationMs, full: result.full });
    } catch (err) {
      const message = errorMessage(err);
      const durationMs = performance.now() - wallStart;
      this.needFull = true;
      this.retryDelay = this.retryDelay === 0 ? this.minSync : Math.min(this.retryDelay * 2, this.syncPeriod);
      this.health.failed(message);
      record = { full, ok: false, durationMs, changes, error: message };
      logger.error(
        `${full ? 'full' : 'partial'} sync of ${backend.name} rules failed; the previous rules stay in force; retrying with a full sync in ${this.retryDelay / 1000}s: ${message}`,
      );
      this.runner.retryAfter(this.retryDelay);
    }
    this.records.push(record);
    if (this.records.length > 100) this.records.shift();
    for (const w of this.waiters.splice(0)) w();
    return record;
  }

  /** The state as of the last sync. */
  state(): ProxyState {
    return this.tracker.snapshot();
  }

  private changed(didChange: boolean): void {
    if (!didChange || !this.initialized) return;
    this.health.queued();
    this.runner.run();
  }
}

/**
 * The proxy's Prometheus metrics, with upstream's names (pkg/proxy/metrics/metrics.go), in a registry
 * of its own per proxy, fed by observing the bus; and the server that serves them on
 * `metricsBindAddress` (upstream 127.0.0.1:10249) with `/healthz` beside them, as upstream does.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type Clock,
  closeHttp,
  type EventBus,
  hardenHttpServer,
  listenHttp,
  type Logger,
} from '@nodelet/kernel';
import { Counter, Gauge, Histogram, Registry } from './prom-client-parts.js';
import type { Subscription } from 'rxjs';
import { healthzBody, type ProxyHealth } from './health.js';
import './events.js';

/** Upstream's buckets: exponential from 1 ms, factor 2, 15 buckets. */
const SYNC_BUCKETS = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);
/** Upstream's network programming buckets: 0.25 s … 30 s, then 1 … 5 min. */
const PROGRAMMING_BUCKETS = [
  ...Array.from({ length: 20 }, (_, i) => 0.25 * (i + 1)),
  ...Array.from({ length: 9 }, (_, i) => 6 + i * 3),
  60,
  120,
  180,
  240,
  300,
];

export class ProxyMetrics {
  readonly registry = new Registry();
  readonly syncDuration: Histogram;
  readonly syncFullDuration: Histogram;
  readonly syncPartialDuration: Histogram;
  readonly lastTimestamp: Gauge;
  readonly lastQueuedTimestamp: Gauge;
  readonly programmingDuration: Histogram;
  readonly endpointChanges: Counter;
  readonly serviceChanges: Counter;
  private readonly subscriptions: Subscription[] = [];
  /** When the oldest endpoint change not yet programmed arrived (ms). */
  private pendingSince: number | undefined;

  constructor(bus: EventBus | undefined) {
    const registers = [this.registry];
    const histogram = (name: string, help: string, buckets = SYNC_BUCKETS) =>
      new Histogram({ name, help, buckets, registers });
    this.syncDuration = histogram(
      'kubeproxy_sync_proxy_rules_duration_seconds',
      'SyncProxyRules latency in seconds',
    );
    this.syncFullDuration = histogram(
      'kubeproxy_sync_full_proxy_rules_duration_seconds',
      'SyncProxyRules latency in seconds for full resyncs',
    );
    this.syncPartialDuration = histogram(
      'kubeproxy_sync_partial_proxy_rules_duration_seconds',
      'SyncProxyRules latency in seconds for partial resyncs',
    );
    this.lastTimestamp = new Gauge({
      name: 'kubeproxy_sync_proxy_rules_last_timestamp_seconds',
      help: 'The last time proxy rules were successfully synced',
      registers,
    });
    this.lastQueuedTimestamp = new Gauge({
      name: 'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds',
      help: 'The last time a sync of proxy rules was queued',
      registers,
    });
    this.programmingDuration = histogram(
      'kubeproxy_network_programming_duration_seconds',
      'In Cluster Network Programming Latency in seconds',
      PROGRAMMING_BUCKETS,
    );
    this.endpointChanges = new Counter({
      name: 'kubeproxy_sync_proxy_rules_endpoint_changes_total',
      help: 'Cumulative proxy rules Endpoint changes',
      registers,
    });
    this.serviceChanges = new Counter({
      name: 'kubeproxy_sync_proxy_rules_service_changes_total',
      help: 'Cumulative proxy rules Service changes',
      registers,
    });
    if (bus) this.observe(bus);
  }

  private observe(bus: EventBus): void {
    this.subscriptions.push(
      bus.subscribe(['[Proxy] Endpoints Changed', '[Proxy] Service Changed'], (e) => {
        if (e.type === '[Proxy] Endpoints Changed') this.endpointChanges.inc();
        else this.serviceChanges.inc();
        this.lastQueuedTimestamp.set(e.at / 1000);
        this.pendingSince ??= e.at;
      }),
      bus.subscribe('[Proxy] Rules Synced', (e) => {
        const seconds = e.durationMs / 1000;
        this.syncDuration.observe(seconds);
        (e.full ? this.syncFullDuration : this.syncPartialDuration).observe(seconds);
        this.lastTimestamp.set(e.at / 1000);
        // From the change (as the proxy saw it arrive) to the rules that carry it.
        if (this.pendingSince !== undefined)
          this.programmingDuration.observe((e.at - this.pendingSince) / 1000);
        this.pendingSince = undefined;
      }),
    );
  }

  stop(): void {
    for (const s of this.subscriptions.splice(0)) s.unsubscribe();
  }
}

/** `/metrics` and `/healthz` on the proxy's metrics address. */
export class MetricsServer {
  private server: Server | undefined;

  constructor(
    private readonly metrics: ProxyMetrics,
    private readonly health: ProxyHealth,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async listen(host: string, port: number): Promise<AddressInfo> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/metrics') {
        this.metrics.registry.metrics().then(
          (body) => res.writeHead(200, { 'content-type': this.metrics.registry.contentType }).end(body),
          (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`),
        );
      } else if (path === '/healthz' || path === '/livez') {
        const s = this.health.snapshot();
        res
          .writeHead(s.healthy ? 200 : 503, { 'content-type': 'application/json' })
          .end(JSON.stringify(healthzBody(s, this.clock.now())) + '\n');
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found\n');
      }
    });
    hardenHttpServer(server);
    const info = await listenHttp(
      server,
      port,
      host,
      `metrics address ${host}:${port} is already in use; choose another with --metrics-bind-address or the config field metricsBindAddress ("" disables it)`,
    );
    this.server = server;
    this.logger.info('proxy metrics listening', { address: `${info.address}:${info.port}` });
    return info;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await closeHttp(server);
  }
}

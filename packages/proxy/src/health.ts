import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Clock, closeHttp, hardenHttpServer, listenHttp, type Logger } from '@nodelet/kernel';

/** The proxy's sync timestamps (clock milliseconds; 0 = never). */
export interface ProxyHealthSnapshot {
  healthy: boolean;
  backend: string;
  /** A sync was asked for (a change arrived) and not yet done, since this time. */
  lastQueued: number;
  /** The last successful sync, full or partial. */
  lastUpdated: number;
  lastFullSync: number;
  lastPartialSync: number;
  lastError?: { at: number; message: string };
  syncs: number;
  failures: number;
}

/**
 * Health of the proxy as upstream's ProxierHealthServer judges it: unhealthy when a sync was queued and
 * nothing has been synced for `healthTimeoutMs` since (upstream: 2 × syncPeriod).
 */
export class ProxyHealth {
  lastQueued = 0;
  lastUpdated = 0;
  lastFullSync = 0;
  lastPartialSync = 0;
  lastError: { at: number; message: string } | undefined;
  syncs = 0;
  failures = 0;
  private pending = false;
  private seq = 0;

  constructor(
    private readonly clock: Clock,
    private readonly healthTimeoutMs: number,
    readonly backend: string,
  ) {}

  /** A change arrived that needs a sync. */
  queued(): void {
    this.seq++;
    if (!this.pending) {
      this.pending = true;
      this.lastQueued = this.clock.now();
    }
  }

  /** Call when a sync takes its snapshot; pass the result to `updated`. */
  syncing(): number {
    return this.seq;
  }

  /** A sync succeeded; it covered the changes queued up to `seenSeq`. */
  updated(full: boolean, seenSeq = this.seq): void {
    const now = this.clock.now();
    this.lastUpdated = now;
    if (full) this.lastFullSync = now;
    else this.lastPartialSync = now;
    if (seenSeq === this.seq) this.pending = false;
    else this.lastQueued = now;
    this.syncs++;
  }

  failed(message: string): void {
    this.lastError = { at: this.clock.now(), message };
    this.failures++;
  }

  snapshot(): ProxyHealthSnapshot {
    const now = this.clock.now();
    const healthy = !this.pending || now - this.lastQueued < this.healthTimeoutMs;
    return {
      healthy,
      backend: this.backend,
      lastQueued: this.lastQueued,
      lastUpdated: this.lastUpdated,
      lastFullSync: this.lastFullSync,
      lastPartialSync: this.lastPartialSync,
      ...(this.lastError ? { lastError: this.lastError } : {}),
      syncs: this.syncs,
      failures: this.failures,
    };
  }
}

const iso = (ms: number) => (ms > 0 ? new Date(ms).toISOString() : null);

/** The body of `/healthz`: upstream's fields (`lastUpdated`, `currentTime`) plus nodelet's sync timestamps. */
export function healthzBody(s: ProxyHealthSnapshot, now: number): Record<string, unknown> {
  return {
    lastUpdated: iso(s.lastUpdated),
    currentTime: new Date(now).toISOString(),
    nodeEligible: true,
    backend: s.backend,
    lastQueued: iso(s.lastQueued),
    lastFullSync: iso(s.lastFullSync),
    lastPartialSync: iso(s.lastPartialSync),
    syncs: s.syncs,
    failures: s.failures,
    ...(s.lastError ? { lastError: { at: iso(s.lastError.at), message: s.lastError.message } } : {}),
  };
}

/** `host:port` → parts; `:10256` means every address. */
export function parseBindAddress(value: string, field: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(value);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new Error(`${field}: "${value}" is not host:port, e.g. 127.0.0.1:10256`);
  const host = m[1]!.replace(/^\[(.*)\]$/, '$1');
  return { host: host === '' ? '0.0.0.0' : host, port };
}

/** `/healthz` (200 healthy, 503 not, JSON body) and `/livez` on the proxy's health port (upstream 10256). */
export class HealthzServer {
  private server: Server | undefined;

  constructor(
    private readonly health: ProxyHealth,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async listen(host: string, port: number): Promise<AddressInfo> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/healthz' || path === '/livez') {
        const s = this.health.snapshot();
        res
          .writeHead(s.healthy ? 200 : 503, {
            'content-type': 'application/json',
            'x-content-type-options': 'nosniff',
          })
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
      `healthz address ${host}:${port} is already in use; choose another with --healthz-bind-address or the config field healthzBindAddress ("" disables it)`,
    );
    this.server = server;
    this.logger.info('proxy healthz listening', { address: `${info.address}:${info.port}` });
    return info;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await closeHttp(server);
  }
}

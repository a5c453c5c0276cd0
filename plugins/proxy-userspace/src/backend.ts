import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';
import type { Clock, Logger, Loop } from '@nodelet/kernel';
import {
  type ChangeSet,
  type EndpointInfo,
  type ProxyBackend,
  type ProxyState,
  type ServicePortState,
  selectEndpoints,
  type SyncResult,
} from '@nodelet/proxy';
import { RoundRobin } from './balancer.js';
import { adoptWithOnRead, connectRelayed, join, relayReads } from './relay.js';

export interface UserspaceBackendOptions {
  clock: Clock;
  logger: Logger;
  /** Address the proxy listens on for every service. Default 127.0.0.1. */
  listenAddress?: string;
  /**
   * `service`: listen on the service's own port (and node port), falling back to a free port when that
   * one is taken or needs root; `ephemeral`: always a free port. Default `service`.
   */
  ports?: 'service' | 'ephemeral';
  /** Listen on the node port of NodePort services too. Default true. */
  nodePorts?: boolean;
  /** Most concurrent UDP sessions per service port; the least recently used is dropped beyond. Default 1024. */
  udpSessionLimit?: number;
  /** A UDP session idle this long is closed. Default 60 s. */
  udpIdleMs?: number;
  /** Connecting to an endpoint gives up after this long and tries the next one. Default 3 s. */
  connectTimeoutMs?: number;
}

export interface ListenerInfo {
  servicePort: string;
  kind: 'cluster' | 'nodePort';
  protocol: 'TCP' | 'UDP';
  address: string;
  port: number;
  /** Listening now; false while the service has no endpoints (connections are refused). */
  open: boolean;
}

interface UdpSession {
  socket: UdpSocket;
  last: number;
}

/** One proxied (service port, kind): a TCP server or a UDP socket, and its endpoint picker. */
class Listener {
  readonly balancer: RoundRobin;
  private server: Server | undefined;
  private udp: UdpSocket | undefined;
  private readonly sessions = new Map<string, UdpSession>();
  private readonly sockets = new Set<Socket>();
  port = 0;
  wantedPort: number;
  connections = 0;

  constructor(
    readonly key: string,
    readonly servicePort: string,
    readonly kind: 'cluster' | 'nodePort',
    readonly protocol: 'TCP' | 'UDP',
    readonly address: string,
    wantedPort: number,
    private readonly options: Required<Omit<UserspaceBackendOptions, 'clock' | 'logger'>> & {
      clock: Clock;
      logger: Logger;
    },
  ) {
    this.wantedPort = wantedPort;
    this.balancer = new RoundRobin(options.clock);
  }

  get open(): boolean {
    return !!this.server || !!this.udp;
  }

  async listen(): Promise<void> {
    if (this.open) return;
    const tryPort = async (port: number) =>
      this.protocol === 'TCP' ? this.listenTcp(port) : this.listenUdp(port);
    try {
      await tryPort(this.port || this.wantedPort);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (this.port !== 0 || (code !== 'EACCES' && code !== 'EADDRINUSE')) throw err;
      await tryPort(0);
      this.options.logger.warn(
        `${this.servicePort} (${this.kind}) listens on ${this.address}:${this.port}: port ${this.wantedPort} ${code === 'EACCES' ? 'needs root' : 'is in use'}`,
      );
    }
  }

  private listenTcp(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      // Half-open connections are carried as they are: a client may close its side and still read the reply.
      const server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) =>
        this.accept(client),
      );
      server.once('error', reject);
      server.listen({ port, host: this.address, exclusive: true }, () => {
        server.off('error', reject);
        server.on('error', (err) =>
          this.options.logger.warn('listener error', { servicePort: this.servicePort, err: err.message }),
        );
        this.server = server;
        this.port = (server.address() as { port: number }).port;
        resolve();
      });
    });
  }

  private listenUdp(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket = createSocket('udp4');
      socket.once('error', reject);
      socket.on('message', (msg, from) => this.datagram(msg, from));
      socket.bind({ port, address: this.address, exclusive: true }, () => {
        socket.off('error', reject);
        socket.on('error', (err) =>
          this.options.logger.warn('listener error', { servicePort: this.servicePort, err: err.message }),
        );
        this.udp = socket;
        this.port = socket.address().port;
        resolve();
      });
    });
  }

  /** Stops accepting; existing TCP connections keep running unless `dropConnections`. */
  async close(dropConnections = false): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    if (this.udp) {
      this.udp.close();
      this.udp = undefined;
    }
    for (const s of this.sessions.values()) s.socket.close();
    this.sessions.clear();
    if (dropConnections) for (const s of this.sockets) s.destroy();
  }

  private accept(accepted: Socket): void {
    const clientIP = (accepted.remoteAddress ?? '').replace(/^::ffff:/, '');
    accepted.on('error', () => undefined);
    // The client's bytes wait in the kernel until an endpoint accepted the connection (they go to
    // whichever does): the socket is paused from the start (pauseOnConnect) until `join`.
    let upstream: Socket | undefined;
    const client: Socket =
      adoptWithOnRead(
        accepted,
        relayReads(
          () => client,
          () => upstream!,
        ),
      ) ?? accepted;
    const streams = client === accepted; // this Node cannot read into our buffers: relay with streams
    client.on('error', () => undefined);
    const tried = new Set<string>();
    const attempt = () => {
      const ep = this.balancer.pick(clientIP, tried);
      if (!ep) {
        client.destroy();
        return;
      }
      tried.add(ep.endpoint);
      const conn = connectRelayed(ep.ip, ep.port, () => client);
      const timeout = this.options.clock.deadline(this.options.connectTimeoutMs);
      timeout.signal.addEventListener('abort', () => conn.destroy(new Error('connect timeout')), {
        once: true,
      });
      const onConnectError = () => {
        timeout.cancel();
        conn.destroy();
        attempt();
      };
      conn.once('error', onConnectError);
      conn.once('connect', () => {
        timeout.cancel();
        conn.off('error', onConnectError);
        if (client.destroyed) {
          conn.destroy();
          return;
        }
        upstream = conn;
        if (streams) client.pipe(conn);
        join(client, conn);
        this.connections++;
        this.sockets.add(client);
        client.once('close', () => this.sockets.delete(client));
      });
    };
    attempt();
  }

  private datagram(msg: Buffer, from: RemoteInfo): void {
    const key = `${from.address}:${from.port}`;
    const now = this.options.clock.now();
    let session = this.sessions.get(key);
    if (session) {
      this.sessions.delete(key);
      this.sessions.set(key, session);
      session.last = now;
    } else {
      const ep = this.balancer.pick(from.address);
      if (!ep) return;
      while (this.sessions.size >= this.options.udpSessionLimit) {
        const [oldest, s] = this.sessions.entries().next().value as [string, UdpSession];
        s.socket.close();
        this.sessions.delete(oldest);
      }
      const socket = createSocket('udp4');
      socket.on('error', () => {
        socket.close();
        this.sessions.delete(key);
      });
      socket.on('message', (reply) => {
        const s = this.sessions.get(key);
        if (s) s.last = this.options.clock.now();
        this.udp?.send(reply, from.port, from.address);
      });
      socket.connect(ep.port, ep.ip);
      session = { socket, last: now };
      this.sessions.set(key, session);
    }
    const s = session.socket;
    const send = () => s.send(msg, (err) => err && undefined);
    try {
      s.remoteAddress();
      send();
    } catch {
      s.once('connect', send);
    }
  }

  /** Closes UDP sessions idle longer than `udpIdleMs`. */
  sweep(): void {
    const cutoff = this.options.clock.now() - this.options.udpIdleMs;
    for (const [key, s] of this.sessions) {
      if (s.last < cutoff) {
        s.socket.close();
        this.sessions.delete(key);
      }
    }
  }

  get sessionCount(): number {
    return this.sessions.size;
  }
}

/**
 * The userspace backend: nodelet carries the traffic itself. Each service port gets a listener (on the
 * service's port at `listenAddress`, or a free port) that splices TCP connections to an endpoint chosen
 * round-robin (or by ClientIP affinity), and relays UDP with a bounded session table. Works without
 * root. A service without endpoints has its listener closed, so connections are refused, not left
 * hanging. Nothing outlives the process: `cleanup` and `stop` close every listener.
 */
export class UserspaceBackend implements ProxyBackend {
  readonly name = 'userspace';
  private readonly listeners = new Map<string, Listener>();
  private readonly options: Required<Omit<UserspaceBackendOptions, 'clock' | 'logger'>> & {
    clock: Clock;
    logger: Logger;
  };
  private sweep: Loop | undefined;

  constructor(options: UserspaceBackendOptions) {
    this.options = {
      listenAddress: '127.0.0.1',
      ports: 'service',
      nodePorts: true,
      udpSessionLimit: 1024,
      udpIdleMs: 60_000,
      connectTimeoutMs: 3000,
      ...options,
    };
  }

  /** Every listener: where to connect for each service port. */
  list(): ListenerInfo[] {
    return [...this.listeners.values()].map((l) => ({
      servicePort: l.servicePort,
      kind: l.kind,
      protocol: l.protocol,
      address: l.address,
      port: l.port || l.wantedPort,
      open: l.open,
    }));
  }

  /** Where a service port is served (`kind` cluster by default). */
  addressOf(
    servicePort: string,
    kind: 'cluster' | 'nodePort' = 'cluster',
  ): { address: string; port: number } | undefined {
    const l = this.listeners.get(`${servicePort}|${kind}`);
    return l ? { address: l.address, port: l.port || l.wantedPort } : undefined;
  }

  /** UDP sessions open now, per service port (for tests of the bound). */
  udpSessions(servicePort: string): number {
    return this.listeners.get(`${servicePort}|cluster`)?.sessionCount ?? 0;
  }

  async sync(state: ProxyState, changes: ChangeSet, full: boolean): Promise<SyncResult> {
    this.ensureSweep();
    let written = 0;
    const names = full
      ? new Set([...state.servicePorts.keys(), ...[...this.listeners.values()].map((l) => l.servicePort)])
      : new Set([...changes.updated, ...changes.removed]);
    const errors: string[] = [];
    for (const name of names) {
      const p = state.servicePorts.get(name);
      for (const kind of ['cluster', 'nodePort'] as const) {
        const key = `${name}|${kind}`;
        const wanted = p && this.wants(p, kind);
        const existing = this.listeners.get(key);
        if (!wanted) {
          if (existing) {
            await existing.close(true);
            this.listeners.delete(key);
            written++;
          }
          continue;
        }
        const port = this.options.ports === 'service' ? (kind === 'cluster' ? p.port : p.nodePort) : 0;
        let l = existing;
        if (l && (l.protocol !== p.protocol || l.wantedPort !== port)) {
          await l.close(true);
          this.listeners.delete(key);
          l = undefined;
        }
        if (!l) {
          l = new Listener(
            key,
            name,
            kind,
            p.protocol as 'TCP' | 'UDP',
            this.options.listenAddress,
            port,
            this.options,
          );
          this.listeners.set(key, l);
        }
        const endpoints = this.endpointsFor(p, kind);
        l.balancer.update(endpoints, p.sessionAffinity === 'ClientIP' ? p.stickyMaxAgeSeconds : 0);
        try {
          if (endpoints.length > 0 && !l.open) {
            await l.listen();
            written++;
          } else if (endpoints.length === 0 && l.open) {
            await l.close();
            written++;
          }
        } catch (err) {
          errors.push(
            `${name} (${kind}) on ${this.options.listenAddress}:${port}: ${(err as Error).message}`,
          );
        }
      }
    }
    if (errors.length > 0) throw new Error(`cannot listen: ${errors.join('; ')}`);
    return {
      full,
      written,
      summary: `${[...this.listeners.values()].filter((l) => l.open).length} listeners open`,
    };
  }

  private wants(p: ServicePortState, kind: 'cluster' | 'nodePort'): boolean {
    if (p.protocol === 'SCTP') {
      this.options.logger.once(
        `userspace-sctp:${p.name}`,
        'warn',
        'the userspace proxy does not carry SCTP; skipping',
        { servicePort: p.name },
      );
      return false;
    }
    return kind === 'cluster' ? true : this.options.nodePorts && p.nodePort > 0;
  }

  /** Endpoints for traffic of `kind`, by the traffic policy (as the kernel backends choose them). */
  private endpointsFor(p: ServicePortState, kind: 'cluster' | 'nodePort'): readonly EndpointInfo[] {
    const sel = selectEndpoints(p);
    return kind === 'cluster' ? sel.internal : sel.external;
  }

  private ensureSweep(): void {
    if (this.sweep) return;
    const period = Math.max(1000, this.options.udpIdleMs / 2);
    this.sweep = this.options.clock.loop(
      () => {
        for (const l of this.listeners.values()) l.sweep();
      },
      { period, initialDelay: period },
    );
  }

  async cleanup(): Promise<void> {
    await this.stop();
  }

  async stop(): Promise<void> {
    this.sweep?.stop();
    this.sweep = undefined;
    for (const l of this.listeners.values()) await l.close(true);
    this.listeners.clear();
  }
}

/**
 * The fake runtime's streaming server, like containerd's: CRI Exec/Attach/PortForward get a one-time
 * URL on 127.0.0.1 (a free port, started on first use), and the upgrade to that URL is served with
 * the kubelet's streaming protocols (SPDY and WebSocket).
 *
 * Port-forward reaches a per-pod in-process echo: bytes written come back, except that a connection
 * starting with an HTTP request line gets a small page naming the pod and the port, then is closed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { randomBytes } from 'node:crypto';
import {
  handleAttachUpgrade,
  handleExecUpgrade,
  handlePortForwardUpgrade,
  type PortForwardHandler,
  rejectUpgrade,
  type RemoteCommandHandler,
} from '@nodelet/streaming';

type Session =
  | { kind: 'exec' | 'attach'; handler: RemoteCommandHandler; request: StreamRequest }
  | { kind: 'portforward'; handler: PortForwardHandler };

/** What the CRI Exec/Attach request asked for; the URL's token stands for it, as in containerd. */
export interface StreamRequest {
  cmd?: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** The request as the protocol code reads it (the query of an exec URL). */
function requestQuery(r: StreamRequest): string {
  const q = new URLSearchParams();
  for (const c of r.cmd ?? []) q.append('command', c);
  for (const name of ['stdin', 'stdout', 'stderr', 'tty'] as const) if (r[name]) q.set(name, '1');
  return q.toString();
}

export class FakeStreamingServer {
  private server?: Promise<{ server: http.Server; base: string }>;
  private readonly sessions = new Map<string, Session>();

  /** A one-time URL for `session`: the token is forgotten once a client has used it. */
  async url(session: Session): Promise<string> {
    const { base } = await this.start();
    const token = randomBytes(6).toString('base64url');
    this.sessions.set(token, session);
    return `${base}/${session.kind}/${token}`;
  }

  close(): void {
    void this.server?.then(({ server }) => {
      server.closeAllConnections();
      server.close();
    });
    this.server = undefined;
    this.sessions.clear();
  }

  private start(): Promise<{ server: http.Server; base: string }> {
    this.server ??= new Promise((resolve, reject) => {
      const server = http.createServer((_req, res) => res.writeHead(404).end('unknown streaming token\n'));
      server.on('upgrade', (req, socket, head) => this.route(req, socket, head));
      server.on('clientError', (_err, socket) => socket.destroy());
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.unref(); // a forgotten runtime does not keep the process alive
        resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
      });
    });
    return this.server;
  }

  private route(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const [, kind, token] = /^\/([a-z]+)\/([A-Za-z0-9_-]+)(?:\?|$)/.exec(req.url ?? '') ?? [];
    const session = token === undefined ? undefined : this.sessions.get(token);
    if (!session || session.kind !== kind)
      return rejectUpgrade(socket, 404, 'unknown or used streaming token');
    this.sessions.delete(token!);
    // The streams come from the CRI request the token was made for, not from the client.
    if (session.kind !== 'portforward') req.url = `/${kind}/${token}?${requestQuery(session.request)}`;
    if (session.kind === 'portforward') handlePortForwardUpgrade(req, socket, head, session.handler);
    else if (session.kind === 'exec') handleExecUpgrade(req, socket, head, session.handler);
    else handleAttachUpgrade(req, socket, head, session.handler);
  }
}

const HTTP_REQUEST_LINE = /^[A-Z]+ \S+ HTTP\/1\.[01]\r?\n/;

/** The per-pod echo that port-forward reaches (see the module comment). */
export function podEcho(pod: { namespace: string; name: string }): PortForwardHandler {
  return {
    forward(port: number, connection: Duplex): Promise<void> {
      return new Promise((resolve) => {
        let first = true;
        connection.on('data', (chunk: Buffer) => {
          if (first && HTTP_REQUEST_LINE.test(chunk.toString('latin1', 0, 512))) {
            const body = `<html><body>pod ${pod.namespace}/${pod.name}, port ${port} (runtime-fake)</body></html>\n`;
            connection.end(
              `HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
                `Connection: close\r\n\r\n${body}`,
            );
          } else if (!connection.writableEnded) connection.write(chunk);
          first = false;
        });
        connection.on('end', () => {
          if (!connection.writableEnded) connection.end();
        });
        connection.on('close', () => resolve());
        connection.on('error', () => resolve());
      });
    },
  };
}

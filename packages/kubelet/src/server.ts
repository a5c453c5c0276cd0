import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage, hardenHttpServer, type Logger } from '@nodelet/kernel';
import { findContainerLog, followContainerLog, readContainerLog, tailLines } from './container-logs.js';
import type { Kubelet } from './kubelet.js';

/**
 * The kubelet's read-only HTTP endpoint (upstream `readOnlyPort`, 10255): `/healthz` and `/pods` (a
 * PodList with every pod's current status). `nodelet get pods` reads it. A nodelet addition,
 * `/pods/<namespace>/<name>/events`, serves the pod's last events (probe failures and the kills they
 * caused) as a v1 EventList — without an API server there is nowhere else to read them; `nodelet
 * describe pod` prints them. `/containerLogs/<namespace>/<pod>/<container>` serves a container's log as
 * upstream's kubelet does (query `previous`, `follow`, `tailLines`), as plain text; `nodelet logs` reads it.
 */
export class ReadOnlyServer {
  private server?: Server;

  constructor(
    private readonly kubelet: Kubelet,
    private readonly logger: Logger,
  ) {}

  async listen(port: number, address = '127.0.0.1'): Promise<AddressInfo> {
    const server = createServer((req, res) => {
      try {
        this.route(req, res);
      } catch (err) {
        // No request may take the kubelet down: what a handler did not expect is a 500 for this one only.
        this.logger.warn('request failed', { path: req.url, err: errorMessage(err) });
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`${errorMessage(err)}\n`);
      }
    });
    hardenHttpServer(server);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          err.code === 'EADDRINUSE'
            ? new Error(
                `read-only port ${port} on ${address} is already in use; choose another with the flag --read-only-port or the config field readOnlyPort (0 disables it)`,
              )
            : err,
        ),
      );
      server.listen(port, address, () => resolve());
    });
    const info = server.address() as AddressInfo;
    this.logger.info('read-only server listening', { address: `${info.address}:${info.port}` });
    return info;
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    const [path, query] = (req.url ?? '/').split('?') as [string, string | undefined];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    if (path === '/healthz') {
      const { healthy, message } = this.kubelet.healthz();
      res
        .writeHead(healthy ? 200 : 500, { 'content-type': 'text/plain' })
        .end(healthy ? 'ok' : `${message}\n`);
    } else if (path?.startsWith('/pods/') && path.endsWith('/events')) {
      // /pods/<namespace>/<name>/events: the pod's last events (probe failures, the kills they caused).
      const parts = pathSegments(path);
      if (!parts) return badEscape(res, path);
      const events = parts.length === 4 ? this.kubelet.podEvents(parts[1]!, parts[2]!) : undefined;
      if (events) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(events));
      else res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found\n');
    } else if (path.startsWith('/containerLogs/')) {
      this.containerLogs(path, new URLSearchParams(query ?? ''), req, res).catch((err: unknown) => {
        this.logger.warn('serving container logs failed', { path, err: errorMessage(err) });
        res.destroy();
      });
    } else if (path === '/pods' || path === '/pods/') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.kubelet.podList()));
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found\n');
    }
  }

  /** `/containerLogs/<namespace>/<pod>/<container>?previous=true&follow=true&tailLines=N`. */
  private async containerLogs(
    path: string,
    query: URLSearchParams,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const text = { 'content-type': 'text/plain; charset=utf-8' };
    const fail = (status: number, message: string) => {
      if (!res.headersSent) res.writeHead(status, text);
      res.end(`${message}\n`);
    };
    const segments = pathSegments(path);
    if (!segments) return badEscape(res, path);
    const parts = segments.slice(1);
    if (parts.length !== 3 || parts.some((p) => !p)) {
      fail(400, 'want /containerLogs/<namespace>/<pod>/<container>');
      return;
    }
    const [namespace, pod, container] = parts as [string, string, string];
    const flag = (name: string) => query.get(name) === 'true' || query.get(name) === '1';
    const tail = query.get('tailLines');
    if (tail !== null && !/^\d+$/.test(tail)) {
      fail(400, `tailLines must be a non-negative integer, got ${JSON.stringify(tail)}`);
      return;
    }
    try {
      const target = await findContainerLog(this.kubelet, namespace, pod, container, flag('previous'));
      if (!target.found) {
        fail(target.status, target.message);
        return;
      }
      let read: { text: string; offset: number };
      try {
        read = await readContainerLog(target.path);
      } catch (err) {
        fail(400, `failed to read the log of container "${container}" in pod "${pod}": ${errorMessage(err)}`);
        return;
      }
      res.writeHead(200, text);
      res.write(tailLines(read.text, tail === null ? undefined : Number(tail)));
      if (!flag('follow') || flag('previous')) {
        res.end();
        return;
      }
      const abort = new AbortController();
      req.once('close', () => abort.abort());
      res.once('close', () => abort.abort());
      const isRunning = async () =>
        (await this.kubelet.kubeRuntime.getPodStatus(target.uid, pod, namespace)).containers.some(
          (c) => c.id === target.containerId && c.state === 'running',
        );
      await followContainerLog(target.path, read.offset, (t) => res.write(t), isRunning, abort.signal, {
        clock: this.kubelet.clock,
      });
      res.end();
    } catch (err) {
      this.logger.warn('serving container logs failed', { path, err: errorMessage(err) });
      fail(500, errorMessage(err));
    }
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The path's segments after the leading `/`, percent-decoded; undefined when an escape is malformed. */
function pathSegments(path: string): string[] | undefined {
  try {
    return path.split('/').slice(1).map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

function badEscape(res: ServerResponse, path: string): void {
  res
    .writeHead(400, { 'content-type': 'text/plain' })
    .end(`malformed percent-escape in the path ${JSON.stringify(path)}\n`);
}

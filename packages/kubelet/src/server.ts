import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@nodelet/kernel';
import type { Kubelet } from './kubelet.js';

/**
 * The kubelet's read-only HTTP endpoint (upstream `readOnlyPort`, 10255): `/healthz` and `/pods` (a
 * PodList with every pod's current status). `nodelet get pods` reads it. A nodelet addition,
 * `/pods/<namespace>/<name>/events`, serves the pod's last events (probe failures and the kills they
 * caused) as a v1 EventList — without an API server there is nowhere else to read them; `nodelet
 * describe pod` prints them.
 */
export class ReadOnlyServer {
  private server?: Server;

  constructor(
    private readonly kubelet: Kubelet,
    private readonly logger: Logger,
  ) {}

  async listen(port: number, address = '127.0.0.1'): Promise<AddressInfo> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
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
        const parts = path.split('/');
        const events =
          parts.length === 5
            ? this.kubelet.podEvents(decodeURIComponent(parts[2]!), decodeURIComponent(parts[3]!))
            : undefined;
        if (events) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(events));
        else res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found\n');
      } else if (path === '/pods' || path === '/pods/') {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(this.kubelet.podList()));
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found\n');
      }
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          err.code === 'EADDRINUSE'
            ? new Error(
                `readOnlyPort ${port} on ${address} is already in use; choose another with readOnlyPort (0 disables it)`,
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

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage, hardenHttpServer, type Logger } from '@nodelet/kernel';
import { badEscape, parseRequestUrl, type RouteTable, sendText } from './routes.js';

/**
 * The kubelet's read-only port (upstream `readOnlyPort`, 10255 as a flag, off in a config file): plain
 * HTTP without authentication, serving only what upstream serves there — the routes marked readOnly
 * (healthz, pods, spec, stats, metrics). Container logs, node logs and exec are not reachable here.
 */
export class ReadOnlyServer {
  private server?: Server;

  constructor(
    private readonly table: RouteTable,
    private readonly logger: Logger,
  ) {}

  async listen(port: number, address = '127.0.0.1'): Promise<AddressInfo> {
    const server = createServer((req, res) => {
      const { path, segments, query } = parseRequestUrl(req.url);
      if (!segments) return sendText(res, 400, badEscape(path));
      this.table
        .serve(req, res, { path, segments, query }, this.table.find(path, true))
        .catch((err: unknown) => {
          this.logger.warn('request failed', { path, err: errorMessage(err) });
          res.destroy();
        });
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

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

import { rejectUpgrade } from '@nodelet/streaming';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SecureContextOptions, SecureVersion } from 'node:tls';
import { errorMessage, hardenHttpServer, type Logger } from '@nodelet/kernel';
import type { KubeletAuthenticator } from './authn.js';
import type { KubeletAuthorizer } from './authz.js';
import { checkRequest } from './request-auth.js';
import { badEscape, parseRequestUrl, type RouteTable, sendText } from './routes.js';
import type { CertKeyPair } from './serving-cert.js';

export interface SecureServerOptions {
  /** `address` (0.0.0.0) and `port` (10250); port 0 picks a free one. */
  address: string;
  port: number;
  nodeName: string;
  serving: CertKeyPair;
  /** The client CA bundle (PEM) of `authentication.x509.clientCAFile`; client certificates are checked against it. */
  clientCA?: string;
  /** `tlsMinVersion` as Node names it (TLSv1.2 …). */
  minVersion?: SecureVersion;
  /** An OpenSSL cipher list (`tlsCipherSuites`). */
  ciphers?: string;
  authenticator: KubeletAuthenticator;
  authorizer: KubeletAuthorizer;
}

/**
 * The kubelet's API on 10250: HTTPS, every request (upgrades too) authenticated and authorized as
 * upstream's kubelet does, then served by the route table. It asks for a client certificate but does
 * not require one (a bearer token or anonymous may do); `setServingCertificate` swaps the certificate
 * of the live server, for rotation: new connections get it, open ones keep theirs.
 */
export class KubeletSecureServer {
  private server?: Server;
  private serving: CertKeyPair;

  constructor(
    private readonly table: RouteTable,
    private readonly o: SecureServerOptions,
    private readonly logger: Logger,
  ) {
    this.serving = o.serving;
  }

  async listen(): Promise<AddressInfo> {
    const server = createServer(
      { ...this.context(), requestCert: true, rejectUnauthorized: false },
      (req, res) => void this.handle(req, res),
    );
    server.on(
      'upgrade',
      (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.upgrade(req, socket, head),
    );
    server.on('tlsClientError', (err) =>
      this.logger.debug('TLS handshake failed', { err: errorMessage(err) }),
    );
    hardenHttpServer(server);
    this.server = server;
    const { port, address } = this.o;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          err.code === 'EADDRINUSE'
            ? new Error(
                `port ${port} on ${address} is already in use; choose another with the flag --port or the config field port`,
              )
            : err,
        ),
      );
      server.listen(port, address, () => resolve());
    });
    const info = server.address() as AddressInfo;
    this.logger.info('kubelet server listening', { address: `${info.address}:${info.port}` });
    return info;
  }

  /** Serves new connections with this certificate and key (PEM), e.g. a rotated one. */
  setServingCertificate(certPem: string, keyPem: string): void {
    const previous = this.serving;
    this.serving = { certPem, keyPem };
    try {
      this.server?.setSecureContext(this.context());
    } catch (err) {
      this.serving = previous;
      throw new Error(`the new serving certificate was not installed: ${errorMessage(err)}`);
    }
  }

  private context(): SecureContextOptions {
    return {
      cert: this.serving.certPem,
      key: this.serving.keyPem,
      ...(this.o.clientCA ? { ca: this.o.clientCA } : {}),
      ...(this.o.minVersion ? { minVersion: this.o.minVersion } : {}),
      ...(this.o.ciphers ? { ciphers: this.o.ciphers } : {}),
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const { path, segments, query } = parseRequestUrl(req.url);
      const verdict = await checkRequest(req, path, this.o.nodeName, this.o.authenticator, this.o.authorizer);
      if (!verdict.ok) return sendText(res, verdict.status, verdict.body);
      if (!segments) return sendText(res, 400, badEscape(path));
      await this.table.serve(req, res, { path, segments, query, user: verdict.user }, this.table.find(path));
    } catch (err) {
      this.logger.warn('request failed', { path: req.url, err: errorMessage(err) });
      if (!res.headersSent) sendText(res, 500, `${errorMessage(err)}\n`);
      else res.destroy();
    }
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    try {
      const { path, segments, query } = parseRequestUrl(req.url);
      const verdict = await checkRequest(req, path, this.o.nodeName, this.o.authenticator, this.o.authorizer);
      if (!verdict.ok) return rejectUpgrade(socket, verdict.status, verdict.body);
      if (!segments) return rejectUpgrade(socket, 400, badEscape(path));
      await this.table.serveUpgrade(req, socket, head, { path, segments, query, user: verdict.user });
    } catch (err) {
      this.logger.warn('upgrade request failed', { path: req.url, err: errorMessage(err) });
      rejectUpgrade(socket, 500, `${errorMessage(err)}\n`);
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

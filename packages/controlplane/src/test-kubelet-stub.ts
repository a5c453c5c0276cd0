/**
 * Test support: a stand-in for a kubelet's HTTPS port. It serves a certificate from the cluster CA, admits
 * only clients whose certificate the CA signed and whose CN is the API server's kubelet client, and
 * answers `/containerLogs` (followable), `/healthz`, `/metrics/resource` (the text in `metrics`), and upgrades on `/exec`, `/attach`, `/portForward`
 * (WebSocket: echo; any other upgrade such as SPDY: a 101, then raw bytes echoed back).
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { WebSocketServer } from 'ws';
import { hardenHttpServer } from '@nodelet/kernel';
import { issue } from './pki.js';

export interface KubeletStub {
  port: number;
  /** What `/metrics/resource` answers. */
  metrics: string;
  /** Every request's method and path (with query), in order. */
  requests: string[];
  /** Writes to every open followed log, or ends them with `end`. */
  push(text: string, end?: boolean): void;
  /** Resolves once a followed log is open. */
  followed: Promise<void>;
  close(): Promise<void>;
}

export async function startKubeletStub(pkiDir: string): Promise<KubeletStub> {
  const ca = {
    cert: await readFile(join(pkiDir, 'ca.crt'), 'utf8'),
    key: await readFile(join(pkiDir, 'ca.key'), 'utf8'),
  };
  const serving = await issue(ca, {
    subject: 'CN=node-1',
    usage: 'server',
    dnsNames: ['localhost'],
    ips: ['127.0.0.1'],
  });
  const requests: string[] = [];
  const follows = new Set<ServerResponse>();
  let onFollow = () => {};
  const followed = new Promise<void>((resolve) => (onFollow = resolve));
  const caller = (req: IncomingMessage) => (req.socket as TLSSocket).getPeerCertificate()?.subject?.CN ?? '';

  const server: Server = createServer(
    { key: serving.key, cert: serving.cert, ca: ca.cert, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      requests.push(`${req.method} ${req.url}`);
      if (caller(req) !== 'kube-apiserver-kubelet-client') {
        res.writeHead(403).end(`Forbidden (user=${caller(req)})`);
        return;
      }
      const url = new URL(req.url ?? '/', 'https://kubelet');
      if (url.pathname === '/metrics/resource') {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(stub.metrics);
        return;
      }
      if (url.pathname === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        return;
      }
      if (url.pathname.startsWith('/containerLogs/')) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write(`log of ${url.pathname.slice('/containerLogs/'.length)}\n`);
        if (url.searchParams.get('follow') !== 'true') return void res.end();
        follows.add(res);
        res.on('close', () => follows.delete(res));
        onFollow();
        return;
      }
      res.writeHead(404).end('404 page not found');
    },
  );
  const ws = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) => [...protocols][0] ?? false,
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    requests.push(`UPGRADE ${req.url}`);
    if (caller(req) !== 'kube-apiserver-kubelet-client') return void socket.destroy();
    if ((req.headers.upgrade ?? '').toLowerCase() === 'websocket') {
      ws.handleUpgrade(req, socket, head, (client) => {
        // A broken frame from the client ends that connection (ws reports it as an error).
        client.on('error', () => client.terminate());
        client.send(`hello from ${req.url}`);
        client.on('message', (data, binary) => client.send(data, { binary }));
      });
      return;
    }
    const version = String(req.headers['x-stream-protocol-version'] ?? '')
      .split(',')[0]!
      .trim();
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${req.headers.upgrade}\r\n` +
        `X-Stream-Protocol-Version: ${version}\r\n\r\n`,
    );
    socket.pipe(socket);
  });
  // As nodelet's kubelet server: a request Node's parser refuses is answered with a message.
  hardenHttpServer(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const stub: KubeletStub = {
    metrics: '',
    port: (server.address() as AddressInfo).port,
    requests,
    followed,
    push(text, end) {
      for (const res of follows) {
        res.write(text);
        if (end) res.end();
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        ws.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return stub;
}

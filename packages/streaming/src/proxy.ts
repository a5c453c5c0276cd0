/**
 * Proxying an upgraded request to a runtime's streaming server, as the kubelet's default (upstream
 * UpgradeAwareHandler without redirects): the client's request goes to the URL the runtime gave
 * (its path and query — the token — replace the kubelet's), then bytes flow both ways untouched.
 */
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { rejectUpgrade } from './http-reply.js';

/** Hop-by-hop and per-host fields we rewrite rather than copy. */
const DROPPED = new Set(['host', 'content-length', 'authorization', 'cookie']);

export function proxyUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: string): void {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    rejectUpgrade(socket, 500, `the runtime returned an invalid streaming URL`);
    return;
  }
  const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const upstream =
    target.protocol === 'https:'
      ? tls.connect({ host, port, rejectUnauthorized: false })
      : net.connect({ host, port });
  let connected = false;
  socket.on('error', () => upstream.destroy());
  socket.on('close', () => upstream.destroy());
  upstream.on('error', (err) => {
    if (!connected)
      rejectUpgrade(socket, 502, `error dialing the runtime's streaming server: ${err.message}`);
    else socket.destroy();
  });
  upstream.on('close', () => socket.destroy());
  upstream.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
    connected = true;
    const lines = [
      `${req.method ?? 'GET'} ${target.pathname}${target.search} HTTP/1.1`,
      `Host: ${target.host}`,
    ];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      if (!DROPPED.has(req.rawHeaders[i]!.toLowerCase()))
        lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    }
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    socket.pipe(upstream);
    upstream.pipe(socket);
  });
}

/**
 * The client side of a SPDY upgrade (client-go's spdy.RoundTripper): an HTTP/1.1 request with
 * `Upgrade: SPDY/3.1` and the protocols we speak, a 101 answer naming the one chosen, then a session.
 */
import net from 'node:net';
import tls from 'node:tls';
import { SpdySession } from './session.js';

export interface SpdyDialResult {
  session: SpdySession;
  /** The X-Stream-Protocol-Version the server chose ('' when it named none). */
  protocol: string;
}

export class UpgradeRefusedError extends Error {
  constructor(
    readonly statusCode: number,
    readonly body: string,
  ) {
    super(`upgrade refused with HTTP ${statusCode}: ${body.trim()}`);
    this.name = 'UpgradeRefusedError';
  }
}

export function dialSpdy(
  url: string,
  protocols: readonly string[],
  { headers = {}, timeoutMs = 30_000 }: { headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<SpdyDialResult> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
    const host = target.hostname.replace(/^\[|\]$/g, '');
    const socket =
      target.protocol === 'https:'
        ? tls.connect({
            host,
            port,
            servername: net.isIP(host) ? undefined : host,
            rejectUnauthorized: false,
          })
        : net.connect({ host, port });
    const timer = setTimeout(() => fail(new Error(`timed out connecting to ${target.host}`)), timeoutMs);
    let buffered = Buffer.alloc(0);
    const fail = (err: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    socket.once('error', fail);
    socket.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
      const lines = [
        `POST ${target.pathname}${target.search} HTTP/1.1`,
        `Host: ${target.host}`,
        'Connection: Upgrade',
        'Upgrade: SPDY/3.1',
        ...protocols.map((p) => `X-Stream-Protocol-Version: ${p}`),
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
        'Content-Length: 0',
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) {
        if (buffered.length > 64 * 1024) fail(new Error('upgrade response headers too large'));
        return;
      }
      socket.off('data', onData);
      const head = buffered.subarray(0, end).toString('latin1').split('\r\n');
      const rest = buffered.subarray(end + 4);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')?.[1] ?? 0);
      const fields = new Map<string, string>();
      for (const line of head.slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) fields.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
      }
      if (status !== 101) {
        // Keep a little of the body (until the server closes) so the error says why.
        let body = rest;
        const finish = () => fail(new UpgradeRefusedError(status, body.toString()));
        socket.on('data', (more: Buffer) => {
          body = Buffer.concat([body, more]);
          if (body.length > 4096) finish();
        });
        socket.once('end', finish);
        return;
      }
      clearTimeout(timer);
      socket.off('error', fail);
      const session = new SpdySession(socket, { server: false });
      if (rest.length > 0) session.feed(rest);
      resolve({ session, protocol: fields.get('x-stream-protocol-version') ?? '' });
    };
    socket.on('data', onData);
  });
}

/**
 * Port-forward as a SPDY client (client-go's portforward), wrapped as a PortForwardHandler: one session
 * to the runtime's URL, a data+error stream pair per forwarded connection.
 */
import type { Duplex } from 'node:stream';
import { dialSpdy } from '../spdy/dial.js';
import type { SpdySession } from '../spdy/session.js';
import { PORT_FORWARD_PROTOCOL, type PortForwardHandler } from './handler.js';

export interface SpdyPortForwardClient extends PortForwardHandler {
  close(): void;
}

export function spdyPortForwardClient(
  url: string,
  { headers = {} }: { headers?: Record<string, string> } = {},
): SpdyPortForwardClient {
  let session: Promise<SpdySession> | undefined;
  let nextRequestId = 0;
  const connect = () => {
    session ??= dialSpdy(url, [PORT_FORWARD_PROTOCOL], { headers }).then(({ session: s }) => {
      s.on('close', () => (session = undefined));
      return s;
    });
    return session;
  };
  return {
    async forward(port: number, connection: Duplex): Promise<void> {
      const s = await connect();
      const requestid = String(nextRequestId++);
      const error = s.openStream({ streamtype: 'error', port: String(port), requestid });
      error.end();
      const data = s.openStream({ streamtype: 'data', port: String(port), requestid });
      const errorText = new Promise<string>((resolve) => {
        const chunks: Buffer[] = [];
        error.on('data', (c: Buffer) => chunks.push(c));
        error.on('end', () => resolve(Buffer.concat(chunks).toString()));
        error.on('close', () => resolve(Buffer.concat(chunks).toString()));
      });
      connection.pipe(data);
      data.pipe(connection);
      const done = new Promise<void>((resolve) => {
        data.once('close', resolve);
        connection.once('close', () => {
          data.destroy();
          resolve();
        });
      });
      const text = await errorText;
      if (text !== '') {
        connection.destroy();
        throw new Error(text);
      }
      await done;
    },
    close() {
      void session?.then((s) => s.close());
      session = undefined;
    },
  };
}

/** What a runtime (or a test) implements to serve port-forward. */
import type { Duplex } from 'node:stream';

/**
 * Connects one forwarded connection to `port` of the pod. Resolves when the connection is over;
 * a rejection's message goes to the client on the error stream (kubectl prints it).
 */
export interface PortForwardHandler {
  forward(port: number, connection: Duplex): Promise<void>;
}

export const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';
/** kubectl 1.31+: SPDY framing tunnelled in WebSocket binary messages. */
export const PORT_FORWARD_TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';
export const WEBSOCKET_PORT_FORWARD_PROTOCOLS = [
  'v4.channel.k8s.io',
  'v4.base64.channel.k8s.io',
  PORT_FORWARD_TUNNEL_PROTOCOL,
];

export function parsePort(value: string | undefined, what: string): number {
  if (value === undefined || !/^\d{1,5}$/.test(value) || Number(value) < 1 || Number(value) > 65535) {
    throw new Error(`${what} ${JSON.stringify(value ?? '')} is not a port number (1-65535)`);
  }
  return Number(value);
}

/** The WebSocket form names its ports in the query: `ports=80,8080` (or repeated). */
export function parsePortsQuery(query: URLSearchParams): number[] {
  const values = query.getAll('ports').flatMap((v) => v.split(','));
  if (values.length === 0) throw new Error('query parameter ports is required');
  return values.map((v) => parsePort(v.trim(), 'query parameter ports:'));
}

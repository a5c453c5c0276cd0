/** Plain HTTP answers written on a socket that has not been upgraded (errors before a handshake). */
import type { Duplex } from 'node:stream';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
};

/**
 * Writes a text/plain response and closes the socket; safe on a socket that is already gone. The body ends
 * with a newline, as Go's http.Error writes it.
 */
export function rejectUpgrade(
  socket: Duplex,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  if (socket.destroyed) return;
  const body = Buffer.from(message.endsWith('\n') ? message : `${message}\n`);
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.on('error', () => undefined);
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${body.length}\r\nConnection: close\r\n${extra}\r\n${body.toString()}`,
  );
}

/** Every value of a request header (Node joins repeats with ', '). */
export function headerValues(value: string | string[] | undefined): string[] {
  const all = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return all
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

export function isWebSocketUpgrade(upgrade: string | undefined): boolean {
  return upgrade?.toLowerCase() === 'websocket';
}

export function isSpdyUpgrade(upgrade: string | undefined): boolean {
  return upgrade?.toLowerCase() === 'spdy/3.1';
}

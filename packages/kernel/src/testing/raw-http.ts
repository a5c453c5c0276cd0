/**
 * One request's raw bytes on a connection, and the first answer read back: what the HTTP fuzzer sends
 * with, and what a test uses to send what no HTTP client would.
 */
import type { Duplex } from 'node:stream';

/** What came back on one connection: the status of the first response (undefined if none) and its body. */
export interface RawAnswer {
  status?: number;
  head: string;
  body: string;
  /** The server closed the connection (rather than the reader's deadline ending it). */
  closed: boolean;
}

/**
 * Writes `bytes` on a connection and reads the first response head, then the body up to `maxBody` bytes
 * or until the server closes or `deadlineMs` ends (a streaming answer — follow=true — never ends by itself).
 * `halfClose` ends the writing side after the bytes, so a truncated request ends at EOF rather than at the
 * server's header timeout; TLS has no half-close (the server would close before it answers), so pass
 * false there and let the deadline end the truncated ones. `headOnlyOnSuccess` stops reading at the head
 * of a 1xx–3xx answer; `pauseMs` sends the bytes as a slow client does, in pieces.
 */
export function sendRaw(
  socket: Duplex,
  bytes: Buffer,
  deadlineMs = 2000,
  {
    maxBody = 64 * 1024,
    halfClose = true,
    pauseMs = 0,
    headOnlyOnSuccess = false,
  }: { maxBody?: number; halfClose?: boolean; pauseMs?: number; headOnlyOnSuccess?: boolean } = {},
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    let data = Buffer.alloc(0);
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const head = end >= 0 ? text.slice(0, end) : text;
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      resolve({
        status: match ? Number(match[1]) : undefined,
        head,
        body: end >= 0 ? dechunk(head, text.slice(end + 4)) : '',
        closed,
      });
    };
    let timer = setTimeout(() => finish(false), deadlineMs);
    let headSeen = false;
    socket.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (!headSeen) {
        headSeen = true;
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
        // A success may stream for as long as the client stays (a followed log, a watch): its head says
        // enough. An error's message may come after its head: it gets time to arrive.
        if (headOnlyOnSuccess && status > 0 && status < 400) return finish(false);
        if (status >= 400) {
          clearTimeout(timer);
          timer = setTimeout(() => finish(false), Math.max(deadlineMs, 2000));
        }
      }
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end));
      if (length && data.length - (end + 4) >= Number(length[1])) finish(false);
      else if (data.length - (end + 4) >= maxBody) finish(false);
      else if (/\r\ntransfer-encoding: *chunked/i.test(text.slice(0, end)) && text.endsWith('0\r\n\r\n'))
        finish(false);
    });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    // A slow client: four pieces, `pauseMs` apart (the answer may come before the last).
    const pieces = pauseMs > 0 ? 4 : 1;
    const size = Math.ceil(bytes.length / pieces);
    const sendPiece = (n: number) => {
      if (settled) return;
      const piece = bytes.subarray(n * size, (n + 1) * size);
      if (n < pieces - 1) {
        socket.write(piece);
        setTimeout(() => sendPiece(n + 1), pauseMs);
      } else if (halfClose) socket.end(piece);
      else socket.write(piece);
    };
    sendPiece(0);
  });
}

function dechunk(head: string, body: string): string {
  if (!/\r\ntransfer-encoding: *chunked/i.test(head)) return body;
  let out = '';
  let rest = body;
  for (;;) {
    const nl = rest.indexOf('\r\n');
    if (nl < 0) return out;
    const size = parseInt(rest.slice(0, nl), 16);
    if (!(size > 0)) return out;
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 4 + size);
  }
}

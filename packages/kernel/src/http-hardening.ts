import type { Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

/**
 * What every server nodelet serves does with a request Node's HTTP parser rejects (bad request line, a header
 * larger than the limit, a lying Content-Length): answer it with a status and a message that says what was
 * wrong, as Go's net/http does ("400 Bad Request: …", "431 Request Header Fields Too Large"), and close — by
 * default Node answers with an empty body, and a TLS client that hangs up mid-handshake is logged as an error.
 */
export function hardenHttpServer(server: HttpServer | HttpsServer): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // Mid-body (a bad chunk) the request's handler may already have answered; then only closing is left.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, text] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? ['431 Request Header Fields Too Large', 'request header fields too large']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? ['408 Request Timeout', 'request timeout']
          : [
              '400 Bad Request',
              `malformed HTTP request: ${(err as { reason?: string }).reason ?? err.message}`,
            ];
    const body = `${status}: ${text}\n`;
    socket.on('error', () => socket.destroy());
    socket.end(
      `HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  // Node hands CONNECT to a 'connect' listener and, with none, drops the connection without a word.
  if (server.listenerCount('connect') === 0) {
    server.on('connect', (req: { method?: string }, socket: Socket) => {
      const body = `405 Method Not Allowed: ${req.method ?? 'CONNECT'} is not served here\n`;
      socket.on('error', () => socket.destroy());
      socket.end(
        `HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
  }
  // A client that opens connections and sends nothing (or a header a byte a minute) holds no socket forever.
  server.headersTimeout = 60_000;
  server.requestTimeout = 0; // streaming answers (logs -f, exec) last as long as the client wants
}

/**
 * `server.listen(port, host)` as a promise of the address it got; a port in use is `inUse` (the message
 * that names the flag and the config field to change), any other error as it is.
 */
export function listenHttp(
  server: HttpServer | HttpsServer,
  port: number,
  host: string,
  inUse: string,
): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(inUse) : err),
    );
    server.listen(port, host, () => resolve(server.address() as AddressInfo));
  });
}

/** Closes the server and every connection it holds (keep-alive, followed logs, watches). */
export function closeHttp(server: HttpServer | HttpsServer): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

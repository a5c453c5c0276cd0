/**
 * The kubelet's streaming endpoints on an upgraded request: exec/attach and port-forward, over SPDY
 * or WebSocket, either served here by a handler or carried to a runtime's streaming URL.
 *
 *   target = handler      SPDY → served;  WebSocket → served
 *   target = { url }      SPDY → bytes proxied to the URL (upstream's default)
 *                         WebSocket → served here, translated to a SPDY client of the URL
 *                         (runtimes' streaming servers do not speak v5)
 *
 * Bad requests are answered 400 naming the parameter, an unsupported protocol 403 as upstream's
 * handshake does; nothing here throws out to the HTTP server.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { createWebSocketStream, WebSocketServer } from 'ws';
import { headerValues, isSpdyUpgrade, isWebSocketUpgrade, rejectUpgrade } from './http-reply.js';
import {
  PORT_FORWARD_PROTOCOL,
  PORT_FORWARD_TUNNEL_PROTOCOL,
  type PortForwardHandler,
  parsePortsQuery,
  WEBSOCKET_PORT_FORWARD_PROTOCOLS,
} from './portforward/handler.js';
import { spdyPortForwardClient } from './portforward/spdy-client.js';
import { serveSpdyPortForward } from './portforward/spdy-session.js';
import { serveWebSocketPortForward } from './portforward/websocket-session.js';
import { proxyUpgrade } from './proxy.js';
import type { RemoteCommandHandler } from './remotecommand/handler.js';
import {
  type ExecRequestOptions,
  parseExecQuery,
  SPDY_EXEC_PROTOCOLS,
  WEBSOCKET_EXEC_PROTOCOLS,
} from './remotecommand/protocol.js';
import { spdyExecClient } from './remotecommand/spdy-client.js';
import { serveExecSpdy } from './remotecommand/spdy-session.js';
import { serveExecWebSocket } from './remotecommand/websocket-session.js';
import { SpdySession } from './spdy/session.js';

export type StreamTarget<H> = { url: string } | H;

function isUrlTarget<H>(target: StreamTarget<H>): target is { url: string } {
  return typeof (target as { url?: unknown }).url === 'string';
}

function queryOf(req: IncomingMessage): URLSearchParams {
  const raw = req.url ?? '/';
  const q = raw.indexOf('?');
  return new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
}

/**
 * httpstream.Handshake: the first protocol the client offers that we speak; '' when the client offers
 * none (the legacy v1 protocol); undefined after answering 403.
 */
function spdyHandshake(
  req: IncomingMessage,
  socket: Duplex,
  supported: readonly string[],
): string | undefined {
  const offered = headerValues(req.headers['x-stream-protocol-version']);
  if (offered.length === 0) return '';
  const chosen = offered.find((p) => supported.includes(p));
  if (chosen === undefined) {
    rejectUpgrade(
      socket,
      403,
      `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${supported.join(' ')}]`,
      { 'X-Accepted-Stream-Protocol-Versions': supported.join(', ') },
    );
    return undefined;
  }
  return chosen;
}

function acceptSpdy(socket: Duplex, head: Buffer, protocol: string): SpdySession {
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
      (protocol ? `X-Stream-Protocol-Version: ${protocol}\r\n` : '') +
      '\r\n',
  );
  const session = new SpdySession(socket, { server: true });
  if (head.length > 0) session.feed(head);
  return session;
}

/**
 * `ws` refuses subprotocols that are not RFC 7230 tokens, and kubectl's tunnelling one has a '/':
 * the request names it by this stand-in, and the answer gives the real name back.
 */
const TUNNEL_STAND_IN = 'spdy-3.1-tunnel.portforward.k8s.io';

function webSocketServer(supported: readonly string[]): WebSocketServer {
  return new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => {
      const chosen = [...offered]
        .map((p) => (p === TUNNEL_STAND_IN ? PORT_FORWARD_TUNNEL_PROTOCOL : p))
        .find((p) => supported.includes(p));
      return chosen ?? false;
    },
  });
}

function standInForTunnel(req: IncomingMessage): void {
  const offered = headerValues(req.headers['sec-websocket-protocol']);
  if (offered.includes(PORT_FORWARD_TUNNEL_PROTOCOL)) {
    req.headers['sec-websocket-protocol'] = offered
      .map((p) => (p === PORT_FORWARD_TUNNEL_PROTOCOL ? TUNNEL_STAND_IN : p))
      .filter((p) => !p.includes('/'))
      .join(', ');
  }
}

const execWss = webSocketServer(WEBSOCKET_EXEC_PROTOCOLS);
const portForwardWss = webSocketServer(WEBSOCKET_PORT_FORWARD_PROTOCOLS);

function offeredSubprotocols(req: IncomingMessage): string[] {
  return headerValues(req.headers['sec-websocket-protocol']);
}

function guard(socket: Duplex, run: () => void): void {
  try {
    run();
  } catch (err) {
    rejectUpgrade(socket, 500, (err as Error).message);
  }
}

function handleRemoteCommand(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: StreamTarget<RemoteCommandHandler>,
  requireCommand: boolean,
): void {
  socket.on('error', () => undefined);
  const upgrade = req.headers.upgrade;
  if (isSpdyUpgrade(upgrade) && isUrlTarget(target)) return proxyUpgrade(req, socket, head, target.url);
  let options: ExecRequestOptions;
  try {
    options = parseExecQuery(queryOf(req), requireCommand);
  } catch (err) {
    return rejectUpgrade(socket, 400, (err as Error).message);
  }
  const handler = isUrlTarget(target) ? spdyExecClient(target.url) : target;
  if (isSpdyUpgrade(upgrade)) {
    const protocol = spdyHandshake(req, socket, SPDY_EXEC_PROTOCOLS);
    if (protocol === undefined) return;
    void serveExecSpdy(acceptSpdy(socket, head, protocol), protocol, handler, options);
    return;
  }
  if (isWebSocketUpgrade(upgrade)) {
    if (!offeredSubprotocols(req).some((p) => WEBSOCKET_EXEC_PROTOCOLS.includes(p))) {
      return rejectUpgrade(
        socket,
        400,
        `unable to upgrade: no supported WebSocket subprotocol; server accepts [${WEBSOCKET_EXEC_PROTOCOLS.join(' ')}]`,
      );
    }
    execWss.handleUpgrade(req, socket, head, (ws) => void serveExecWebSocket(ws, handler, options));
    return;
  }
  rejectUpgrade(
    socket,
    400,
    'unable to upgrade: missing upgrade headers in request (Upgrade: SPDY/3.1 or websocket)',
  );
}

/** `/exec/{namespace}/{pod}/{container}?command=…&stdin=1&stdout=1&stderr=1&tty=1` on an upgrade request. */
export function handleExecUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: StreamTarget<RemoteCommandHandler>,
): void {
  guard(socket, () => handleRemoteCommand(req, socket, head, target, true));
}

/** `/attach/{namespace}/{pod}/{container}?stdin=1&stdout=1&tty=1` on an upgrade request (no command). */
export function handleAttachUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: StreamTarget<RemoteCommandHandler>,
): void {
  guard(socket, () => handleRemoteCommand(req, socket, head, target, false));
}

/** `/portForward/{namespace}/{pod}` on an upgrade request (WebSocket: `?ports=80,8080`). */
export function handlePortForwardUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: StreamTarget<PortForwardHandler>,
): void {
  guard(socket, () => {
    socket.on('error', () => undefined);
    const upgrade = req.headers.upgrade;
    if (isSpdyUpgrade(upgrade)) {
      if (isUrlTarget(target)) return proxyUpgrade(req, socket, head, target.url);
      const protocol = spdyHandshake(req, socket, [PORT_FORWARD_PROTOCOL]);
      if (protocol === undefined) return;
      serveSpdyPortForward(acceptSpdy(socket, head, protocol), target);
      return;
    }
    if (!isWebSocketUpgrade(upgrade)) {
      return rejectUpgrade(
        socket,
        400,
        'unable to upgrade: missing upgrade headers in request (Upgrade: SPDY/3.1 or websocket)',
      );
    }
    const offered = offeredSubprotocols(req);
    const chosen = offered.find((p) => WEBSOCKET_PORT_FORWARD_PROTOCOLS.includes(p));
    if (chosen === undefined) {
      return rejectUpgrade(
        socket,
        400,
        `unable to upgrade: no supported WebSocket subprotocol; server accepts [${WEBSOCKET_PORT_FORWARD_PROTOCOLS.join(' ')}]`,
      );
    }
    let ports: number[] = [];
    if (chosen !== PORT_FORWARD_TUNNEL_PROTOCOL) {
      try {
        ports = parsePortsQuery(queryOf(req));
      } catch (err) {
        return rejectUpgrade(socket, 400, (err as Error).message);
      }
    }
    const handler = isUrlTarget(target) ? spdyPortForwardClient(target.url) : target;
    standInForTunnel(req);
    portForwardWss.handleUpgrade(req, socket, head, (ws) => {
      if (ws.protocol === PORT_FORWARD_TUNNEL_PROTOCOL) {
        // SPDY frames inside WebSocket binary messages: unwrap and serve as SPDY.
        const tunnel = createWebSocketStream(ws);
        tunnel.on('error', () => undefined);
        const session = new SpdySession(tunnel, { server: true });
        serveSpdyPortForward(session, handler);
      } else {
        serveWebSocketPortForward(ws, ports, handler);
      }
      ws.on('close', () => {
        if ('close' in handler && typeof handler.close === 'function') handler.close();
      });
    });
  });
}

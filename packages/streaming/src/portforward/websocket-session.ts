/**
 * Port-forward over the WebSocket channel protocol (wsstream, v4): the ports come in the query; port i
 * has data channel 2i and error channel 2i+1, and the first message on each channel from the server is
 * the port as 2 little-endian bytes. One connection per port, for the life of the socket.
 */
import { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { channelSender, decodeChannelMessage } from '../remotecommand/websocket-session.js';
import type { PortForwardHandler } from './handler.js';

export function serveWebSocketPortForward(ws: WebSocket, ports: number[], handler: PortForwardHandler): void {
  const base64 = ws.protocol.includes('base64');
  const send = channelSender(ws, base64);
  const connections: Duplex[] = [];
  ports.forEach((port, i) => {
    const prefix = Buffer.alloc(2);
    prefix.writeUInt16LE(port);
    send(2 * i, prefix);
    send(2 * i + 1, prefix);
    const connection = new Duplex({
      read() {},
      write(chunk: Buffer, _enc, cb) {
        send(2 * i, chunk);
        cb();
      },
    });
    connections.push(connection);
    handler.forward(port, connection).catch((err: Error) => {
      send(2 * i + 1, Buffer.from(`an error occurred forwarding ${port} -> ${port}: ${err.message}`));
    });
  });
  ws.on('message', (raw: Buffer, isBinary: boolean) => {
    const msg = decodeChannelMessage(raw, isBinary, base64);
    if (!msg || msg.channel % 2 !== 0) return;
    connections[msg.channel / 2]?.push(msg.data);
  });
  ws.on('close', () => {
    for (const c of connections) {
      c.push(null);
      c.destroy();
    }
  });
  ws.on('error', () => undefined);
}

// Test support (not part of the package's API): HTTP servers on 127.0.0.1:0 that route upgrades.
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';

export type UpgradeRoute = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export async function upgradeServer(
  route: UpgradeRoute,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  const sockets = new Set<Duplex>();
  server.on('upgrade', (req, socket, head) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    route(req, socket, head);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

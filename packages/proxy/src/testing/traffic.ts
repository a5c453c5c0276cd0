import { createServer, connect, type Server } from 'node:net';

/** Connects `count` times, one after the other; each result is the first line received or an error code. */
export async function connectMany(
  host: string,
  port: number,
  count: number,
  timeoutMs = 2000,
): Promise<string[]> {
  const results: string[] = [];
  for (let i = 0; i < count; i++) {
    results.push(
      await new Promise<string>((resolve) => {
        let data = '';
        let done = false;
        const s = connect({ host, port });
        const finish = (r: string) => {
          if (done) return;
          done = true;
          s.destroy();
          resolve(r);
        };
        s.setTimeout(timeoutMs, () => finish('ETIMEDOUT'));
        s.on('data', (d) => (data += d));
        s.on('end', () => finish(data.trim() || 'EMPTY'));
        s.on('error', (e: NodeJS.ErrnoException) => finish(e.code ?? 'ERROR'));
      }),
    );
  }
  return results;
}

/** TCP servers in this process answering every connection with their name; for the userspace proxy. */
export async function startNameServers(
  addresses: readonly string[],
  port: number,
): Promise<{ names: string[]; close: () => Promise<void> }> {
  const servers: Server[] = [];
  const names: string[] = [];
  for (const [i, address] of addresses.entries()) {
    const name = `b${i + 1}`;
    const server = createServer((c) => {
      c.on('error', () => undefined);
      c.end(`${name}\n`);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, address, () => resolve());
    });
    servers.push(server);
    names.push(name);
  }
  return {
    names,
    close: async () => {
      for (const s of servers) {
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    },
  };
}

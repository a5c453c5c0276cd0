import { connect, type OnReadOpts, Socket } from 'node:net';

/** A direction's read buffer starts this small (an idle connection holds little)… */
const MIN_READ = 16 * 1024;
/** …and grows while reads fill it, to this: large reads are what makes bulk transfers cheap. */
const MAX_READ = 512 * 1024;

/**
 * Reads of one direction of a relayed connection, into a buffer of this direction's own, each read
 * written on to `target()` at once. The buffer is reused for the next read, so while a write is still
 * pending (the kernel did not take all of it), reading stops and resumes when that write completes:
 * that is the backpressure, and the guarantee that a pending write's bytes are not overwritten. No Buffer
 * is allocated per read, and no stream machinery sits between the two sockets.
 */
export function relayReads(source: () => Socket, target: () => Socket): OnReadOpts {
  let buffer = Buffer.allocUnsafe(MIN_READ);
  let size = MIN_READ;
  const resume = () => source().resume();
  return {
    buffer: () => (buffer.length === size ? buffer : (buffer = Buffer.allocUnsafe(size))),
    callback: (n, buf) => {
      if (n === buf.length) size = Math.min(size * 4, MAX_READ);
      else if (n < buf.length / 16) size = MIN_READ;
      // Resume on this write's own callback, not on 'drain': a write under the socket's high-water
      // mark (16 KiB) that stays pending is never followed by a 'drain' event.
      let waiting = false;
      const to = target();
      to.write(buf.subarray(0, n), () => waiting && resume());
      if (to.writableLength === 0) return true; // taken at once (its callback comes on the next tick)
      waiting = true;
      return false;
    },
  };
}

/**
 * Takes over an accepted socket so that it reads through `onread` (net.Server does not accept that
 * option, net.Socket does, given the connection's handle). The original socket object stays behind
 * only to be destroyed when the connection ends, which keeps the server's connection count right.
 * Undefined when this Node keeps the handle elsewhere: the caller then relays with streams.
 */
export function adoptWithOnRead(accepted: Socket, onread: OnReadOpts): Socket | undefined {
  const holder = accepted as unknown as { _handle?: unknown };
  const handle = holder._handle;
  if (!handle || typeof handle !== 'object' || !('readStart' in handle)) return undefined;
  holder._handle = null;
  const socket = new Socket({
    handle,
    allowHalfOpen: true,
    readable: true,
    writable: true,
    onread,
    pauseOnCreate: true,
  } as ConstructorParameters<typeof Socket>[0] & { handle: unknown; pauseOnCreate: boolean });
  socket.once('close', () => accepted.destroy());
  return socket;
}

/** Connects to an endpoint; what the endpoint sends is relayed to `client()` as `relayReads` does. */
export function connectRelayed(host: string, port: number, client: () => Socket): Socket {
  let upstream: Socket | undefined = undefined;
  upstream = connect({
    host,
    port,
    allowHalfOpen: true,
    onread: relayReads(() => upstream!, client),
  });
  return upstream;
}

/**
 * Joins the two sockets of a relayed connection once both are open: the half-closes (a client may
 * end its side and still read the reply), the ends and the errors. `client` must be paused until now.
 */
export function join(client: Socket, upstream: Socket): void {
  upstream.setNoDelay(true);
  client.setNoDelay(true);
  client.on('end', () => upstream.end());
  upstream.on('end', () => client.end());
  upstream.on('error', () => client.destroy());
  client.on('error', () => upstream.destroy());
  client.once('close', () => upstream.destroy());
  upstream.once('close', () => client.destroy());
  client.resume();
  upstream.resume();
}

/**
 * Port-forward over SPDY (kubelet's portforward/httpstream.go): for each forwarded connection the
 * client opens an `error` stream and a `data` stream, both carrying `port` and `requestid`; once the
 * pair is there the data stream is connected to the pod's port, and failures are written as text to
 * the error stream.
 */
import type { SpdySession, SpdyStream } from '../spdy/session.js';
import { type PortForwardHandler, parsePort } from './handler.js';

interface Pair {
  data?: SpdyStream;
  error?: SpdyStream;
}

export function serveSpdyPortForward(session: SpdySession, handler: PortForwardHandler): void {
  const pairs = new Map<string, Pair>();
  session.on('stream', (stream) => {
    const type = stream.headers['streamtype'];
    const requestId = stream.headers['requestid'] ?? '';
    let port: number;
    try {
      port = parsePort(stream.headers['port'], 'port header');
      if (type !== 'data' && type !== 'error')
        throw new Error(`invalid stream type ${JSON.stringify(type ?? '')}`);
    } catch {
      stream.reset();
      return;
    }
    stream.reply();
    const pair = pairs.get(requestId) ?? {};
    pairs.set(requestId, pair);
    if (pair[type]) {
      stream.reset();
      return;
    }
    pair[type] = stream;
    if (!pair.data || !pair.error) return;
    pairs.delete(requestId);
    const { data, error } = pair;
    error.resume(); // the client writes nothing there
    handler.forward(port, data).then(
      () => {
        error.end();
      },
      (err: Error) => {
        error.end(`an error occurred forwarding ${port} -> ${port}: ${err.message}`);
        data.end();
      },
    );
  });
}

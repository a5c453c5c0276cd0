/**
 * Exec/attach over a WebSocket (k8s.io/apimachinery wsstream, as kubectl 1.30+ speaks it): each binary
 * message is one channel byte then data (the base64 protocol: a channel digit then base64 text). v5 adds
 * channel 255, whose message [255, n] half-closes the client's channel n (stdin).
 */
import { PassThrough, Writable } from 'node:stream';
import { ReplaySubject } from 'rxjs';
import type { WebSocket } from 'ws';
import type { RemoteCommandHandler } from './handler.js';
import {
  Channel,
  type ExecRequestOptions,
  exitCodeStatus,
  internalErrorStatus,
  ResizeDecoder,
  StreamProtocol,
  successStatus,
  type TerminalSize,
} from './protocol.js';

export function channelSender(ws: WebSocket, base64: boolean): (channel: number, data: Buffer) => void {
  return (channel, data) => {
    if (ws.readyState !== ws.OPEN) return;
    if (base64) ws.send(String.fromCharCode(48 + channel) + data.toString('base64'));
    else ws.send(Buffer.concat([Buffer.from([channel]), data]));
  };
}

/** Decodes one received message into its channel and payload; undefined when it has neither. */
export function decodeChannelMessage(
  data: Buffer,
  isBinary: boolean,
  base64: boolean,
): { channel: number; data: Buffer } | undefined {
  if (data.length === 0) return undefined;
  if (base64 && !isBinary) {
    const channel = data[0]! - 48;
    return { channel, data: Buffer.from(data.subarray(1).toString('latin1'), 'base64') };
  }
  return { channel: data[0]!, data: data.subarray(1) };
}

function channelWritable(send: (d: Buffer) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      send(chunk);
      cb();
    },
  });
}

export async function serveExecWebSocket(
  ws: WebSocket,
  handler: RemoteCommandHandler,
  options: ExecRequestOptions,
): Promise<void> {
  const protocol = ws.protocol;
  const base64 = protocol.includes('base64');
  const send = channelSender(ws, base64);
  const stdin = options.stdin ? new PassThrough() : undefined;
  // Replayed: the client sends its size at once, before a runtime session (the translator's) subscribes.
  const resize$ = new ReplaySubject<TerminalSize>(1);
  const resizes = new ResizeDecoder();
  ws.on('message', (raw: Buffer, isBinary: boolean) => {
    const msg = decodeChannelMessage(raw, isBinary, base64);
    if (!msg) return;
    if (msg.channel === Channel.stdin) stdin?.write(msg.data);
    else if (msg.channel === Channel.resize && options.tty)
      for (const s of resizes.push(msg.data.toString())) resize$.next(s);
    else if (msg.channel === Channel.close && protocol === StreamProtocol.V5 && msg.data[0] === Channel.stdin)
      stdin?.end();
  });
  ws.on('close', () => {
    stdin?.end();
    resize$.complete();
  });
  ws.on('error', () => undefined);
  let status;
  try {
    const exitCode = await handler.exec(
      {
        stdin,
        stdout: options.stdout ? channelWritable((d) => send(Channel.stdout, d)) : undefined,
        stderr: options.stderr ? channelWritable((d) => send(Channel.stderr, d)) : undefined,
      },
      { ...options, resize$ },
    );
    status = exitCode === 0 ? successStatus() : exitCodeStatus(exitCode, options.command);
  } catch (err) {
    status = internalErrorStatus((err as Error).message);
  }
  send(Channel.error, Buffer.from(JSON.stringify(status)));
  resize$.complete();
  if (ws.readyState === ws.OPEN) ws.close(1000);
}

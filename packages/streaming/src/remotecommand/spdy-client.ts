/**
 * Exec/attach as a SPDY client (client-go's remotecommand v4 streamProtocol), wrapped as a
 * RemoteCommandHandler: what lets a WebSocket v5 client reach a runtime streaming server that speaks
 * only SPDY (the StreamTranslator of kube-apiserver, in the kubelet's place), and what tests use.
 */
import type { Readable } from 'node:stream';
import { dialSpdy } from '../spdy/dial.js';
import type { SpdyStream } from '../spdy/session.js';
import type { ExecOptions, ExecStreams, RemoteCommandHandler } from './handler.js';
import { type ExecStatus, SPDY_EXEC_PROTOCOLS, StreamProtocol } from './protocol.js';

function readAll(stream: Readable): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks).toString()));
    stream.on('close', () => resolve(Buffer.concat(chunks).toString()));
    stream.on('error', () => resolve(Buffer.concat(chunks).toString()));
  });
}

function ended(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    if (stream.readableEnded || stream.destroyed) resolve();
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
}

/** The exit code a status stands for, as client-go reads it; throws for failures without one. */
export function exitCodeOf(status: ExecStatus): number {
  if (status.status === 'Success') return 0;
  if (status.reason === 'NonZeroExitCode') {
    const cause = status.details?.causes.find((c) => c.reason === 'ExitCode');
    const code = Number(cause?.message);
    if (Number.isInteger(code)) return code;
  }
  throw new Error(status.message ?? 'exec failed');
}

export function spdyExecClient(
  url: string,
  { headers = {} }: { headers?: Record<string, string> } = {},
): RemoteCommandHandler {
  return {
    async exec(streams: ExecStreams, options: ExecOptions): Promise<number> {
      const { session, protocol } = await dialSpdy(url, SPDY_EXEC_PROTOCOLS, { headers });
      try {
        const open = (streamtype: string): SpdyStream => session.openStream({ streamtype });
        const error = open('error');
        error.end();
        const errorText = readAll(error);
        const outputs: Promise<void>[] = [];
        if (options.stdin && streams.stdin) {
          const stdin = open('stdin');
          streams.stdin.pipe(stdin);
        }
        for (const name of ['stdout', 'stderr'] as const) {
          const sink = streams[name];
          if (!options[name] || !sink) continue;
          const s = open(name);
          s.end();
          s.on('data', (c: Buffer) => sink.write(c));
          outputs.push(ended(s));
        }
        if (options.tty && protocol !== StreamProtocol.V2 && protocol !== '') {
          const resize = open('resize');
          options.resize$.subscribe((size) =>
            resize.write(JSON.stringify({ Width: size.width, Height: size.height })),
          );
        }
        const text = await errorText;
        await Promise.all(outputs);
        if (protocol === StreamProtocol.V4) {
          if (text.trim() === '') return 0;
          return exitCodeOf(JSON.parse(text) as ExecStatus);
        }
        if (text === '') return 0;
        const m = /exit code (\d+)/.exec(text);
        if (m) return Number(m[1]);
        throw new Error(text);
      } finally {
        session.close();
      }
    },
  };
}

/**
 * Exec/attach over SPDY (kubectl before 1.30, and every runtime's streaming server): the client opens
 * one SPDY stream per channel, named by its `streamtype` header; the server replies to each, runs the
 * command once all expected streams are there, then writes the error stream and ends the session.
 */
import { ReplaySubject } from 'rxjs';
import { SpdySession, type SpdyStream } from '../spdy/session.js';
import type { RemoteCommandHandler } from './handler.js';
import {
  type ExecRequestOptions,
  type ExecStatus,
  exitCodeStatus,
  internalErrorStatus,
  ResizeDecoder,
  StreamProtocol,
  successStatus,
  type TerminalSize,
} from './protocol.js';

/** How long the client has to open its streams (the kubelet's streamCreationTimeout). */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;

function expectedStreams(options: ExecRequestOptions, protocol: string): string[] {
  const names = ['error'];
  if (options.stdin) names.push('stdin');
  if (options.stdout) names.push('stdout');
  if (options.stderr) names.push('stderr');
  if (options.tty && protocol !== StreamProtocol.V2 && protocol !== StreamProtocol.V1) names.push('resize');
  return names;
}

function collectStreams(
  session: SpdySession,
  names: string[],
  timeoutMs: number,
): Promise<Map<string, SpdyStream>> {
  return new Promise((resolve, reject) => {
    const got = new Map<string, SpdyStream>();
    const timer = setTimeout(
      () => done(new Error('timed out waiting for client to create streams')),
      timeoutMs,
    );
    const done = (err?: Error) => {
      clearTimeout(timer);
      session.off('stream', onStream);
      session.off('close', onClose);
      if (err) reject(err);
      else resolve(got);
    };
    const onClose = () => done(new Error('connection closed before the client created its streams'));
    const onStream = (stream: SpdyStream) => {
      const type = stream.headers['streamtype'] ?? '';
      if (!names.includes(type) || got.has(type)) {
        stream.reset();
        return;
      }
      stream.reply();
      got.set(type, stream);
      if (got.size === names.length) done();
    };
    session.on('stream', onStream);
    session.on('close', onClose);
  });
}

function errorText(status: ExecStatus, protocol: string): string | undefined {
  if (protocol === StreamProtocol.V4) return JSON.stringify(status);
  return status.status === 'Success' ? undefined : status.message;
}

export async function serveExecSpdy(
  session: SpdySession,
  protocol: string,
  handler: RemoteCommandHandler,
  options: ExecRequestOptions,
  timeoutMs = STREAM_CREATION_TIMEOUT_MS,
): Promise<void> {
  let streams: Map<string, SpdyStream>;
  try {
    streams = await collectStreams(session, expectedStreams(options, protocol), timeoutMs);
  } catch {
    session.goAway();
    return;
  }
  // Replayed: the client sends its size at once, before a runtime session (the translator's) subscribes.
  const resize$ = new ReplaySubject<TerminalSize>(1);
  const resizeStream = streams.get('resize');
  if (resizeStream) {
    const decoder = new ResizeDecoder();
    resizeStream.on('data', (chunk: Buffer) => {
      for (const size of decoder.push(chunk.toString())) resize$.next(size);
    });
    resizeStream.resume();
  }
  const stdout = streams.get('stdout');
  const stderr = streams.get('stderr');
  let status: ExecStatus;
  try {
    const exitCode = await handler.exec(
      { stdin: streams.get('stdin'), stdout, stderr },
      { ...options, resize$ },
    );
    status = exitCode === 0 ? successStatus() : exitCodeStatus(exitCode, options.command);
  } catch (err) {
    status = internalErrorStatus((err as Error).message);
  }
  resize$.complete();
  stdout?.end();
  stderr?.end();
  const error = streams.get('error')!;
  const text = errorText(status, protocol);
  if (text !== undefined) error.write(text);
  error.end();
  session.goAway();
}

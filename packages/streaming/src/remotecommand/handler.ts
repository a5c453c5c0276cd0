/** What a runtime (or a test) implements to serve exec and attach; the protocol is the server's job. */
import type { Readable, Writable } from 'node:stream';
import type { Observable } from 'rxjs';
import type { TerminalSize } from './protocol.js';

export interface ExecStreams {
  /** The client's input; ends when the client closes stdin. Absent without `stdin=1`. */
  stdin?: Readable;
  stdout?: Writable;
  /** Absent with a terminal (output is all on stdout then). */
  stderr?: Writable;
}

export interface ExecOptions {
  /** The command (exec); empty for attach. */
  command: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  /** Terminal size changes, with a terminal; completes when the session ends. */
  resize$: Observable<TerminalSize>;
}

/**
 * Runs one exec/attach session. Resolves with the exit code once everything has been written to
 * stdout/stderr; a rejection becomes an InternalError status on the error channel.
 */
export interface RemoteCommandHandler {
  exec(streams: ExecStreams, options: ExecOptions): Promise<number>;
}

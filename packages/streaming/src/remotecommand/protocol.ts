/**
 * The remote-command protocols of k8s.io/apimachinery (httpstream/wsstream) and client-go
 * (tools/remotecommand): names, channel numbers, the error channel's metav1.Status, and the request's
 * query parameters.
 */
export const StreamProtocol = {
  V1: 'channel.k8s.io',
  V2: 'v2.channel.k8s.io',
  V3: 'v3.channel.k8s.io',
  V4: 'v4.channel.k8s.io',
  V5: 'v5.channel.k8s.io',
} as const;

/** SPDY exec/attach: chosen through X-Stream-Protocol-Version, most preferred first. */
export const SPDY_EXEC_PROTOCOLS = [
  StreamProtocol.V4,
  StreamProtocol.V3,
  StreamProtocol.V2,
  StreamProtocol.V1,
];
/** WebSocket exec/attach subprotocols (the base64 form carries text frames). */
export const WEBSOCKET_EXEC_PROTOCOLS = [StreamProtocol.V5, StreamProtocol.V4, 'v4.base64.channel.k8s.io'];

export const Channel = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4, close: 255 } as const;

export interface TerminalSize {
  width: number;
  height: number;
}

/** metav1.Status as the error channel carries it (v4 and later). */
export interface ExecStatus {
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: { causes: { reason?: string; message: string }[] };
  code?: number;
}

export function successStatus(): ExecStatus {
  return { metadata: {}, status: 'Success' };
}

/** The status of a command that ran and exited non-zero: client-go turns it into the exit code. */
export function exitCodeStatus(exitCode: number, command: readonly string[]): ExecStatus {
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}], exit code ${exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

/** A command that could not run at all (InternalError, as apierrors.NewInternalError). */
export function internalErrorStatus(message: string): ExecStatus {
  return {
    metadata: {},
    status: 'Failure',
    message: `Internal error occurred: ${message}`,
    reason: 'InternalError',
    details: { causes: [{ message }] },
    code: 500,
  };
}

export interface ExecRequestOptions {
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

function flag(query: URLSearchParams, name: string): boolean {
  const v = query.get(name);
  return v === '1' || v === 'true' || v === 'True' || v === 'TRUE';
}

/**
 * Reads `command`, `stdin`, `stdout`, `stderr`, `tty` as the kubelet does; throws an Error naming the
 * parameter when the request cannot be served (the caller answers 400).
 */
export function parseExecQuery(query: URLSearchParams, requireCommand: boolean): ExecRequestOptions {
  for (const name of ['stdin', 'stdout', 'stderr', 'tty']) {
    const v = query.get(name);
    if (v !== null && !/^(1|0|true|false|True|False|TRUE|FALSE)$/.test(v)) {
      throw new Error(`query parameter ${name}=${JSON.stringify(v)} is not a boolean`);
    }
  }
  const options: ExecRequestOptions = {
    command: query.getAll('command'),
    stdin: flag(query, 'stdin'),
    stdout: flag(query, 'stdout'),
    stderr: flag(query, 'stderr'),
    tty: flag(query, 'tty'),
  };
  if (requireCommand && options.command.length === 0) throw new Error('query parameter command is required');
  if (!options.stdin && !options.stdout && !options.stderr) {
    throw new Error('you must specify at least 1 of stdin, stdout, stderr');
  }
  // With a terminal, stderr is merged into stdout (as upstream's stream options do).
  if (options.tty) options.stderr = false;
  return options;
}

/** Splits concatenated JSON resize messages (`{"Width":80,"Height":24}{...}`) as a json.Decoder reads them. */
export class ResizeDecoder {
  private text = '';
  push(chunk: string): TerminalSize[] {
    this.text += chunk;
    const sizes: TerminalSize[] = [];
    for (;;) {
      const start = this.text.indexOf('{');
      if (start < 0) {
        this.text = '';
        break;
      }
      const end = this.text.indexOf('}', start);
      if (end < 0) {
        this.text = this.text.slice(start);
        if (this.text.length > 4096) this.text = ''; // no resize message is this long
        break;
      }
      const body = this.text.slice(start, end + 1);
      this.text = this.text.slice(end + 1);
      try {
        const parsed = JSON.parse(body) as { Width?: unknown; Height?: unknown };
        const width = Number(parsed.Width);
        const height = Number(parsed.Height);
        if (
          Number.isInteger(width) &&
          Number.isInteger(height) &&
          width >= 0 &&
          height >= 0 &&
          width < 65536 &&
          height < 65536
        ) {
          sizes.push({ width, height });
        }
      } catch {
        // a malformed resize message is dropped, as the kubelet logs and drops it
      }
    }
    return sizes;
  }
}

/**
 * Exec and attach sessions of the fake runtime: the command runs through ExecSync's table and its
 * output is written to the session; `cat` with stdin copies stdin (what `kubectl exec -i … cat`
 * expects); attach (no command) waits for the client to close stdin.
 */
import type { ExecSyncResponse } from '@nodelet/cri';
import type { ExecOptions, ExecStreams, RemoteCommandHandler } from '@nodelet/streaming';

function write(stream: NodeJS.WritableStream | undefined, data: Uint8Array | string): Promise<void> {
  if (!stream || data.length === 0) return Promise.resolve();
  return new Promise((resolve) => stream.write(data, () => resolve()));
}

async function drain(stdin: NodeJS.ReadableStream | undefined, into?: NodeJS.WritableStream): Promise<void> {
  if (!stdin) return;
  for await (const chunk of stdin) await write(into, chunk as Buffer);
}

export function execSessionHandler(
  execSync: (cmd: string[]) => Promise<ExecSyncResponse>,
): RemoteCommandHandler {
  return {
    async exec(streams: ExecStreams, options: ExecOptions): Promise<number> {
      if (options.command.length === 0) {
        await drain(streams.stdin);
        return 0;
      }
      if (options.command.length === 1 && options.command[0] === 'cat' && streams.stdin) {
        await drain(streams.stdin, streams.stdout);
        return 0;
      }
      const result = await execSync(options.command);
      await write(streams.stdout, result.stdout);
      await write(options.tty ? streams.stdout : streams.stderr, result.stderr);
      return result.exitCode;
    },
  };
}

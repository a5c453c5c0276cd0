import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  /** Written to the command's stdin, then stdin is closed. */
  input?: string;
  /** Kill the command after this long. Default 10 minutes (a 5,000-service iptables-nft restore is slow). */
  timeoutMs?: number;
}

/**
 * Runs the kernel tools (iptables-restore, nft, ipvsadm, ipset). Backends take one so tests can record
 * what would run, and so every command can be run inside a network namespace (`ip netns exec NS …`) —
 * how the tests and the bench keep their rules out of the host's namespace.
 */
export interface CommandRunner {
  run(command: string, args: readonly string[], options?: ExecOptions): Promise<ExecResult>;
  /**
   * Starts a command whose input is written while it is being produced, so the command can parse the
   * beginning while the caller renders the rest. Optional: callers fall back to `run` without it.
   */
  start?(command: string, args: readonly string[], options?: Omit<ExecOptions, 'input'>): RunningCommand;
}

/** A command started by `CommandRunner.start`. */
export interface RunningCommand {
  /** The command's stdin: write the input, then `end()` it. Write errors (the command exited) are ignored. */
  readonly stdin: Writable;
  /** The command's output as it comes (it is also collected into `result`). */
  readonly stdout: Readable;
  /** How the command ended; settles once stdin is ended and the command exits (or is killed). */
  readonly result: Promise<ExecResult>;
  /** Kills the command (input that cannot be completed must not be applied). */
  kill(): void;
}

/**
 * Writes `chunk` to a started command's stdin; resolves once it has been handed on (for a pipe: the
 * kernel has it), so the next chunk is produced while the command parses this one, and the chunk's
 * memory may be written again. A write error (the command exited) resolves too: the command's result
 * tells what happened.
 */
export function written(stdin: Writable, chunk: string | Uint8Array): Promise<void> {
  return new Promise((resolve) => stdin.write(chunk, () => resolve()));
}

/** The first lines of what a command printed (stderr, else stdout), on one line; '' when nothing. */
export function outputSummary(result: Pick<ExecResult, 'stdout' | 'stderr'>): string {
  return (result.stderr || result.stdout).trim().split('\n').slice(0, 6).join(' | ');
}

export class CommandError extends Error {
  constructor(
    readonly command: string,
    readonly result: ExecResult,
  ) {
    const detail = outputSummary(result);
    super(`${command} exited with code ${result.code}${detail ? `: ${detail}` : ''}`);
    this.name = 'CommandError';
  }
}

/**
 * PATH for the kernel tools: the system directories first, and no `node_modules/.bin`. Under
 * `npx`/npm scripts those come first in PATH, and an npm package there may shadow a system tool: ava
 * depends on @vercel/nft, whose `nft` would "succeed" at every transaction on a host without nftables.
 */
export const SYSTEM_PATH = [
  '/usr/local/sbin',
  '/usr/local/bin',
  '/usr/sbin',
  '/usr/bin',
  '/sbin',
  '/bin',
].join(':');

export function systemEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const rest = (env.PATH ?? '')
    .split(':')
    .filter((dir) => dir !== '' && !/\/node_modules\/\.bin\/?$/.test(dir));
  return { ...env, PATH: [SYSTEM_PATH, ...rest].join(':') };
}

/** Runs commands on this host, or inside network namespace `netns` when given. */
export class HostCommandRunner implements CommandRunner {
  constructor(readonly netns?: string) {}

  run(command: string, args: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const running = this.start(command, args, options);
    running.stdin.end(options.input ?? '');
    return running.result;
  }

  start(command: string, args: readonly string[], options: Omit<ExecOptions, 'input'> = {}): RunningCommand {
    const [cmd, argv] = this.netns
      ? ['ip', ['netns', 'exec', this.netns, command, ...args]]
      : [command, [...args]];
    const child = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'], env: systemEnv() });
    const result = new Promise<ExecResult>((resolve, reject) => {
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 600_000);
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.stderr.on('data', (d: Buffer) => err.push(d));
      child.on('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(e.code === 'ENOENT' ? new Error(`${cmd} is not installed (not found in PATH)`) : e);
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({
          code: code ?? (signal ? 128 : 1),
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8') + (signal ? `\nkilled by ${signal}` : ''),
        });
      });
    });
    child.stdin.on('error', () => undefined);
    return { stdin: child.stdin, stdout: child.stdout, result, kill: () => child.kill('SIGKILL') };
  }
}

/** Runs a command and throws a CommandError when it exits non-zero. */
export async function runChecked(
  runner: CommandRunner,
  command: string,
  args: readonly string[],
  options?: ExecOptions,
): Promise<ExecResult> {
  const result = await runner.run(command, args, options);
  if (result.code !== 0) throw new CommandError(`${command} ${args.join(' ')}`.trim(), result);
  return result;
}

/** Records commands instead of running them; answers from `respond` (default: success, no output). */
export class RecordingRunner implements CommandRunner {
  readonly calls: { command: string; args: string[]; input?: string }[] = [];

  constructor(
    private readonly respond: (
      command: string,
      args: readonly string[],
      input?: string,
    ) => ExecResult | undefined = () => undefined,
  ) {}

  async run(command: string, args: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    this.calls.push({
      command,
      args: [...args],
      ...(options.input !== undefined ? { input: options.input } : {}),
    });
    return this.respond(command, args, options.input) ?? { code: 0, stdout: '', stderr: '' };
  }
}

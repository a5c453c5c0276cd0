import type { Clock } from '@nodelet/kernel';

/** What an exec'd command did. Missing fields mean exit 0 and no output. */
export interface ExecResult {
  exitCode?: number;
  stdout?: string | Uint8Array;
  stderr?: string | Uint8Array;
}

/** Facts about the container an exec runs in, for handlers that answer per pod or container. */
export interface ExecContext {
  readonly containerId: string;
  readonly containerName: string;
  readonly podSandboxId: string;
  readonly podName: string;
  readonly podNamespace: string;
  readonly podUid: string;
  readonly clock: Clock;
  /** Aborted when the exec's timeout passes; a slow handler may stop waiting then. */
  readonly signal: AbortSignal;
}

/**
 * Answers ExecSync. Return undefined to fall through to the next handler and finally to the default
 * one. May be async (e.g. `await ctx.clock.sleep(2000)` for a slow probe); the request's timeout is
 * measured on the clock.
 */
export type ExecHandler = (
  containerId: string,
  cmd: readonly string[],
  context: ExecContext,
) => ExecResult | undefined | Promise<ExecResult | undefined>;

const SHELLS = new Set(['sh', 'bash', 'ash', 'dash', 'zsh']);

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** Splits a simple shell word list, honouring single and double quotes (no expansions). */
function shellWords(script: string): string[] {
  const words: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const m of script.matchAll(re))
    words.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3]!));
  return words;
}

/**
 * The default exec: a tiny, deterministic imitation of a shell.
 *
 *  - `true` → 0; `false` → 1; `exit N` (inside `sh -c`) → N
 *  - `echo [-n] words…` → the words on stdout
 *  - `sleep N` → takes N seconds on the clock, then 0 (so probe timeouts can be exercised)
 *  - `sh -c "<one of the above>"` (also bash/ash/dash)
 *  - anything else succeeds: 0, no output (a fake container is healthy unless told otherwise)
 */
export function defaultExec(
  cmd: readonly string[],
  clock: Clock,
  signal?: AbortSignal,
): ExecResult | Promise<ExecResult> {
  if (cmd.length === 0) return { exitCode: 0 };
  const program = basename(cmd[0]!);
  const args = cmd.slice(1);
  if (SHELLS.has(program) && args[0] === '-c' && args[1] !== undefined)
    return runScript(args[1], clock, signal);
  return runWords([program, ...args], clock, signal);
}

function runScript(script: string, clock: Clock, signal?: AbortSignal): ExecResult | Promise<ExecResult> {
  const words = shellWords(script.trim());
  if (words[0] === 'exit') {
    const code = words[1] === undefined ? 0 : Number(words[1]);
    return { exitCode: Number.isInteger(code) ? code & 255 : 2 };
  }
  return runWords(words, clock, signal);
}

function runWords(
  words: readonly string[],
  clock: Clock,
  signal?: AbortSignal,
): ExecResult | Promise<ExecResult> {
  if (words.length === 0) return { exitCode: 0 };
  const program = basename(words[0]!);
  const args = words.slice(1);
  switch (program) {
    case 'true':
      return { exitCode: 0 };
    case 'false':
      return { exitCode: 1 };
    case 'echo': {
      const noNewline = args[0] === '-n';
      const text = (noNewline ? args.slice(1) : args).join(' ');
      return { exitCode: 0, stdout: noNewline ? text : `${text}\n` };
    }
    case 'sleep': {
      const seconds = Number(args[0]);
      if (!(seconds >= 0)) return { exitCode: 1, stderr: `sleep: invalid number '${args[0] ?? ''}'\n` };
      return clock.sleep(seconds * 1000, signal).then(() => ({ exitCode: 0 }));
    }
    default:
      return { exitCode: 0 };
  }
}

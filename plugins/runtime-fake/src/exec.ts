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

type Token = { word: string } | { op: ';' | '&&' | '||' } | { redirect: 'stderr' };

/**
 * Splits a script into words (single and double quotes honoured, no expansions), list operators
 * (`;`, `&&`, `||`, `&`, newlines) and the redirection `>&2` / `1>&2`.
 */
function shellTokens(script: string): Token[] {
  const tokens: Token[] = [];
  const re = /(1?>&2)(?=\s|;|&|\||$)|(&&|\|\||;|&|\n)|"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s;&|"']+)/g;
  for (const m of script.matchAll(re)) {
    if (m[1] !== undefined) tokens.push({ redirect: 'stderr' });
    else if (m[2] !== undefined) tokens.push({ op: m[2] === '&&' || m[2] === '||' ? m[2] : ';' });
    else if (m[3] !== undefined) tokens.push({ word: m[3].replace(/\\(.)/g, '$1') });
    else tokens.push({ word: m[4] ?? m[5]! });
  }
  return tokens;
}

interface SimpleCommand {
  words: string[];
  toStderr: boolean;
  /** How this command joins the one before it. */
  after: ';' | '&&' | '||';
}

function simpleCommands(script: string): SimpleCommand[] {
  const commands: SimpleCommand[] = [];
  let current: SimpleCommand = { words: [], toStderr: false, after: ';' };
  for (const token of shellTokens(script)) {
    if ('word' in token) current.words.push(token.word);
    else if ('redirect' in token) current.toStderr = true;
    else {
      if (current.words.length > 0) commands.push(current);
      current = { words: [], toStderr: false, after: token.op };
    }
  }
  if (current.words.length > 0) commands.push(current);
  return commands;
}

/**
 * The default exec: a tiny, deterministic imitation of a shell.
 *
 *  - `true` → 0; `false` → 1; `exit N` (inside `sh -c`) → N
 *  - `echo [-n] words…` → the words on stdout
 *  - `sleep N` → takes N seconds on the clock, then 0 (so probe timeouts can be exercised)
 *  - `sh -c "<script>"` (also bash/ash/dash): the above joined by `;`, `&&`, `||`, with `>&2` sending
 *    a command's output to stderr, e.g. `sh -c 'echo out; echo err >&2; exit 3'`
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

/**
 * Runs `a; b && c || d` left to right as a shell would: output accumulates, `exit N` ends the
 * script, `>&2` sends a command's stdout to stderr. The exit code is the last command's.
 */
async function runScript(script: string, clock: Clock, signal?: AbortSignal): Promise<ExecResult> {
  let stdout = '';
  let stderr = '';
  let exitCode = 0;
  for (const command of simpleCommands(script)) {
    if (command.after === '&&' && exitCode !== 0) continue;
    if (command.after === '||' && exitCode === 0) continue;
    if (command.words[0] === 'exit') {
      const code = command.words[1] === undefined ? exitCode : Number(command.words[1]);
      exitCode = Number.isInteger(code) ? code & 255 : 2;
      break;
    }
    const result = await runWords(command.words, clock, signal);
    const out = textOf(result.stdout);
    if (command.toStderr) stderr += out;
    else stdout += out;
    stderr += textOf(result.stderr);
    exitCode = result.exitCode ?? 0;
  }
  return { exitCode, stdout, stderr };
}

function textOf(data: string | Uint8Array | undefined): string {
  return data === undefined ? '' : typeof data === 'string' ? data : Buffer.from(data).toString();
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

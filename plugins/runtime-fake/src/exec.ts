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

/**
 * What a command run in the container sees of it, from its sandbox and container config: the
 * default commands `hostname`, `cat <file>` and `id` answer from it.
 */
export interface ContainerView {
  readonly hostname: string;
  readonly uid: bigint;
  readonly gid: bigint;
  readonly supplementalGroups: readonly bigint[];
  /** A file's content as the container sees it, or undefined when the fake does not know the file. */
  readFile(path: string): string | undefined;
}

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
 *  - with a container `view`: `hostname`; `cat FILE…` for the files the view knows (/etc/hosts,
 *    /etc/resolv.conf, /etc/hostname, files mounted from the host); `id -u`, `id -g`, `id`
 *  - `sh -c "<script>"` (also bash/ash/dash): the above joined by `;`, `&&`, `||`, with `>&2` sending
 *    a command's output to stderr, e.g. `sh -c 'echo out; echo err >&2; exit 3'`
 *  - anything else succeeds: 0, no output (a fake container is healthy unless told otherwise)
 */
export function defaultExec(
  cmd: readonly string[],
  clock: Clock,
  signal?: AbortSignal,
  view?: ContainerView,
): ExecResult | Promise<ExecResult> {
  if (cmd.length === 0) return { exitCode: 0 };
  const program = basename(cmd[0]!);
  const args = cmd.slice(1);
  if (SHELLS.has(program) && args[0] === '-c' && args[1] !== undefined)
    return runScript(args[1], clock, signal, view);
  return runWords([program, ...args], clock, signal, view);
}

/**
 * What a container's process writes at once when it starts, for its log: its command run through
 * the same imitation of a shell until it would block (`sleep`, or the program an `exec` starts),
 * e.g. `sh -c 'echo started; sleep 3600'` → `started`. Programs the fake does not know write nothing
 * and do not block. Synchronous and deterministic: no timer is involved.
 */
export function startOutput(
  cmd: readonly string[],
  view?: ContainerView,
): { stdout: string; stderr: string } {
  const out = { stdout: '', stderr: '' };
  if (cmd.length === 0) return out;
  const program = basename(cmd[0]!);
  const script = SHELLS.has(program) && cmd[1] === '-c' ? cmd[2] : undefined;
  const commands: SimpleCommand[] =
    script !== undefined ? simpleCommands(script) : [{ words: [...cmd], toStderr: false, after: ';' }];
  let exitCode = 0;
  for (const command of commands) {
    if (command.after === '&&' && exitCode !== 0) continue;
    if (command.after === '||' && exitCode === 0) continue;
    let words = command.words;
    const last = words[0] === 'exec';
    if (last) words = words.slice(1);
    if (words.length === 0 || words[0] === 'exit' || basename(words[0]!) === 'sleep') break;
    const result = runWords(words, undefined, undefined, view);
    if (result instanceof Promise) break;
    const text = textOf(result.stdout);
    if (command.toStderr) out.stderr += text;
    else out.stdout += text;
    out.stderr += textOf(result.stderr);
    exitCode = result.exitCode ?? 0;
    if (last) break;
  }
  return out;
}

/**
 * Runs `a; b && c || d` left to right as a shell would: output accumulates, `exit N` ends the
 * script, `>&2` sends a command's stdout to stderr. The exit code is the last command's.
 */
async function runScript(
  script: string,
  clock: Clock,
  signal?: AbortSignal,
  view?: ContainerView,
): Promise<ExecResult> {
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
    const result = await runWords(command.words, clock, signal, view);
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
  clock: Clock | undefined,
  signal?: AbortSignal,
  view?: ContainerView,
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
      if (!clock) return { exitCode: 0 };
      return clock.sleep(seconds * 1000, signal).then(() => ({ exitCode: 0 }));
    }
    case 'hostname':
      return view ? { exitCode: 0, stdout: `${view.hostname}\n` } : { exitCode: 0 };
    case 'cat':
      // Files the view does not know read as empty, as before (`cat /tmp/healthy` probes pass).
      return { exitCode: 0, stdout: args.map((path) => view?.readFile(path) ?? '').join('') };
    case 'id':
      return view ? idOutput(args, view) : { exitCode: 0 };
    default:
      return { exitCode: 0 };
  }
}

/** `id -u`, `id -g`, `id -G`, `id`: numbers only, as for users without a passwd entry (root is named). */
function idOutput(args: readonly string[], view: ContainerView): ExecResult {
  const named = (n: bigint) => (n === 0n ? `${n}(root)` : String(n));
  const groups = [view.gid, ...view.supplementalGroups.filter((g) => g !== view.gid)];
  const flags = args.join('');
  if (flags === '-u') return { exitCode: 0, stdout: `${view.uid}\n` };
  if (flags === '-g') return { exitCode: 0, stdout: `${view.gid}\n` };
  if (flags === '-G') return { exitCode: 0, stdout: `${groups.join(' ')}\n` };
  if (args.length === 0) {
    const text = `uid=${named(view.uid)} gid=${named(view.gid)} groups=${groups.map(named).join(',')}`;
    return { exitCode: 0, stdout: `${text}\n` };
  }
  return { exitCode: 1, stderr: `id: unrecognized option '${args[0]}'\n` };
}

import { StringDecoder } from 'node:string_decoder';
import { type CommandRunner, outputSummary, type RunningCommand } from './exec.js';

const READ_SCRIPT_NAME = 'read -r script || exit 0';

/** Whether `command args` starts a standby shell (the first line of its stdin names its script). */
export function isStandbyShell(command: string, args: readonly string[]): boolean {
  return command === 'sh' && args[0] === '-c' && (args[1] ?? '').startsWith(READ_SCRIPT_NAME);
}

/**
 * A shell started ahead of the command a sync will run. It waits on its stdin for one line naming one
 * of its scripts, runs that script, and the script reads the rest of the same stdin (`read` takes no
 * more than its line from a pipe). Node starts every child by forking its whole process — on a large
 * process milliseconds of CPU, and each page it writes afterwards faults once more — so a backend
 * prepares the shell while the proxy is idle and a sync starts its kernel tool the way a shell would.
 *
 * A waiting shell holds no lock and runs nothing: it exits when its stdin is closed (`close`, or this
 * process ending). Without `CommandRunner.start` there is no standby: `run` gives undefined and the
 * caller uses `CommandRunner.run`.
 */
export class StandbyShell {
  private readonly script: string;
  private waiting: { command: RunningCommand; ended: boolean } | undefined;

  /** `scripts`: name (a word) → a shell script; each should end by `exec`-ing the tool that reads stdin. */
  constructor(
    private readonly runner: CommandRunner,
    private readonly scripts: Readonly<Record<string, string>>,
  ) {
    const cases = Object.entries(scripts).map(([name, script]) => {
      if (!/^[a-z][a-z0-9-]*$/.test(name))
        throw new Error(`standby script name "${name}" is not a plain word`);
      return `${name}) ${script} ;;`;
    });
    this.script = [
      READ_SCRIPT_NAME,
      `case "$script" in ${cases.join(' ')} *) echo "standby shell: no script named '$script'" >&2; exit 2 ;; esac`,
    ].join('; ');
  }

  /** The shell command line, as started (for tests and error messages). */
  get commandLine(): string {
    return `sh -c ${this.script}`;
  }

  /** Starts a waiting shell unless one is waiting already. */
  prepare(): void {
    if (!this.runner.start || (this.waiting && !this.waiting.ended)) return;
    const command = this.runner.start('sh', ['-c', this.script]);
    const waiting = { command, ended: false };
    const ended = () => {
      waiting.ended = true;
    };
    command.result.then(ended, ended);
    this.waiting = waiting;
  }

  /**
   * Runs script `name` in the waiting shell (or in one started now, when none is waiting or it has
   * ended) and hands over that shell: write the script's input to its stdin. The next `prepare` starts
   * another. Undefined when the runner cannot start commands.
   */
  run(name: string): RunningCommand | undefined {
    if (!(name in this.scripts)) throw new Error(`standby shell has no script named "${name}"`);
    if (!this.waiting || this.waiting.ended) {
      this.waiting = undefined;
      this.prepare();
    }
    const waiting = this.waiting;
    this.waiting = undefined;
    if (!waiting) return undefined;
    waiting.command.stdin.write(`${name}\n`);
    return waiting.command;
  }

  /** Ends the waiting shell, if any: it exits without running anything. */
  async close(): Promise<void> {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (!waiting) return;
    waiting.command.stdin.end();
    await waiting.command.result.catch(() => undefined);
  }
}

/**
 * Shell text that ends the output of the command before it with a status line: a newline, `marker`,
 * the command's exit code. The newline of its own means the status line always starts a line.
 */
export const statusLine = (marker: string): string => `printf '\\n${marker}%d\\n' $?`;

/** One command's output, up to its status line, and its exit code. */
export interface StatusSection {
  text: string;
  code: number;
}

/**
 * Reads `count` sections from `stdout`: what the commands of a standby script printed before it became
 * the tool that reads stdin, each ended by `statusLine(marker)`. Looks for status lines only where new
 * output arrives (the outputs can be megabytes); stops listening once all have come. Rejects when the
 * command ends first.
 */
export function statusSections(
  running: RunningCommand,
  marker: string,
  count: number,
): Promise<StatusSection[]> {
  const pattern = new RegExp(`\\n${marker.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(-?\\d+)\\n`);
  const keep = marker.length + 16; // enough of the last output to hold the start of a status line
  return new Promise((resolve, reject) => {
    const decoder = new StringDecoder('utf8');
    const sections: StatusSection[] = [];
    let parts: string[] = []; // the current section's output so far
    let carry = ''; // its last characters (also in parts), where a status line may have begun
    const onData = (data: Buffer) => {
      let text = decoder.write(data);
      for (;;) {
        const window = carry + text;
        const m = pattern.exec(window);
        if (!m) {
          parts.push(text);
          carry = window.slice(-keep);
          return;
        }
        const cut = m.index - carry.length; // negative: the status line began in what was carried
        if (cut >= 0) parts.push(text.slice(0, cut));
        const all = parts.join('');
        sections.push({ text: cut >= 0 ? all : all.slice(0, cut), code: Number(m[1]) });
        if (sections.length === count) {
          running.stdout.off('data', onData);
          resolve(sections);
          return;
        }
        text = window.slice(m.index + m[0].length);
        parts = [];
        carry = '';
      }
    };
    running.stdout.on('data', onData);
    running.result.then(
      () => reject(new Error(`the command ended after ${sections.length} of ${count} status lines`)),
      reject,
    );
  });
}

/**
 * Kills a standby script whose first command (a listing) failed, before the tool it became applies
 * anything, and returns what it printed on stderr, on one line ('' when nothing): the failing
 * command's message, for the caller's error.
 */
export async function abandonWithStderr(running: RunningCommand): Promise<string> {
  running.kill();
  const result = await running.result.catch(() => undefined);
  return result?.stderr ? outputSummary({ stdout: '', stderr: result.stderr }) : '';
}

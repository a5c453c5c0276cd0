import { PassThrough } from 'node:stream';
import test from 'ava';
import { createLogger } from '@nodelet/kernel';
import { type CommandRunner, emptyChangeSet, type ExecResult, type RunningCommand } from '@nodelet/proxy';
import { conformanceTracker } from '@nodelet/proxy/testing';
import { NftablesBackend } from './backend.js';

const quiet = createLogger({ sink: () => undefined });

/**
 * Plays the standby shell of a full sync: once its script is named, prints `listing` ended by its
 * status line (`code`), with `stderr` when it failed; records what it received.
 */
class ListingShell implements CommandRunner {
  readonly shells: { script?: string; input: string; killed: boolean }[] = [];
  constructor(
    private readonly code: number,
    private readonly stderr = '',
    private readonly listing = '',
  ) {}

  run(): Promise<ExecResult> {
    return Promise.resolve({ code: 0, stdout: '', stderr: '' });
  }

  start(): RunningCommand {
    const shell = { script: undefined as string | undefined, input: '', killed: false };
    this.shells.push(shell);
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    let done: (r: ExecResult) => void = () => undefined;
    const result = new Promise<ExecResult>((resolve) => (done = resolve));
    stdin.on('data', (d: Buffer) => {
      shell.input += d.toString();
      if (shell.script !== undefined || !shell.input.includes('\n')) return;
      shell.script = shell.input.slice(0, shell.input.indexOf('\n'));
      shell.input = shell.input.slice(shell.script.length + 1);
      stdout.write(`${this.listing}\n# nodelet: nft list exit ${this.code}\n`);
    });
    stdin.on('end', () => done({ code: 0, stdout: '', stderr: '' }));
    return {
      stdin,
      stdout,
      result,
      kill: () => {
        shell.killed = true;
        done({ code: 137, stdout: '', stderr: this.stderr });
      },
    };
  }
}

test('a full sync lists what exists in the shell that becomes its nft -f, started before the sync', async (t) => {
  const runner = new ListingShell(0);
  const backend = new NftablesBackend({ runner, logger: quiet });
  await backend.prepare();
  t.is(runner.shells.length, 1);
  const result = await backend.sync(conformanceTracker().commit().state, emptyChangeSet(), true);
  t.is(runner.shells.length, 1, 'the sync started no child of its own');
  t.is(runner.shells[0]!.script, 'full');
  t.regex(result.summary!, /\(new table\)/, 'no table in the listing: a fresh table');
  t.regex(runner.shells[0]!.input, /^add table ip kube-proxy/m);
  await backend.stop();

  // A table that exists is not made anew: its chains and sets are in the listing.
  const again = new NftablesBackend({
    runner: new ListingShell(0, '', 'table ip kube-proxy {\n\tchain services {\n\t}\n}\n'),
    logger: quiet,
  });
  const existing = await again.sync(conformanceTracker().commit().state, emptyChangeSet(), true);
  t.notRegex(existing.summary!, /new table/);
});

test('a listing that fails: the shell is killed before any input, the error names the listing', async (t) => {
  const runner = new ListingShell(1, 'Error: Could not process rule: Operation not permitted');
  const backend = new NftablesBackend({ runner, logger: quiet });
  const err = await t.throwsAsync(() =>
    backend.sync(conformanceTracker().commit().state, emptyChangeSet(), true),
  );
  t.is(
    err!.message,
    "nft -t 'list chains ip; list sets ip' exited with code 1: Error: Could not process rule: Operation not permitted",
  );
  t.true(runner.shells[0]!.killed);
  t.is(runner.shells[0]!.input, '', 'nothing was written to nft -f');
});

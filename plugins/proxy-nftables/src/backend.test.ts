import { PassThrough, Writable } from 'node:stream';
import test from 'ava';
import { createLogger, VirtualClock } from '@nodelet/kernel';
import { type CommandRunner, emptyChangeSet, type ExecResult, type RunningCommand } from '@nodelet/proxy';
import { bulkTracker, conformanceTracker } from '@nodelet/proxy/testing';
import { NftablesBackend, renderNftables } from './backend.js';
import { isServiceChain } from './names.js';

const quiet = createLogger({ sink: () => undefined });

/**
 * Plays the standby shell of a full sync: once its script is named, prints `listing` ended by its
 * status line (`code`), with `stderr` when it failed; records what it received. Like a pipe, it takes
 * each write some turns of the event loop later (the write's callback), and notes how many bytes were
 * written after it and before it was taken.
 */
class ListingShell implements CommandRunner {
  readonly shells: {
    script?: string;
    input: string;
    writes: { bytes: number; queuedBehind: number }[];
    killed: boolean;
  }[] = [];
  constructor(
    private readonly shell: {
      /** The listing's exit code, and its stderr when it failed. */
      code?: number;
      stderr?: string;
      listing?: string;
      /** Turns of the event loop before each piece of input is taken. */
      takeAfter?: number;
      /** How `nft -f -` ends once its input is complete. */
      applied?: ExecResult;
    } = {},
  ) {}

  run(): Promise<ExecResult> {
    return Promise.resolve({ code: 0, stdout: '', stderr: '' });
  }

  start(): RunningCommand {
    const shell = {
      script: undefined as string | undefined,
      input: '',
      writes: [] as { bytes: number; queuedBehind: number }[],
      killed: false,
    };
    this.shells.push(shell);
    const stdout = new PassThrough();
    let done: (r: ExecResult) => void = () => undefined;
    const result = new Promise<ExecResult>((resolve) => (done = resolve));
    const stdin = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        let text = chunk.toString();
        if (shell.script === undefined) {
          // The shell's `read` takes the first line only.
          shell.script = text.slice(0, text.indexOf('\n'));
          text = text.slice(shell.script.length + 1);
          stdout.write(`${this.shell.listing ?? ''}\n# nodelet: nft list exit ${this.shell.code ?? 0}\n`);
          return cb();
        }
        shell.input += text;
        let turns = this.shell.takeAfter ?? 1;
        const take = () => {
          if (--turns > 0) return void setImmediate(take);
          shell.writes.push({
            bytes: text.length,
            // What the backend wrote while this piece waited (the stream queues it).
            queuedBehind: stdin.writableLength - chunk.length,
          });
          cb();
        };
        setImmediate(take);
      },
      final: (cb) => {
        done(this.shell.applied ?? { code: 0, stdout: '', stderr: '' });
        cb();
      },
    });
    return {
      stdin,
      stdout,
      result,
      kill: () => {
        shell.killed = true;
        done({ code: 137, stdout: '', stderr: this.shell.stderr ?? '' });
      },
    };
  }
}

test('a full sync lists what exists in the shell that becomes its nft -f, started before the sync', async (t) => {
  const runner = new ListingShell();
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
    runner: new ListingShell({ listing: 'table ip kube-proxy {\n\tchain services {\n\t}\n}\n' }),
    logger: quiet,
  });
  const existing = await again.sync(conformanceTracker().commit().state, emptyChangeSet(), true);
  t.notRegex(existing.summary!, /new table/);
});

test('a listing that fails: the shell is killed before any input, the error names the listing', async (t) => {
  const runner = new ListingShell({
    code: 1,
    stderr: 'Error: Could not process rule: Operation not permitted',
  });
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

test('a full sync writes the transaction while it renders it, at most 512 KiB ahead of nft', async (t) => {
  // nft takes each piece only three turns of the event loop after it came: the render goes on meanwhile.
  const runner = new ListingShell({ takeAfter: 3 });
  const backend = new NftablesBackend({ runner, logger: quiet });
  await backend.prepare();
  const { state } = bulkTracker(600).commit();
  const result = await backend.sync(state, emptyChangeSet(), true);
  const [shell] = runner.shells;
  t.is(shell!.input, renderNftables(state), 'the same bytes as the whole transaction');
  t.is(result.bytes, shell!.input.length);
  t.true(shell!.input.length > 1024 * 1024, `${shell!.input.length} bytes`);
  for (const w of shell!.writes.slice(0, -1)) {
    t.true(w.bytes >= 64 * 1024 && w.bytes < 80 * 1024, `a piece of ${w.bytes} bytes`);
  }
  const ahead = Math.max(...shell!.writes.map((w) => w.queuedBehind));
  t.true(ahead >= 64 * 1024, `rendered on while nft read (at most ${ahead} bytes queued)`);
  t.true(ahead <= (512 + 80) * 1024, `never far ahead of nft (${ahead} bytes queued)`);
  await backend.stop();
});

test('a full sync into an existing table flushes the chains the kernel has, and only those', async (t) => {
  const kept = 'service-LPBTB7PB-conformance/web/tcp/http';
  const stale = 'endpoint-STALESTA-conformance/gone/tcp/__10.0.0.1/80';
  const listing = `table ip kube-proxy {\n\tchain services {\n\t}\n\tchain ${kept} {\n\t}\n\tchain ${stale} {\n\t}\n}\n`;
  const runner = new ListingShell({ listing });
  const backend = new NftablesBackend({ runner, logger: quiet });
  await backend.prepare();
  await backend.sync(conformanceTracker().commit().state, emptyChangeSet(), true);
  const lines = runner.shells[0]!.input.split('\n');
  t.deepEqual(
    lines.filter((l) => l.startsWith('flush chain ') && isServiceChain(l.split(' ')[4]!)),
    [`flush chain ip kube-proxy ${stale}`, `flush chain ip kube-proxy ${kept}`].sort(),
    'a chain the kernel does not have yet is made, not flushed (nft refuses to flush what does not exist)',
  );
  t.true(lines.includes(`delete chain ip kube-proxy ${stale}`));
  t.false(lines.includes(`delete chain ip kube-proxy ${kept}`));
  await backend.stop();
});

test('on a kernel before 6.2 a stale chain is deleted by the first sync a second later, on the clock', async (t) => {
  const stale = 'endpoint-STALESTA-conformance/gone/tcp/__10.0.0.1/80';
  const listing = `table ip kube-proxy {\n\tchain services {\n\t}\n\tchain ${stale} {\n\t}\n}\n`;
  const deletions: string[] = [];
  const shell = new ListingShell({ listing });
  const runner: CommandRunner = {
    run: (command, args, options) => {
      if (command === 'nft' && args[0] === '-f') deletions.push(String(options?.input ?? ''));
      // Partial syncs ask whether the table is still there: it is.
      if (args[0] === 'list')
        return Promise.resolve({ code: 0, stdout: 'table ip kube-proxy\n', stderr: '' });
      return shell.run();
    },
    start: () => shell.start(),
  };
  const clock = new VirtualClock();
  const backend = new NftablesBackend({ runner, logger: quiet, clock, deleteStaleNow: false });
  const { state } = conformanceTracker().commit();
  await backend.sync(state, emptyChangeSet(), true);
  t.false(
    shell.shells[0]!.input.includes(`delete chain ip kube-proxy ${stale}`),
    'not in the same transaction',
  );
  await clock.advance(999);
  await backend.sync(state, emptyChangeSet(), false);
  t.deepEqual(deletions, [], 'not before a second has passed');
  await clock.advance(1);
  await backend.sync(state, emptyChangeSet(), false);
  t.deepEqual(deletions, [`delete chain ip kube-proxy ${stale}\n`]);
  await backend.stop();
});

test('a refused full sync names the line of its streamed transaction nft stopped at', async (t) => {
  const state = conformanceTracker().commit().state;
  const stderr = '/dev/stdin:3:1-9: Error: Could not process rule: Operation not permitted\n';
  const runner = new ListingShell({ applied: { code: 1, stdout: '', stderr } });
  const backend = new NftablesBackend({ runner, logger: quiet });
  await backend.prepare();
  const err = await t.throwsAsync(() => backend.sync(state, emptyChangeSet(), true));
  t.is(
    err!.message,
    `nft -f - exited with code 1: ${stderr.trim()}; line 3 of the transaction is: ${renderNftables(state).split('\n')[2]}`,
  );
  await backend.stop();
});

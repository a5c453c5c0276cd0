import { PassThrough, Writable } from 'node:stream';
import test from 'ava';
import { createLogger } from '@nodelet/kernel';
import {
  type CommandRunner,
  emptyChangeSet,
  type ExecResult,
  RecordingRunner,
  type RunningCommand,
} from '@nodelet/proxy';
import { conformanceTracker } from '@nodelet/proxy/testing';
import { IptablesBackend, renderIptables } from './backend.js';
import { JUMP_RULES } from './chains.js';
import { IptablesRenderer } from './render.js';

const quiet = createLogger({ sink: () => undefined });
const ok = (stdout = ''): ExecResult => ({ code: 0, stdout, stderr: '' });

/**
 * Plays the full sync's one child (`sh -c '{ iptables-save; … } & exec iptables-restore …'`): its stdout
 * gives what `save` answers and the save's status line; records the command line, what the restore
 * received, and kills. Like a pipe, it reads a chunk a moment after it was written and only then
 * acknowledges it: a sync that wrote into a chunk's memory before that would be caught.
 */
class StreamingRunner implements CommandRunner {
  readonly restores: { command: string; chunks: Buffer[]; ended: boolean; killed: boolean }[] = [];
  constructor(private readonly save: () => Promise<ExecResult>) {}

  run(command: string): Promise<ExecResult> {
    return command.endsWith('-save') ? this.save() : Promise.resolve(ok());
  }

  start(command: string, args: readonly string[]): RunningCommand {
    const r = { command: [command, ...args].join(' '), chunks: [] as Buffer[], ended: false, killed: false };
    this.restores.push(r);
    const stdout = new PassThrough();
    let saveStderr = '';
    void this.save().then((s) => {
      saveStderr = s.stderr;
      stdout.write(`${s.stdout}\n# nodelet: iptables-save exit ${s.code}\n`);
    });
    let done: (e: ExecResult) => void = () => undefined;
    const result = new Promise<ExecResult>((resolve) => (done = resolve));
    const stdin = new Writable({
      write(chunk: Buffer, _enc, cb) {
        setImmediate(() => {
          r.chunks.push(Buffer.from(chunk));
          cb();
        });
      },
      final(cb) {
        r.ended = true;
        done({ code: 0, stdout: '', stderr: saveStderr });
        cb();
      },
    });
    return {
      stdin,
      stdout,
      result,
      kill: () => {
        r.killed = true;
        done({ code: 137, stdout: '', stderr: saveStderr });
      },
    };
  }
}

test('a full sync streams what a whole render gives: stale chains deleted, only missing jumps added', async (t) => {
  const saved = [
    '*nat',
    ':PREROUTING ACCEPT [0:0]',
    ':KUBE-SERVICES - [0:0]',
    ':KUBE-SVC-STALESTALESTALE1 - [0:0]',
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    'COMMIT',
    '',
  ].join('\n');
  const runner = new StreamingRunner(async () => ok(saved));
  const backend = new IptablesBackend({ backend: 'legacy', runner, logger: quiet });
  const state = conformanceTracker().commit().state;
  const result = await backend.sync(state, emptyChangeSet(), true);
  t.true(result.full);
  const [restore, ...more] = runner.restores;
  t.is(more.length, 0, 'one child for the save and the restore');
  t.regex(
    restore!.command,
    /^sh -c \{ iptables-legacy-save; .* & exec iptables-legacy-restore --wait=5 --noflush$/,
  );
  t.true(restore!.ended && !restore!.killed);
  const streamed = Buffer.concat(restore!.chunks).toString();
  const whole = new IptablesRenderer().render({
    state,
    changes: emptyChangeSet(),
    full: true,
    existingChains: new Set(['KUBE-SVC-STALESTALESTALE1']),
    missingJumps: JUMP_RULES.filter((j) => !(j.table === 'nat' && j.from === 'PREROUTING')),
  }).text;
  t.is(streamed, whole);
  t.true(streamed.includes(':KUBE-SVC-STALESTALESTALE1 - [0:0]\n-X KUBE-SVC-STALESTALESTALE1\n'));
  t.false(streamed.includes('-I PREROUTING'), 'the jump iptables-save showed is not added again');
  t.true(streamed.includes('-I OUTPUT 1 -m comment --comment "kubernetes service portals" -j KUBE-SERVICES'));
  t.is(result.bytes, Buffer.byteLength(streamed));
});

test('when iptables-save fails, the restore started alongside is killed before any COMMIT', async (t) => {
  const runner = new StreamingRunner(async () => ({ code: 4, stdout: '', stderr: 'permission denied' }));
  const backend = new IptablesBackend({ backend: 'legacy', runner, logger: quiet });
  const state = conformanceTracker().commit().state;
  const err = await t.throwsAsync(() => backend.sync(state, emptyChangeSet(), true));
  t.regex(err!.message, /iptables-legacy-save exited with code 4: permission denied/);
  const [restore] = runner.restores;
  t.true(restore!.killed);
  t.false(Buffer.concat(restore!.chunks).toString().includes('COMMIT'), 'nothing could be committed');
});

test('a runner that cannot stream gets the whole input at once', async (t) => {
  const runner = new RecordingRunner();
  const backend = new IptablesBackend({ backend: 'nft', runner, logger: quiet });
  const state = conformanceTracker().commit().state;
  await backend.sync(state, emptyChangeSet(), true);
  const restore = runner.calls.find((c) => c.command === 'iptables-nft-restore');
  t.deepEqual(restore?.args, ['--wait=5', '--noflush']);
  t.is(restore?.input, renderIptables(state));
});

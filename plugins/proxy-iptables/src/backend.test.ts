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
import { conformanceSlices, conformanceTracker } from '@nodelet/proxy/testing';
import { IptablesBackend, renderIptables } from './backend.js';
import { JUMP_RULES } from './chains.js';
import { detectMode } from './iptables.js';
import { IptablesRenderer } from './render.js';

const quiet = createLogger({ sink: () => undefined });
const ok = (stdout = ''): ExecResult => ({ code: 0, stdout, stderr: '' });

/**
 * Plays the sync's one child, the standby shell (`sh -c 'read -r script; case …'`): the first line on
 * its stdin names the script; for `full` its stdout gives what `save` answers and the save's status
 * line. Records the command line, the script asked for, what the restore received, and kills. Like a
 * pipe, it reads a chunk a moment after it was written and only then acknowledges it: a sync that
 * wrote into a chunk's memory before that would be caught.
 */
class StreamingRunner implements CommandRunner {
  readonly restores: {
    command: string;
    script?: string;
    chunks: Buffer[];
    ended: boolean;
    killed: boolean;
  }[] = [];
  constructor(private readonly save: () => Promise<ExecResult>) {}

  run(command: string): Promise<ExecResult> {
    return command.endsWith('-save') ? this.save() : Promise.resolve(ok());
  }

  start(command: string, args: readonly string[]): RunningCommand {
    const r = {
      command: [command, ...args].join(' '),
      script: undefined as string | undefined,
      chunks: [] as Buffer[],
      ended: false,
      killed: false,
    };
    this.restores.push(r);
    const stdout = new PassThrough();
    let saveStderr = '';
    const runScript = (script: string) => {
      r.script = script;
      if (script !== 'full') return;
      void this.save().then((s) => {
        saveStderr = s.stderr;
        stdout.write(`${s.stdout}\n# nodelet: iptables-save exit ${s.code}\n`);
      });
    };
    let done: (e: ExecResult) => void = () => undefined;
    const result = new Promise<ExecResult>((resolve) => (done = resolve));
    const stdin = new Writable({
      write(chunk: Buffer, _enc, cb) {
        if (r.script === undefined) {
          // The shell's `read` takes the first line only.
          const text = chunk.toString();
          const eol = text.indexOf('\n');
          runScript(text.slice(0, eol));
          chunk = chunk.subarray(eol + 1);
        }
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
  t.is(restore!.script, 'full');
  t.true(
    restore!.command.includes(
      "full) { iptables-legacy-save; printf '\\n# nodelet: iptables-save exit %d\\n' $?; } & exec iptables-legacy-restore --wait=5 --noflush ;;",
    ),
    restore!.command,
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

test('a prepared backend runs each sync in a shell started before it, and starts the next one after', async (t) => {
  const runner = new StreamingRunner(async () => ok(''));
  const backend = new IptablesBackend({ backend: 'legacy', runner, logger: quiet });
  const tracker = conformanceTracker();
  const nextTick = () => new Promise((resolve) => setImmediate(resolve));
  await backend.prepare();
  t.is(runner.restores.length, 1, 'the first shell waits before any sync');
  t.is(runner.restores[0]!.script, undefined);

  await backend.sync(tracker.commit().state, emptyChangeSet(), true);
  t.is(runner.restores.length, 1, 'the full sync started no child of its own');
  t.is(runner.restores[0]!.script, 'full');
  await nextTick();
  t.is(runner.restores.length, 2, 'the next shell is started once the sync has returned');

  tracker.deleteEndpointSlice(conformanceSlices()[0]!);
  const { state, changes } = tracker.commit();
  const partial = await backend.sync(state, changes, false);
  t.false(partial.full);
  t.is(runner.restores[1]!.script, 'restore', 'the partial restore ran in the waiting shell');
  t.regex(Buffer.concat(runner.restores[1]!.chunks).toString(), /^\*nat\n/);
  await nextTick();
  t.is(runner.restores.length, 3);

  await backend.stop();
  t.true(runner.restores[2]!.ended, 'stop ends the waiting shell');
  t.is(runner.restores[2]!.script, undefined, 'having run nothing');
  await backend.sync(state, emptyChangeSet(), true);
  await nextTick();
  t.is(runner.restores.length, 4, 'a stopped backend starts a shell per sync and keeps none waiting');
});

test('the back-end detection is one child, a shell; one that cannot start reads as no rules', async (t) => {
  const calls: string[] = [];
  const answering = (stdout: string): CommandRunner => ({
    run: (command) => {
      calls.push(command);
      return Promise.resolve(ok(stdout));
    },
  });
  t.deepEqual(await detectMode(answering('rules nft 0\nrules legacy 3\n')), {
    mode: 'legacy',
    reason: 'existing rules: 3 legacy, 0 nft',
  });
  t.deepEqual(calls, ['sh']);
  t.deepEqual(await detectMode(answering('hint legacy KUBE-IPTABLES-HINT\n')), {
    mode: 'legacy',
    reason: 'chain KUBE-IPTABLES-HINT found in iptables-legacy-save -t mangle',
  });
  const failing: CommandRunner = { run: () => Promise.reject(new Error('sh is not installed')) };
  t.deepEqual(await detectMode(failing), { mode: 'nft', reason: 'existing rules: 0 legacy, 0 nft' });
});

import { PassThrough } from 'node:stream';
import test from 'ava';
import {
  type CommandRunner,
  type ExecOptions,
  type ExecResult,
  HostCommandRunner,
  type RunningCommand,
} from './exec.js';
import { isStandbyShell, StandbyShell, statusLine, statusSections } from './standby.js';

/** The host's real `sh`, counting the children started. */
class CountingRunner implements CommandRunner {
  readonly started: RunningCommand[] = [];
  private readonly host = new HostCommandRunner();
  run(command: string, args: readonly string[], options?: ExecOptions) {
    return this.host.run(command, args, options);
  }
  start(command: string, args: readonly string[]): RunningCommand {
    const running = this.host.start(command, args);
    this.started.push(running);
    return running;
  }
}

const scripts = {
  upper: "exec tr 'a-z' 'A-Z'",
  count: 'exec wc -c',
};

test('a prepared shell runs the named script on the rest of its stdin, started before it was asked', async (t) => {
  const runner = new CountingRunner();
  const standby = new StandbyShell(runner, scripts);
  standby.prepare();
  standby.prepare();
  t.is(runner.started.length, 1, 'one shell waits');
  const running = standby.run('upper')!;
  t.is(runner.started.length, 1, 'running a script starts no child');
  t.is(running, runner.started[0]);
  // Written at once after the script's name, in pieces: `read` takes its line and nothing more.
  running.stdin.write('first line\n');
  running.stdin.end('and the rest\n');
  const result = await running.result;
  t.is(result.code, 0);
  t.is(result.stdout, 'FIRST LINE\nAND THE REST\n');
});

test('without a waiting shell, run starts one; a shell that has died is replaced', async (t) => {
  const runner = new CountingRunner();
  const standby = new StandbyShell(runner, scripts);
  const first = standby.run('count')!;
  first.stdin.end('12345');
  t.is((await first.result).stdout.trim(), '5');
  t.is(runner.started.length, 1);

  standby.prepare();
  runner.started[1]!.kill();
  await runner.started[1]!.result;
  const next = standby.run('count')!;
  t.is(runner.started.length, 3, 'the dead shell was not used');
  next.stdin.end('abc');
  t.is((await next.result).stdout.trim(), '3');
});

test('close ends the waiting shell without running any script', async (t) => {
  const runner = new CountingRunner();
  const standby = new StandbyShell(runner, { touch: 'echo ran' });
  standby.prepare();
  await standby.close();
  const result = await runner.started[0]!.result;
  t.deepEqual(result, { code: 0, stdout: '', stderr: '' });
  await standby.close(); // nothing waiting: no-op
});

test('script names are plain words, and only those given can be run', (t) => {
  t.throws(() => new StandbyShell(new CountingRunner(), { 'a;b': 'true' }), {
    message: /"a;b" is not a plain word/,
  });
  const standby = new StandbyShell(new CountingRunner(), scripts);
  t.throws(() => standby.run('lower'), { message: /no script named "lower"/ });
  t.true(isStandbyShell('sh', ['-c', standby.commandLine.slice('sh -c '.length)]));
  t.false(isStandbyShell('sh', ['-c', 'exec tr a-z A-Z']));
});

test('a runner that cannot start commands has no standby', (t) => {
  const standby = new StandbyShell({ run: async () => ({ code: 0, stdout: '', stderr: '' }) }, scripts);
  standby.prepare();
  t.is(standby.run('upper'), undefined);
});

/** A command whose stdout is written by the test, in the pieces it chooses. */
function scriptedOutput() {
  const stdout = new PassThrough();
  let end: () => void = () => undefined;
  const result = new Promise<ExecResult>(
    (resolve) => (end = () => resolve({ code: 0, stdout: '', stderr: '' })),
  );
  const running: RunningCommand = { stdin: new PassThrough(), stdout, result, kill: () => end() };
  return { running, stdout, end };
}

test('status sections: each command output and exit code, however the output is cut into chunks', async (t) => {
  const marker = '# status ';
  const output =
    '*nat\n:KUBE-SERVICES - [0:0]\n' +
    `\n${marker}0\n` +
    'no newline at the end' +
    `\n${marker}4\n` +
    `\n${marker}0\n` +
    'what the tool prints afterwards\n';
  const expected = [
    { text: '*nat\n:KUBE-SERVICES - [0:0]\n', code: 0 },
    { text: 'no newline at the end', code: 4 },
    { text: '', code: 0 },
  ];
  for (let size = 1; size <= output.length; size++) {
    const { running, stdout } = scriptedOutput();
    const sections = statusSections(running, marker, 3);
    for (let i = 0; i < output.length; i += size) stdout.write(output.slice(i, i + size));
    t.deepEqual(await sections, expected, `chunks of ${size}`);
  }
  // Cut at every single position, in two pieces.
  for (let cut = 0; cut <= output.length; cut++) {
    const { running, stdout } = scriptedOutput();
    const sections = statusSections(running, marker, 3);
    stdout.write(output.slice(0, cut));
    stdout.write(output.slice(cut));
    t.deepEqual(await sections, expected, `cut at ${cut}`);
  }
});

test('status sections: a command that ends before its status lines is an error', async (t) => {
  const { running, stdout, end } = scriptedOutput();
  const sections = statusSections(running, '# status ', 2);
  stdout.write('listing\n\n# status 0\npartial');
  end();
  await t.throwsAsync(sections, { message: 'the command ended after 1 of 2 status lines' });
});

test('status sections from a real standby script: outputs first, then the tool reads stdin', async (t) => {
  const marker = '# nodelet: exit ';
  const standby = new StandbyShell(new CountingRunner(), {
    list: `echo one; ${statusLine(marker)}; sh -c 'echo two; exit 3'; ${statusLine(marker)}; exec cat`,
  });
  const running = standby.run('list')!;
  const sections = await statusSections(running, marker, 2);
  t.deepEqual(sections, [
    { text: 'one\n', code: 0 },
    { text: 'two\n', code: 3 },
  ]);
  running.stdin.end('input after the listing\n');
  t.regex((await running.result).stdout, /input after the listing\n$/);
});

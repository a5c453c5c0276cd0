import test from 'ava';
import { createLogger, VirtualClock } from '@nodelet/kernel';
import type { ExecOutcome } from './invoke.js';
import { networkFromList } from './network-config.js';
import { PluginRunner } from './plugin-runner.js';

const busy = (): ExecOutcome => ({
  kind: 'spawn-error',
  error: Object.assign(new Error('spawn ETXTBSY'), { code: 'ETXTBSY' }),
});
const ok: ExecOutcome = { kind: 'exited', code: 0, signal: null, stdout: '', stderr: '' };

test('a binary being written (ETXTBSY) is run again after 200 ms, then 400 ms, on the clock', async (t) => {
  const clock = new VirtualClock();
  const calls: number[] = [];
  const outcomes = [busy(), busy(), ok];
  const runner = new PluginRunner({
    binDirs: ['/nonexistent'],
    execTimeoutMs: 1000,
    exec: async () => {
      calls.push(clock.elapsed());
      return outcomes.shift()!;
    },
    logger: createLogger({ level: 'error' }),
    clock,
  });
  const net = networkFromList(
    { cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'p' }] },
    '/conf/10-n.conflist',
  );
  const attachment = {
    containerId: 'c',
    ifName: 'eth0',
    netns: '',
    cniArgs: '',
    capabilityArgs: {},
    pod: 'ns/p',
  };
  let done = false;
  const run = runner
    .run(net, net.plugins[0]!, '/bin/p', 'DEL', attachment, undefined)
    .then(() => (done = true));
  await clock.advance(199);
  t.deepEqual(calls, [0]);
  await clock.advance(1);
  t.deepEqual(calls, [0, 200]);
  await clock.advance(400);
  await run;
  t.true(done);
  t.deepEqual(calls, [0, 200, 600]);
});

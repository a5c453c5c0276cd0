/**
 * The conformance suite's ExecSync and container log cases: results and deadlines of exec, the CRI log
 * format at the path the kubelet chose, and ReopenContainerLog after rotation.
 */
import { rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ContainerState } from '../index.js';
import { REFUSED, nowNanos, rejects, type It } from './assertions.js';
import { clock } from './kit.js';

export function execAndLogTests(it: It): void {
  it('ExecSync: stdout, stderr and exit codes; a non-zero exit is a result, not an error', async (t, k) => {
    const pod = await k.runPod(t, { name: 'exec' });
    const id = await k.startContainer(pod, { name: 'app', command: ['sleep', '3600'] });
    const exec = async (cmd: string[], timeout = 10n) => {
      const r = await k.runtime.execSync({ containerId: id, cmd, timeout });
      return [r.exitCode, Buffer.from(r.stdout).toString(), Buffer.from(r.stderr).toString()];
    };
    t.deepEqual(await exec(['echo', 'hello', 'world']), [0, 'hello world\n', '']);
    t.deepEqual(await exec(['sh', '-c', 'echo out; echo err >&2; exit 3']), [3, 'out\n', 'err\n']);
    t.deepEqual(await exec(['false']), [1, '', '']);
    t.deepEqual(await exec(['sh', '-c', 'exit 0'], 0n), [0, '', ''], 'timeout 0: no deadline');
  });

  it('ExecSync with a timeout: DeadlineExceeded once the command outlives it', async (t, k) => {
    const pod = await k.runPod(t, { name: 'exec-timeout' });
    const id = await k.startContainer(pod, { name: 'app', command: ['sleep', '3600'] });
    const started = clock.now();
    await rejects(
      t,
      k.runtime.execSync({ containerId: id, cmd: ['sleep', '10'], timeout: 1n }),
      'DeadlineExceeded',
      /timeout 1s exceeded/,
    );
    const took = clock.now() - started;
    t.true(took >= 900 && took < 8000, `took ${took} ms`);
  });

  it('ExecSync in a container that is not running is refused; in an unknown one NotFound', async (t, k) => {
    const pod = await k.runPod(t, { name: 'exec-refused' });
    const id = await k.startContainer(pod, { name: 'app', command: ['sleep', '3600'] });
    await k.runtime.stopContainer({ containerId: id, timeout: 0n });
    await rejects(
      t,
      k.runtime.execSync({ containerId: id, cmd: ['true'], timeout: 5n }),
      REFUSED,
      /container is in CONTAINER_EXITED state/,
    );
    await rejects(
      t,
      k.runtime.execSync({ containerId: 'c'.repeat(64), cmd: ['true'], timeout: 5n }),
      'NotFound',
    );
  });

  // Logs

  it('container logs: CRI format lines per stream at <logDirectory>/<logPath>', async (t, k) => {
    const pod = await k.runPod(t, { name: 'logs' });
    const before = nowNanos() - 1_000_000_000n;
    const id = await k.startContainer(pod, {
      name: 'app',
      command: ['sh', '-c', 'echo hello; echo oops >&2'],
      fake: 'stdout=hello,stderr=oops,exitAfter=0s',
    });
    await k.waitForState(id, ContainerState.CONTAINER_EXITED);
    await k.waitForLog(pod, 'app', 'stderr', 'oops');
    const lines = await k.waitForLog(pod, 'app', 'stdout', 'hello');
    const after = nowNanos() + 1_000_000_000n;
    t.deepEqual(lines.map((l) => [l.stream, l.partial, l.content]).sort(), [
      ['stderr', false, 'oops'],
      ['stdout', false, 'hello'],
    ]);
    for (const l of lines) t.true(l.time >= before && l.time <= after, `log time ${l.time}`);
    t.is((await k.containerStatus(id)).logPath, join(pod.logDirectory, 'app/0.log'));
  });

  it('ReopenContainerLog: after the kubelet rotates the file, output goes to a new file at the path', async (t, k) => {
    const pod = await k.runPod(t, { name: 'reopen' });
    const id = await k.startContainer(pod, {
      name: 'app',
      command: ['sh', '-c', 'echo first; while :; do echo tick; sleep 1; done'],
      fake: 'stdout=first',
    });
    await k.waitForLog(pod, 'app', 'stdout', 'first');
    const path = join(pod.logDirectory, 'app/0.log');
    await rename(path, `${path}.1`);
    await k.runtime.reopenContainerLog({ containerId: id });
    t.true((await stat(path)).isFile(), 'the log file is there again');
    k.target.writeOutput?.(id, 'tick\n');
    const fresh = await k.waitForLog(pod, 'app', 'stdout', 'tick');
    t.false(
      fresh.some((l) => l.content === 'first'),
      'the new file starts empty',
    );
    const rotated = await k.logLines(pod, 'app', '.1');
    t.true(rotated.some((l) => l.content === 'first'));

    await k.runtime.stopContainer({ containerId: id, timeout: 0n });
    await rejects(t, k.runtime.reopenContainerLog({ containerId: id }), REFUSED, /is not running/);
    await rejects(t, k.runtime.reopenContainerLog({ containerId: 'b'.repeat(64) }), 'NotFound');
  });
}

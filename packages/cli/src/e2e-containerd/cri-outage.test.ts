import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import test from 'ava';
import { MAIN, pollUntil } from '../test-helpers.js';
import { httpGet, isRunning, KubeletChild, manifest, Workspace } from './helpers.js';

/**
 * The container runtime goes away while nodelet runs, and comes back. The shared containerd cannot be
 * stopped here (other tests use it), so the runtime is `nodelet cri serve --runtime fake` on a unix
 * socket, reached by a kubelet started with `--runtime containerd --container-runtime-endpoint`: the
 * same runtime-cri gRPC client and reconnect path containerd gets. The server is killed (SIGKILL, by
 * its PID) and started again.
 *
 * What this shows: the kubelet stays up; it logs the outage once per backoff step (failures 1, 2, 4, 8,
 * …), not once a second; /healthz stays ok until PLEG's 3-minute threshold (that threshold itself is
 * tested under the virtual clock in packages/kubelet/src/runtime-outage.test.ts, where it also shows
 * that healthy containers are not recreated after the outage); when the server is back, relisting
 * resumes and the pod runs again. Limit: the fake server keeps its state in memory, so the restarted
 * one has no containers and the kubelet recreates the pod. The real thing — a containerd of the test's
 * own stopped and started again, the same containers adopted — is containerd-restart.test.ts.
 *
 * Needs no containerd: it runs everywhere.
 */
class CriServer {
  private out = '';
  private readonly exit: Promise<unknown>;
  private exited = false;
  private constructor(private readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (this.out += s));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (this.out += s));
    this.exit = new Promise((resolve) => child.once('exit', resolve));
    const orphan = () => child.kill('SIGKILL');
    process.once('exit', orphan);
    void this.exit.then(() => {
      this.exited = true;
      process.off('exit', orphan);
    });
  }

  static async start(listen: string): Promise<CriServer> {
    const s = new CriServer(
      spawn(process.execPath, [MAIN, 'cri', 'serve', '--listen', listen], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    await pollUntil(
      'nodelet cri serve to serve',
      async () => {
        if (s.exited) throw new Error(`nodelet cri serve exited:\n${s.out}`);
        return /^serving CRI v1/m.test(s.out) ? true : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 50, describe: () => s.out },
    );
    return s;
  }

  get pid(): number {
    return this.child.pid!;
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.exited) this.child.kill(signal);
    await this.exit;
  }
}

const lines = (text: string, re: RegExp) => text.split('\n').filter((l) => re.test(l));
const failuresOf = (l: string) => Number(/ failures=(\d+)/.exec(l)?.[1]);

test('the runtime goes away and comes back: nodelet logs once per backoff step, stays up, resumes', async (t) => {
  const ws = new Workspace();
  const socket = join(ws.dir, 'cri.sock');
  const listen = `unix://${socket}`;
  let server = await CriServer.start(listen);
  const k = await KubeletChild.start(ws, 'outage', ['--container-runtime-endpoint', listen]);
  t.teardown(async () => {
    await k.stop();
    await server.kill();
    await ws.dispose();
  });

  ws.write('app.yaml', manifest('app', '  containers:\n  - name: app\n    image: busybox\n'));
  await k.waitPod('app-outage', 'Running', (p) => isRunning(p, 'app'), 45_000);

  // The runtime dies.
  await server.kill('SIGKILL');
  const down = Date.now();
  const before = k.stderr().length;
  await pollUntil(
    'the 8th failed relist to be logged',
    async () =>
      lines(k.stderr().slice(before), /PLEG relist failed/).some((l) => failuresOf(l) === 8)
        ? true
        : undefined,
    { timeoutMs: 30_000, intervalMs: 250, describe: () => k.stderr().slice(before) },
  );
  const seconds = (Date.now() - down) / 1000;
  const during = k.stderr().slice(before);

  const pleg = lines(during, /PLEG relist failed/);
  t.deepEqual(pleg.map(failuresOf), [1, 2, 4, 8], 'PLEG: once per backoff step');
  // The first failure names the runtime's endpoint: a refused dial, or the relist in flight when it went.
  t.regex(
    pleg[0]!,
    /(cannot connect to|lost the connection to) the container runtime at unix:\/\/\/[^ ]*cri\.sock/,
  );
  const housekeeping = lines(during, /housekeeping failed/);
  t.true(
    housekeeping.every((l) => [1, 2, 4, 8].includes(failuresOf(l))),
    `housekeeping: once per backoff step:\n${housekeeping.join('\n')}`,
  );
  const all = lines(during, /^[EW]\d{4} /);
  t.log(`${all.length} warning/error lines in ${seconds.toFixed(1)} s of outage`);
  // Besides those two, only pod workers report: each pod at its 1st, 2nd, 4th, … failed sync (every 10 s).
  const syncs = lines(during, /error syncing pod/);
  t.is(all.length, pleg.length + housekeeping.length + syncs.length, 'nothing else complains');
  t.true(
    syncs.every((l) => [1, 2].includes(failuresOf(l))),
    `pod syncs: once per backoff step:\n${syncs.join('\n')}`,
  );

  t.true(k.running, 'the kubelet is still up');
  const health = await httpGet('127.0.0.1', k.port, '/healthz');
  t.deepEqual(health, { status: 200, body: 'ok' }, 'healthy until PLEG has failed for 3 min');

  // The runtime comes back on the same socket (a new, empty fake: see the file comment).
  server = await CriServer.start(listen);
  await pollUntil(
    'relisting to resume',
    async () => (/PLEG relist succeeded again/.test(k.stderr().slice(before)) ? true : undefined),
    { timeoutMs: 45_000, intervalMs: 250, describe: () => k.stderr().slice(before) },
  );
  t.regex(k.stderr(), /PLEG relist succeeded again failedRelists=\d+/);
  const again = await k.waitPod('app-outage', 'Running again', (p) => isRunning(p, 'app'), 30_000);
  t.is(again.status?.phase, 'Running');
  t.true(k.running);
  t.deepEqual(await k.stop(), { code: 0, signal: null });
});

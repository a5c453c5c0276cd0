import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import type { NodeletError } from '@nodelet/kernel';
import {
  ContainerState,
  CreateContainerRequest,
  ImageSpec,
  RunPodSandboxRequest,
  createCriClient,
  type CriClient,
} from '@nodelet/cri';
import { MAIN, nodelet, pollUntil } from './test-helpers.js';

/** `nodelet cri serve …` as a child process, as a user runs it; resolves once it says it serves. */
async function serve(t: ExecutionContext, args: string[]) {
  const child: ChildProcess = spawn(process.execPath, [MAIN, 'cri', 'serve', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let exited = false;
  void exit.then(() => (exited = true));
  t.teardown(() => {
    if (!exited) child.kill('SIGKILL');
  });
  // 45 s: starting took up to 11.5 s on a loaded 2-core machine (NODELET_WAIT_LOG); 3× that.
  const address = await pollUntil(
    'nodelet cri serve to serve',
    async () => {
      if (exited) throw new Error(`nodelet cri serve exited:\n${stderr}`);
      return /^serving CRI v1 \(runtime [^)]+\) on (\S+)$/m.exec(stdout)?.[1];
    },
    { timeoutMs: 45_000, intervalMs: 50, describe: () => stdout + stderr },
  );
  return {
    address,
    stdout: () => stdout,
    stderr: () => stderr,
    /** Sends `signal` and waits (bounded) for the exit. */
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      try {
        return await exit;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

function client(t: ExecutionContext, address: string): CriClient {
  const c = createCriClient(address, { timeoutMs: 10_000 });
  t.teardown(() => c.close());
  return c;
}

function tmp(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-cri-serve-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('cri serve: the fake runtime over a unix socket, as a CRI client sees it; SIGTERM exits 0', async (t) => {
  const dir = tmp(t);
  const socket = join(dir, 'cri.sock');
  const server = await serve(t, ['--runtime', 'fake', '--listen', `unix://${socket}`]);
  t.is(server.address, `unix://${socket}`);
  t.regex(
    server.stdout(),
    /^serving CRI v1 \(runtime runtime-fake; its pod IPs are simulated and reach no host: send nothing to them\) on unix:/m,
    'a CRI client is told not to send to the pod IPs',
  );
  const { runtime, image } = client(t, server.address);

  const version = await runtime.version({ version: '0.1.0' });
  t.is(version.runtimeName, 'nodelet-fake');
  t.is(version.runtimeApiVersion, 'v1');
  const { podSandboxId } = await runtime.runPodSandbox(
    RunPodSandboxRequest.fromPartial({
      config: { metadata: { name: 'web', namespace: 'default', uid: 'u1' }, labels: { app: 'web' } },
    }),
  );
  const { containerId } = await runtime.createContainer(
    CreateContainerRequest.fromPartial({
      podSandboxId,
      config: { metadata: { name: 'app' }, image: { image: 'busybox', userSpecifiedImage: 'busybox' } },
    }),
  );
  await runtime.startContainer({ containerId });
  const { containers } = await runtime.listContainers({
    filter: { id: '', podSandboxId, labelSelector: {} },
  });
  t.deepEqual(
    containers.map((c) => [c.id, c.state]),
    [[containerId, ContainerState.CONTAINER_RUNNING]],
  );
  const exec = await runtime.execSync({ containerId, cmd: ['echo', 'hi'], timeout: 5n });
  t.is(Buffer.from(exec.stdout).toString(), 'hi\n');
  const notFound = await t.throwsAsync(runtime.containerStatus({ containerId: 'nope', verbose: false }));
  t.is((notFound as NodeletError).code, 'NotFound');
  t.truthy(
    (await image.imageStatus({ image: ImageSpec.fromPartial({ image: 'busybox' }), verbose: false })).image,
  );

  t.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null });
  t.regex(server.stderr(), /received signal; stopping the CRI server signal="SIGTERM"/);
  t.false(existsSync(socket), 'the socket is removed');
});

test('cri serve: 127.0.0.1:0 picks a port and prints it; SIGINT exits 0', async (t) => {
  const server = await serve(t, ['--listen', '127.0.0.1:0']);
  t.regex(server.address, /^127\.0\.0\.1:[1-9]\d*$/);
  t.is((await client(t, server.address).runtime.version({ version: '0.1.0' })).runtimeName, 'nodelet-fake');
  t.deepEqual(await server.stop('SIGINT'), { code: 0, signal: null });
});

test('cri serve: the CRI contract as crictl sees it — idempotent stops, a 1 ms pull deadline, log files', async (t) => {
  const dir = tmp(t);
  const server = await serve(t, ['--listen', `unix://${join(dir, 'cri.sock')}`]);
  const { runtime } = client(t, server.address);
  await t.notThrowsAsync(runtime.stopPodSandbox({ podSandboxId: 'f'.repeat(64) }));
  await t.notThrowsAsync(runtime.stopContainer({ containerId: 'e'.repeat(64), timeout: 0n }));

  // Pulls take 100 ms by default: a client deadline of 1 ms expires first (crictl pull --timeout).
  const hasty = createCriClient(server.address, { timeoutMs: 10_000, pullTimeoutMs: 1 });
  t.teardown(() => hasty.close());
  const pull = await t.throwsAsync(
    hasty.image.pullImage({ image: ImageSpec.fromPartial({ image: 'nginx:1.25' }) }),
  );
  t.is((pull as NodeletError).code, 'DeadlineExceeded');

  // What the container's command writes lands at log_directory/log_path, where crictl logs reads it.
  const logDirectory = join(dir, 'logs');
  const { podSandboxId } = await runtime.runPodSandbox(
    RunPodSandboxRequest.fromPartial({
      config: { metadata: { name: 'web', namespace: 'default', uid: 'u2' }, hostname: 'web', logDirectory },
    }),
  );
  const { containerId } = await runtime.createContainer(
    CreateContainerRequest.fromPartial({
      podSandboxId,
      config: {
        metadata: { name: 'app' },
        image: { image: 'busybox' },
        command: ['sh', '-c', 'echo listening; sleep 3600'],
        logPath: 'app/0.log',
      },
    }),
  );
  await runtime.startContainer({ containerId });
  t.regex(readFileSync(join(logDirectory, 'app', '0.log'), 'utf8'), /^\S+Z stdout F listening\n$/);
  t.deepEqual(await server.stop(), { code: 0, signal: null });
});

test('cri serve: plugins.runtime-fake from --config configures the served runtime', async (t) => {
  const dir = tmp(t);
  const config = join(dir, 'nodelet.yaml');
  writeFileSync(
    config,
    'apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nplugins:\n  runtime-fake:\n    missingImages: [example.com/missing]\n',
  );
  const server = await serve(t, ['--listen', `unix://${join(dir, 'cri.sock')}`, '--config', config]);
  const err = await t.throwsAsync(
    client(t, server.address).image.pullImage({
      image: ImageSpec.fromPartial({ image: 'example.com/missing:1' }),
    }),
  );
  t.is((err as NodeletError).code, 'NotFound');
  t.deepEqual(await server.stop(), { code: 0, signal: null });
});

test('cri: usage errors are one line and exit 1; help exits 0', async (t) => {
  t.deepEqual(await nodelet(['cri', 'serve']), {
    code: 1,
    stdout: '',
    stderr: 'nodelet: flag --listen is required (unix:///path/cri.sock or 127.0.0.1:PORT)\n',
  });
  t.deepEqual(await nodelet(['cri', 'serve', '--listen', 'tcp://1.2.3.4:5']), {
    code: 1,
    stdout: '',
    stderr: 'nodelet: flag --listen must be unix:///absolute/path.sock or HOST:PORT, got "tcp://1.2.3.4:5"\n',
  });
  t.deepEqual(await nodelet(['cri', 'run']), {
    code: 1,
    stdout: '',
    stderr: 'nodelet: unknown cri command "run"; see nodelet cri --help\n',
  });
  const help = await nodelet(['cri', 'serve', '--help']);
  t.is(help.code, 0);
  t.regex(help.stdout, /^Work with the Container Runtime Interface/);
  t.regex((await nodelet(['--help'])).stdout, /cri serve +serve the fake runtime/);
});

test('cri serve: a socket another server holds is refused, naming it', async (t) => {
  const dir = tmp(t);
  const socket = join(dir, 'cri.sock');
  const first = await serve(t, ['--listen', socket]);
  const second = await nodelet(['cri', 'serve', '--listen', socket]);
  t.is(second.code, 1);
  t.regex(
    second.stderr,
    new RegExp(
      `^nodelet: flag --listen: cannot serve CRI on ${socket}: another server is listening there\\n$`,
    ),
  );
  t.deepEqual(await first.stop(), { code: 0, signal: null });
});

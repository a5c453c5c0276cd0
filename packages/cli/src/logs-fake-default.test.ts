import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { KubeletChild, manifest, Workspace } from './e2e-containerd/helpers.js';
import { pollUntil } from './test-helpers.js';

/**
 * `nodelet logs` on the fake runtime with no runtime configuration at all: simulated containers
 * write the CRI log files the kubelet reads, as real runtimes do (it failed with ENOENT on the
 * container's `0.log` before). An nginx container logs its entrypoint's start line; a busybox one
 * what its command echoes before it sleeps.
 */
test('nodelet logs on the fake runtime by default: the image start line and what the command writes', async (t) => {
  const ws = new Workspace();
  const k = await KubeletChild.start(ws, 'vm', [], 'fake');
  t.teardown(async () => {
    await k.stop();
    await ws.dispose();
  });
  ws.write('nginx.yaml', manifest('nginx', '  containers:\n  - {name: nginx, image: "nginx:1.14.2"}\n'));
  ws.write(
    'hello.yaml',
    manifest(
      'hello',
      `  containers:\n  - name: app\n    image: busybox\n    command: [sh, -c, "echo hello; sleep 3600"]\n`,
    ),
  );
  const logsOf = (pod: string) =>
    pollUntil(
      `${pod} to log`,
      async () => {
        const r = await k.logs(pod);
        return r.code === 0 && r.stdout ? r : undefined;
      },
      // Bounded, not a measure: each poll is a `nodelet logs` process on a loaded machine.
      { timeoutMs: 60_000, intervalMs: 100, describe: () => k.stderr().slice(-2000) },
    );
  t.deepEqual(await logsOf('nginx-vm'), {
    code: 0,
    stdout: '/docker-entrypoint.sh: Configuration complete; ready for start up\n',
    stderr: '',
  });
  t.is((await logsOf('hello-vm')).stdout, 'hello\n');
  const podDir = readdirSync(ws.podLogs).find((d) => d.startsWith('default_hello-vm_'))!;
  const file = readFileSync(join(ws.podLogs, podDir, 'app', '0.log'), 'utf8');
  t.regex(file, /^\d{4}-\d\d-\d\dT[\d:.]+Z stdout F hello\n$/, 'the CRI log format the kubelet reads');
});

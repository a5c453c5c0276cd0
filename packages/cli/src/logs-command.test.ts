import test from 'ava';
import type { Pod } from '@nodelet/api';
import { KubeletChild, manifest, Workspace } from './e2e-containerd/helpers.js';
import { defaultContainer } from './logs-command.js';
import { freePort, nodelet, pollUntil } from './test-helpers.js';

/**
 * `nodelet logs` through the real command against a kubelet on the fake runtime, whose `writeLogs`
 * writes the CRI log files the kubelet reads (the containerd e2e tests read real ones).
 */
test('defaultContainer: the annotation, else the only or first container (saying so when there are several)', (t) => {
  const pod = (names: string[], annotations?: Record<string, string>, init: string[] = []): Pod => ({
    metadata: { name: 'p', annotations },
    spec: { containers: names.map((name) => ({ name })), initContainers: init.map((name) => ({ name })) },
  });
  const notes: string[] = [];
  const io = { stderr: (s: string) => void notes.push(s) };
  t.is(defaultContainer(pod(['only']), io), 'only');
  t.deepEqual(notes, []);
  t.is(defaultContainer(pod(['a', 'b'], { 'kubectl.kubernetes.io/default-container': 'b' }), io), 'b');
  t.deepEqual(notes, []);
  t.is(defaultContainer(pod(['a', 'b'], {}, ['setup']), io), 'a');
  t.deepEqual(notes, ['Defaulted container "a" out of: a, b, setup (init)\n']);
});

test('nodelet logs on the fake runtime: -c, the default container, --tail, -f, --previous, errors', async (t) => {
  const ws = new Workspace('plugins:\n  runtime-fake:\n    writeLogs: true\n');
  const k = await KubeletChild.start(ws, 'logs', [], 'fake');
  t.teardown(async () => {
    await k.stop();
    await ws.dispose();
  });
  // `app` writes three lines and exits 1 after 3 s (then restarts); `side` writes one line and runs on.
  ws.write(
    'chatty.yaml',
    manifest(
      'chatty',
      `  containers:
  - {name: app, image: busybox}
  - {name: side, image: busybox}
`,
    ).replace(
      'metadata:\n',
      `metadata:\n  annotations:\n    runtime-fake.nodelet.dev/app: 'stdout="one\\ntwo\\nthree",exitAfter=3s,exitCode=1'\n    runtime-fake.nodelet.dev/side: 'stdout=sidecar'\n`,
    ),
  );
  const pod = 'chatty-logs';
  const app = await pollUntil(
    'the app container to log',
    async () => {
      const r = await k.logs(pod, '-c', 'app');
      return r.code === 0 && r.stdout ? r : undefined;
    },
    // Bounded, not a measure: the pod is started from the manifest and each poll is a `nodelet logs`
    // process; on a loaded CI machine that has taken 20 s (3× that here). The kubelet's log says why if not.
    { timeoutMs: 60_000, intervalMs: 100, describe: () => k.stderr().slice(-2000) },
  );
  t.is(app.stdout, 'one\ntwo\nthree\n');
  t.is((await k.logs(pod, 'side')).stdout, 'sidecar\n', 'the container as second argument');
  t.deepEqual(await k.logs(pod, '-c', 'app', '--tail', '1'), { code: 0, stdout: 'three\n', stderr: '' });
  const defaulted = await k.logs(pod);
  t.is(defaulted.stdout, 'one\ntwo\nthree\n');
  t.is(defaulted.stderr, 'Defaulted container "app" out of: app, side\n');

  // -f prints what is there and returns when the container stops (it exits 3 s after it started).
  const followed = await k.logs(`pod/${pod}`, '-c', 'app', '-f');
  t.deepEqual(followed, { code: 0, stdout: 'one\ntwo\nthree\n', stderr: '' });

  // After the restart (the first one is immediate), --previous is the instance that exited.
  await k.waitPod(
    pod,
    'app restarted',
    (p) => (p.status?.containerStatuses?.find((c) => c.name === 'app')?.restartCount ?? 0) >= 1,
    15_000,
  );
  t.is((await k.logs(pod, '-c', 'app', '--previous')).stdout, 'one\ntwo\nthree\n');
  t.deepEqual(await k.logs(pod, '-c', 'side', '-p'), {
    code: 1,
    stdout: '',
    stderr: `Error from server (BadRequest): previous terminated container "side" in pod "${pod}" not found\n`,
  });
  t.deepEqual(await k.logs('nope'), {
    code: 1,
    stdout: '',
    stderr: 'Error from server (NotFound): pods "nope" not found\n',
  });
  t.deepEqual(await k.logs('nope', '-c', 'x'), {
    code: 1,
    stdout: '',
    stderr: 'Error from server (NotFound): pods "nope" not found\n',
  });
  t.deepEqual(await k.logs(pod, '-c', 'x'), {
    code: 1,
    stdout: '',
    stderr: `Error from server (NotFound): container "x" not found in pod "${pod}"; its containers are: app, side\n`,
  });
  t.deepEqual(await k.logs(pod, '-n', 'kube-system', '-c', 'app'), {
    code: 1,
    stdout: '',
    stderr: `Error from server (NotFound): pods "${pod}" not found\n`,
  });
});

test('nodelet logs: usage errors and an unreachable kubelet are one line', async (t) => {
  t.deepEqual(await nodelet(['logs']), {
    code: 1,
    stdout: '',
    stderr: 'nodelet: logs needs a pod name: nodelet logs POD [-c CONTAINER]\n',
  });
  t.deepEqual(await nodelet(['logs', 'p', '--tail', 'x']), {
    code: 1,
    stdout: '',
    stderr: 'nodelet: flag --tail must be an integer from -1 to 9007199254740991, got "x"\n',
  });
  const port = await freePort();
  t.deepEqual(await nodelet(['logs', 'p', '-c', 'c', '--server', `https://127.0.0.1:${port}`]), {
    code: 1,
    stdout: '',
    stderr: `nodelet: cannot reach the kubelet at https://127.0.0.1:${port} (is "nodelet kubelet" running? its API port is set by --port)\n`,
  });
  t.deepEqual(await nodelet(['logs', 'p', '--client-certificate', '/nonexistent.crt', '--client-key', 'k']), {
    code: 1,
    stdout: '',
    stderr:
      "nodelet: flag --client-certificate: cannot read /nonexistent.crt: ENOENT: no such file or directory, open '/nonexistent.crt'\n",
  });
  const help = await nodelet(['logs', '--help']);
  t.is(help.code, 0);
  t.regex(help.stdout, /nodelet logs POD \[-c CONTAINER\]/);
  t.regex((await nodelet(['--help'])).stdout, /\n {2}logs {9}print a container's logs/);
});

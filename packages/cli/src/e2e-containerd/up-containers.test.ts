import { spawn } from 'node:child_process';
import test from 'ava';
import { systemEnv } from '@nodelet/proxy';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import { BUSYBOX, nodeName } from './helpers.js';
import { runInTerminal } from './terminal.js';
import { containerdUpForFile, kubectlPath, requireKubectl } from './nodelet-up.js';

/**
 * Container semantics on `nodelet up --runtime containerd`, seen through the real kubectl:
 *
 *  - `kubectl debug -i --target`: kubectl adds an ephemeral container through pods/ephemeralcontainers,
 *    the kubelet starts it in the target container's process namespace, kubectl attaches to it, and
 *    what the user types runs there (`ps` sees the target's processes); it is then shown terminated and
 *    is not restarted;
 *  - `kubectl debug -it`: the same through a terminal, of the size kubectl runs in;
 *  - a failing postStart hook: the FailedPostStartHook Warning event, the container restarted;
 *  - a pod for another OS: Failed with PodOSNotSupported.
 */
const containerd = await requireContainerd(test);
const kubectl = requireKubectl(test);

if (containerd && kubectl) {
  const node = nodeName('upctr');
  const up = containerdUpForFile(test, containerd.endpoint, node);

  /** kubectl with `line` on its input, which ends once its output shows `until` (bounded: 60 s). */
  const interactive = (args: string[], line: string, until: string) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(kubectlPath, ['--kubeconfig', up().kubeconfig, ...args], { env: systemEnv() });
      let stdout = '';
      let stderr = '';
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
        if (stdout.includes(until)) child.stdin.end();
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
      child.stdin.write(line);
    });

  test.serial('kubectl debug -i --target: a shell in the pod that sees the target’s processes', async (t) => {
    await up().kubectlOk(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: ${BUSYBOX}
    imagePullPolicy: Never
    command: ["sleep", "3600"]
`,
    );
    await up().kubectlOk(['wait', '--for=condition=Ready', 'pod/web', '--timeout=60s']);
    // As a user types: a line, then the answer, and only then the end of input (containerd detaches
    // an attach's output once its input ends, as upstream).
    const r = await interactive(
      [
        'debug',
        'web',
        '-i',
        `--image=${BUSYBOX}`,
        '--image-pull-policy=Never',
        '--target=web',
        '--container=debugger',
        '--',
        'sh',
      ],
      'echo in-debugger; ps -o args; echo listed; exit 3\n',
      'listed\n',
    );
    t.regex(r.stdout, /in-debugger\n/);
    t.regex(r.stdout, /^sleep 3600$/m, 'ps shows the target container’s process');
    t.is(r.code, 0, r.stderr);
    const state = await pollUntil(
      'the debugger to be shown terminated',
      async () => {
        const out = await up().kubectlOk([
          'get',
          'pod',
          'web',
          '-o',
          'jsonpath={.status.ephemeralContainerStatuses[?(@.name=="debugger")].state.terminated.exitCode}',
        ]);
        return out !== '' ? out : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    t.is(state, '3');
    const spec = await up().kubectlOk([
      'get',
      'pod',
      'web',
      '-o',
      'jsonpath={.spec.ephemeralContainers[*].name}',
    ]);
    t.true(spec.split(' ').includes('debugger'), spec);
    const logs = await up().kubectlOk(['logs', 'web', '-c', 'debugger']);
    t.regex(logs, /in-debugger\n[^]*listed\n/);
    const phase = await up().kubectlOk(['get', 'pod', 'web', '-o', 'jsonpath={.status.phase}']);
    t.is(phase, 'Running', 'the pod keeps running');
  });

  test.serial('kubectl debug -it: a terminal in the pod, of the size kubectl runs in', async (t) => {
    await pollUntil(
      'the pod of the first test',
      async () => ((await up().kubectl(['get', 'pod', 'web'])).code === 0 ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    // The shell waits until kubectl's terminal size reaches it (sent once kubectl has attached), so
    // what it prints then is seen through the attachment, not only in the log.
    const script =
      'until [ "$(stty size)" = "45 123" ]; do sleep 0.1; done; echo "attached on $(tty)"; ps -o args';
    const r = await runInTerminal({
      argv: [
        kubectlPath,
        '--kubeconfig',
        up().kubeconfig,
        'debug',
        'web',
        '-it',
        `--image=${BUSYBOX}`,
        '--image-pull-policy=Never',
        '--target=web',
        '--container=debugger-tty',
        '--',
        'sh',
        '-c',
        script,
      ],
      rows: 45,
      cols: 123,
      resizeOn: 'never-printed',
      newRows: 45,
      newCols: 123,
      timeoutSeconds: 60,
    });
    t.regex(r.stdout, /attached on \/dev\/pts\/\d+\r\n/, r.stdout);
    t.regex(r.stdout, /^sleep 3600\r$/m, 'ps in the target’s process namespace');
  });

  test('the API refuses to change or remove an ephemeral container, naming the field', async (t) => {
    await pollUntil(
      'the pod of the first test',
      async () => ((await up().kubectl(['get', 'pod', 'web'])).code === 0 ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const r = await up().kubectl([
      'patch',
      'pod',
      'web',
      '--subresource=ephemeralcontainers',
      '--type=json',
      '-p',
      '[{"op":"add","path":"/spec/ephemeralContainers","value":[{"name":"x","image":"busybox","ports":[{"containerPort":80}]}]}]',
    ]);
    t.not(r.code, 0);
    t.regex(
      r.stderr,
      /spec\.ephemeralContainers\[0\]\.ports: Forbidden: cannot be set for an Ephemeral Container/,
    );
  });

  test('a failing postStart hook: the FailedPostStartHook event in kubectl, and the container restarted', async (t) => {
    await up().kubectlOk(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: Pod
metadata: {name: badhook}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ${BUSYBOX}
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "exit 7"]}
`,
    );
    const events = await pollUntil(
      'the FailedPostStartHook event and a restart',
      async () => {
        const out = await up().kubectlOk([
          'get',
          'events',
          '--field-selector',
          'involvedObject.name=badhook',
          '-o',
          'jsonpath={range .items[*]}{.type} {.reason} {.message}{"\\n"}{end}',
        ]);
        const restarts = await up().kubectlOk([
          'get',
          'pod',
          'badhook',
          '-o',
          'jsonpath={.status.containerStatuses[0].restartCount}',
        ]);
        return out.includes('FailedPostStartHook') && Number(restarts) >= 1 ? out : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    t.regex(events, /^Warning FailedPostStartHook PostStartHook failed$/m);
    t.regex(events, /^Normal Killing FailedPostStartHook$/m);
  });

  test('a pod for another OS (spec.os.name: windows) is Failed with PodOSNotSupported', async (t) => {
    await up().kubectlOk(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: Pod
metadata: {name: windows}
spec:
  os: {name: windows}
  containers:
  - name: main
    image: ${BUSYBOX}
`,
    );
    const status = await pollUntil(
      'the pod to be Failed',
      async () => {
        const out = await up().kubectlOk([
          'get',
          'pod',
          'windows',
          '-o',
          'jsonpath={.status.phase} {.status.reason} {.status.message}',
        ]);
        return out.startsWith('Failed') ? out : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    t.is(
      status,
      "Failed PodOSNotSupported Pod was rejected: Failed to admit pod as the OS field doesn't match node OS",
    );
  });
}

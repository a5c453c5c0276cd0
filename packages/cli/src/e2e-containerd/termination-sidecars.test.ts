import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';
import { parse } from 'yaml';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import { BUSYBOX, idOf, nodeName } from './helpers.js';
import { containerdUpForFile, requireKubectl } from './nodelet-up.js';

/**
 * Termination messages and sidecar containers on `nodelet up --runtime containerd`, read with the real
 * kubectl: a container that writes /dev/termination-log and exits 1 shows it under
 * `lastState.terminated.message` in `kubectl get pod -o yaml`; FallbackToLogsOnError shows the log's
 * tail; a sidecar keeps running beside its app, is restarted (then backs off) when killed, and a
 * `restartPolicy: Never` pod with a sidecar is Succeeded when its app exits 0.
 *
 * The node has a name of its own: containerd is shared, and only this node's sandboxes are swept.
 */
const containerd = await requireContainerd(test);
const kubectl = requireKubectl(test);

interface ContainerStatus {
  name: string;
  restartCount: number;
  containerID?: string;
  state?: {
    running?: object;
    waiting?: { reason?: string; message?: string };
    terminated?: { exitCode: number; message?: string };
  };
  lastState?: { terminated?: { exitCode: number; message?: string } };
}
interface PodYaml {
  status?: {
    phase?: string;
    initContainerStatuses?: ContainerStatus[];
    containerStatuses?: ContainerStatus[];
  };
}

if (containerd && kubectl) {
  const node = nodeName('term');
  const up = containerdUpForFile(test, containerd.endpoint, node);

  const getYaml = async (pod: string): Promise<{ text: string; pod: PodYaml }> => {
    const text = await up().kubectlOk(['get', 'pod', pod, '-o', 'yaml']);
    return { text, pod: parse(text) as PodYaml };
  };

  /** Polls `kubectl get pod -o yaml` until `check` returns a value (bounded). */
  const waitFor = <T>(
    what: string,
    pod: string,
    check: (p: PodYaml) => T | undefined,
    timeoutMs = 60_000,
  ) => {
    let last = '';
    return pollUntil(
      what,
      async () => {
        const got = await getYaml(pod).catch(() => undefined);
        last = got?.text ?? '';
        return got ? check(got.pod) : undefined;
      },
      { timeoutMs, intervalMs: 250, describe: () => `${last}\n${up().stderr().slice(-2000)}` },
    );
  };

  const sidecarOf = (p: PodYaml) => p.status?.initContainerStatuses?.find((s) => s.name === 'proxy');
  const appOf = (p: PodYaml) => p.status?.containerStatuses?.find((s) => s.name === 'main');

  test.serial(
    'a message written to /dev/termination-log is lastState.terminated.message in kubectl get pod -o yaml',
    async (t) => {
      await up().kubectlOk(
        ['apply', '-f', '-'],
        `apiVersion: v1
kind: Pod
metadata: {name: msg}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, 'echo -n "config missing: /etc/app.conf" > /dev/termination-log; exit 1']
`,
      );
      const last = await waitFor('msg to show its lastState', 'msg', (p) => appOf(p)?.lastState?.terminated);
      t.is(last.exitCode, 1);
      t.is(last.message, 'config missing: /etc/app.conf');
      const { text } = await getYaml('msg');
      t.regex(
        text,
        /lastState:\n\s+terminated:\n(?:\s+\w+: .*\n)*?\s+message: 'config missing: \/etc\/app.conf'/,
      );
      await up().kubectlOk(['delete', 'pod', 'msg', '--wait=false']);
    },
  );

  test.serial(
    'FallbackToLogsOnError: a failed container with no message gets the last 80 lines of its log',
    async (t) => {
      await up().kubectlOk(
        ['apply', '-f', '-'],
        `apiVersion: v1
kind: Pod
metadata: {name: fallback}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${BUSYBOX}
    terminationMessagePolicy: FallbackToLogsOnError
    command: [sh, -c, 'i=1; while [ $i -le 100 ]; do echo "line $i"; i=$((i+1)); done; exit 2']
`,
      );
      const last = await waitFor(
        'fallback to show its lastState',
        'fallback',
        (p) => appOf(p)?.lastState?.terminated,
      );
      t.is(last.exitCode, 2);
      const expected = Array.from({ length: 80 }, (_, i) => `line ${i + 21}`).join('\n') + '\n';
      t.is(last.message, expected);
      await up().kubectlOk(['delete', 'pod', 'fallback', '--wait=false']);
    },
  );

  const sidecarPod = (name: string, policy: string, app: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  restartPolicy: ${policy}
  terminationGracePeriodSeconds: 5
  initContainers:
  - name: proxy
    image: ${BUSYBOX}
    restartPolicy: Always
    command: [sh, -c, 'trap "exit 0" TERM; while true; do sleep 0.2; done']
  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, '${app}']
`;

  test.serial(
    'a sidecar keeps running beside its app and is restarted, then backs off, when killed',
    async (t) => {
      await up().kubectlOk(
        ['apply', '-f', '-'],
        sidecarPod('side', 'Always', 'trap "exit 0" TERM; while true; do sleep 0.2; done'),
      );
      const first = await waitFor('the sidecar and its app to run', 'side', (p) =>
        sidecarOf(p)?.state?.running && appOf(p)?.state?.running ? sidecarOf(p) : undefined,
      );
      const kill = (id: string) =>
        promisify(execFile)('ctr', ['-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id]);

      await kill(idOf(first.containerID));
      const restarted = await waitFor('the sidecar to be restarted', 'side', (p) => {
        const s = sidecarOf(p);
        return s && s.restartCount >= 1 && s.state?.running ? s : undefined;
      });
      t.is(restarted.lastState?.terminated?.exitCode, 137);
      t.not(restarted.containerID, first.containerID);

      // Killed again at once: now it backs off (CrashLoopBackOff) before the next start.
      await kill(idOf(restarted.containerID));
      const backingOff = await waitFor(
        'the sidecar to back off',
        'side',
        (p) => sidecarOf(p)?.state?.waiting,
      );
      t.is(backingOff.reason, 'CrashLoopBackOff');
      t.regex(backingOff.message ?? '', /^back-off 10s restarting failed container=proxy pod=side_default/);
      const { pod } = await getYaml('side');
      t.is(appOf(pod)?.restartCount, 0, 'the app container kept running');
      t.truthy(appOf(pod)?.state?.running);
      t.is(pod.status?.phase, 'Running');
      await up().kubectlOk(['delete', 'pod', 'side', '--wait=false']);
    },
  );

  test.serial('a restartPolicy Never pod with a sidecar is Succeeded once its app exits 0', async (t) => {
    await up().kubectlOk(['apply', '-f', '-'], sidecarPod('job', 'Never', 'sleep 2; echo done'));
    await waitFor('the app to run beside the sidecar', 'job', (p) =>
      sidecarOf(p)?.state?.running && appOf(p)?.state?.running ? true : undefined,
    );
    const pod = await waitFor('the pod to be Succeeded', 'job', (p) =>
      p.status?.phase === 'Succeeded' ? p : undefined,
    );
    t.is(appOf(pod)?.state?.terminated?.exitCode, 0);
    t.truthy(sidecarOf(pod)?.state?.terminated, 'the sidecar was stopped');
    t.is(sidecarOf(pod)?.restartCount, 0);
    await up().kubectlOk(['delete', 'pod', 'job', '--wait=false']);
  });
}

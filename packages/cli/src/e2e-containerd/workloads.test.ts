import test from 'ava';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import { BUSYBOX, nodeName } from './helpers.js';
import { containerdUpForFile, requireKubectl } from './nodelet-up.js';

/**
 * The workload controllers with real containers: `nodelet up --runtime containerd` and the real kubectl.
 * A Deployment of busybox web servers comes up with distinct pod IPs, rolls to another image with
 * `kubectl set image` (rollout status as upstream), goes back with `rollout undo`, replaces a deleted pod
 * and scales; a DaemonSet runs its pod on the node; a Job whose container runs `true` completes.
 * Only images imported by scripts/containerd/setup.sh are used (no registry).
 */
const containerd = await requireContainerd(test);
const kubectl = requireKubectl(test);
const OTHER_IMAGE = 'nodelet.test/busybox-openssl:1';

if (containerd && kubectl) {
  const node = nodeName('work');
  const up = containerdUpForFile(test, containerd.endpoint, node);

  /** The live (not terminating) pods of app=web: name → { ip, image, phase }. */
  async function webPods(): Promise<Map<string, { ip: string; image: string; phase: string }>> {
    const list = JSON.parse(await up().kubectlOk(['get', 'pods', '-l', 'app=web', '-o', 'json']));
    return new Map(
      list.items
        .filter((p: any) => !p.metadata.deletionTimestamp)
        .map((p: any) => [
          p.metadata.name,
          { ip: p.status?.podIP ?? '', image: p.spec.containers[0].image, phase: p.status?.phase ?? '' },
        ]),
    );
  }
  const rolledOut = async (t: { is: (a: unknown, b: unknown, m?: string) => void }) => {
    const r = await up().kubectl(['rollout', 'status', 'deployment/web', '--timeout=120s']);
    t.is(r.code, 0, `${r.stdout}${r.stderr}\n${up().stderr().slice(-2000)}`);
  };
  const running = (n: number, image: string) =>
    pollUntil(
      `${n} Running pods of ${image}`,
      async () => {
        const pods = await webPods();
        const ok = [...pods.values()].filter((p) => p.phase === 'Running' && p.image === image);
        return pods.size === n && ok.length === n ? pods : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500, describe: () => up().stderr().slice(-2000) },
    );

  test.serial(
    'a Deployment on containerd: three pods with distinct IPs, set image, rollout undo, a deleted pod replaced, scale',
    async (t) => {
      await up().kubectlOk([
        'create',
        'deployment',
        'web',
        `--image=${BUSYBOX}`,
        '--replicas=3',
        '--port=8080',
        '--',
        'httpd',
        '-f',
        '-p',
        '8080',
      ]);
      await rolledOut(t);
      const first = await running(3, BUSYBOX);
      t.is(new Set([...first.values()].map((p) => p.ip)).size, 3, 'three distinct pod IPs');

      await up().kubectlOk(['set', 'image', 'deployment/web', `busybox=${OTHER_IMAGE}`]);
      await rolledOut(t);
      await running(3, OTHER_IMAGE);
      t.regex(await up().kubectlOk(['rollout', 'history', 'deployment/web']), /^1\s.*\n2\s/m);

      await up().kubectlOk(['rollout', 'undo', 'deployment/web']);
      await rolledOut(t);
      const undone = await running(3, BUSYBOX);

      const victim = [...undone.keys()][0]!;
      await up().kubectlOk(['delete', 'pod', victim, '--wait=false']);
      const replaced = await running(3, BUSYBOX);
      t.false(replaced.has(victim), 'the deleted pod is replaced by a new one');

      await up().kubectlOk(['scale', 'deployment/web', '--replicas=5']);
      await running(5, BUSYBOX);
      await up().kubectlOk(['delete', 'deployment', 'web']);
      await pollUntil(
        'the Deployment’s pods to go',
        async () => ((await webPods()).size === 0 ? true : undefined),
        {
          timeoutMs: 60_000,
          intervalMs: 500,
        },
      );
    },
  );

  test.serial('a DaemonSet runs one pod on the node; a Job of `true` completes', async (t) => {
    await up().kubectlOk(
      ['apply', '-f', '-'],
      `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: agent, image: ${BUSYBOX}, command: [sleep, '3600']}]
`,
    );
    const ds = await up().kubectl(['rollout', 'status', 'daemonset/agent', '--timeout=120s']);
    t.is(ds.code, 0, ds.stderr);
    const agents = JSON.parse(await up().kubectlOk(['get', 'pods', '-l', 'app=agent', '-o', 'json'])).items;
    t.deepEqual(
      agents.map((p: any) => `${p.spec.nodeName}/${p.status.phase}`),
      [`${node}/Running`],
    );

    await up().kubectlOk(['create', 'job', 'once', `--image=${BUSYBOX}`, '--', 'true']);
    const done = await up().kubectl(['wait', '--for=condition=complete', 'job/once', '--timeout=120s']);
    t.is(done.code, 0, `${done.stderr}\n${up().stderr().slice(-2000)}`);
    t.regex(await up().kubectlOk(['get', 'job', 'once', '--no-headers']), /^once\s+Complete\s+1\/1\s/);
    await up().kubectlOk(['delete', 'daemonset', 'agent']);
    await up().kubectlOk(['delete', 'job', 'once', '--cascade=background']);
  });
}

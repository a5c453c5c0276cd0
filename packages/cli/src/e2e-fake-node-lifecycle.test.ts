import { join } from 'node:path';
import test from 'ava';
import { NodeletUp, requireKubectl } from './e2e-containerd/nodelet-up.js';
import { KubeletProcess, podManifest, pollUntil } from './test-helpers.js';

/**
 * A node dies under a Deployment, as a user sees it with the real kubectl: `nodelet up --nodes 2` plus a
 * third node joined as upstream nodes join (`nodelet kubelet --bootstrap-kubeconfig`), on the fake
 * runtime. The third kubelet is SIGKILLed; with the grace period short, the node turns NotReady and is
 * tainted unreachable, and the Deployment's pod there (tolerating that taint for 2 s) is replaced on the
 * other nodes, while its static pod's mirror (tolerating every NoExecute taint) stays; tainted
 * out-of-service, the old pod left Terminating is force-deleted. The grace period stays above the
 * kubelet's 10 s Lease renewal, or every node would fail.
 */
const kubectl = requireKubectl(test);

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 2}
      containers:
      - {name: nginx, image: nginx}
`;

if (kubectl) {
  test('a SIGKILLed kubelet: its node turns NotReady and tainted, its Deployment pod moves to the other nodes', async (t) => {
    const up = await NodeletUp.start([
      '--hostname-override',
      'life',
      '--nodes',
      '2',
      '--node-monitor-period',
      '1s',
      '--node-monitor-grace-period',
      '20s',
    ]);
    t.teardown(async () => {
      await up.stop();
      up.dispose();
    });
    const joined = await KubeletProcess.start(t, 'life-3', [
      '--bootstrap-kubeconfig',
      join(up.dataDir, 'bootstrap-kubeconfig'),
      '--kubeconfig',
      join(up.dataDir, 'life-3.kubeconfig'),
    ]);
    for (const node of ['life-1', 'life-2', 'life-3']) await up.waitNodeReady(node);

    await up.kubectlOk(['apply', '-f', '-'], deployment);
    const webPods = async () =>
      JSON.parse(await up.kubectlOk(['get', 'pods', '-l', 'app=web', '-o', 'json'])).items as any[];
    const placed = await pollUntil(
      'three Running pods, one per node',
      async () => {
        const running = (await webPods()).filter((p) => p.status?.phase === 'Running');
        const nodes = new Set(running.map((p) => p.spec.nodeName));
        return running.length === 3 && nodes.size === 3 ? running : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => up.stderr().slice(-2000) },
    );
    // After the placement: the static pod's requests would make the scheduler prefer the other nodes.
    joined.writeManifest('static.yaml', podManifest('static-web', 'nginx'));
    await pollUntil(
      'the static pod’s mirror pod',
      async () => ((await up.kubectl(['get', 'pod', 'static-web-life-3'])).code === 0 ? true : undefined),
      { timeoutMs: 30_000, intervalMs: 250, describe: () => joined.stderr().slice(-2000) },
    );
    const victim = placed.find((p) => p.spec.nodeName === 'life-3').metadata.name as string;
    const yaml = await up.kubectlOk(['get', 'pod', victim, '-o', 'yaml']);
    t.regex(
      yaml,
      /- effect: NoExecute\n {4}key: node.kubernetes.io\/unreachable\n {4}operator: Exists\n {4}tolerationSeconds: 2\n/,
      'the template’s toleration is kept',
    );
    t.regex(
      yaml,
      /- effect: NoExecute\n {4}key: node.kubernetes.io\/not-ready\n {4}operator: Exists\n {4}tolerationSeconds: 300\n/,
      'DefaultTolerationSeconds added the one it lacked',
    );

    process.kill(joined.pid, 'SIGKILL');
    const row = await pollUntil(
      'kubectl get nodes to show life-3 NotReady',
      async () => {
        const out = await up.kubectlOk(['get', 'nodes', '--no-headers']);
        return /^life-3\s+NotReady\s/m.test(out) ? out : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, describe: () => up.stderr().slice(-2000) },
    );
    t.regex(row, /^life-1\s+Ready\s/m, 'the other nodes stay Ready');
    t.regex(row, /^life-2\s+Ready\s/m);
    const reason = await up.kubectlOk([
      'get',
      'node',
      'life-3',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Ready")].reason}',
    ]);
    t.is(reason, 'NodeStatusUnknown');
    const taints = await pollUntil(
      'the unreachable taints',
      async () => {
        const out = await up.kubectlOk(['get', 'node', 'life-3', '-o', 'jsonpath={.spec.taints}']);
        return out.includes('NoExecute') && out.includes('NoSchedule') ? JSON.parse(out) : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    t.like(
      taints.find((x: any) => x.effect === 'NoExecute'),
      { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' },
    );
    t.regex(taints.find((x: any) => x.effect === 'NoExecute').timeAdded, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const described = await up.kubectlOk(['describe', 'node', 'life-3']);
    t.regex(
      described,
      /Taints:\s+node.kubernetes.io\/unreachable:NoExecute\n\s+node.kubernetes.io\/unreachable:NoSchedule\n/,
    );

    const moved = await pollUntil(
      'three Running pods on life-1 and life-2',
      async () => {
        const live = (await webPods()).filter((p) => !p.metadata.deletionTimestamp);
        const ok =
          live.length === 3 &&
          live.every((p) => p.status?.phase === 'Running' && ['life-1', 'life-2'].includes(p.spec.nodeName));
        return ok ? live : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => up.stderr().slice(-2000) },
    );
    t.false(moved.some((p) => p.metadata.name === victim));
    const mirror = JSON.parse(await up.kubectlOk(['get', 'pod', 'static-web-life-3', '-o', 'json']));
    t.falsy(mirror.metadata.deletionTimestamp, 'the mirror pod of the static pod is not evicted');
    const old = await up.kubectlOk(['get', 'pod', victim, '--no-headers']);
    t.regex(old, /\sTerminating\s/, 'no kubelet is left to finish the old pod: it shows Terminating');
    const events = await up.kubectlOk([
      'get',
      'events',
      '--field-selector',
      `involvedObject.name=${victim}`,
      '-o',
      'jsonpath={.items[*].reason}',
    ]);
    t.regex(events, /NodeNotReady/);
    t.regex(events, /TaintManagerEviction/);

    // The admin declares the node gone for good: pod GC force-deletes what was left Terminating there.
    await up.kubectlOk([
      'taint',
      'node',
      'life-3',
      'node.kubernetes.io/out-of-service=nodeshutdown:NoExecute',
    ]);
    await pollUntil(
      'the Terminating pod gone',
      async () => ((await up.kubectl(['get', 'pod', victim])).code !== 0 ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 500, describe: () => up.stderr().slice(-2000) },
    );
    t.is((await up.kubectl(['get', 'pod', 'static-web-life-3'])).code, 0, 'the mirror pod stays');
  });
}

import test from 'ava';
import { NodeletUp, requireKubectl } from './e2e-containerd/nodelet-up.js';
import { pollUntil } from './test-helpers.js';

/**
 * A DaemonSet and a StatefulSet as the Kubernetes documentation's examples, driven with the real kubectl
 * on `nodelet up --nodes 3` (fake runtime, so any image runs): one daemon pod per node and a rolling
 * update of them; web-0..web-2 in order, scaled down from the highest ordinal; deletion through the
 * garbage collector.
 */
const kubectl = requireKubectl(test);

// The fluentd-elasticsearch example of "DaemonSet" (concepts/workloads/controllers/daemonset).
const fluentd = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: fluentd-elasticsearch
  namespace: kube-system
  labels:
    k8s-app: fluentd-logging
spec:
  selector:
    matchLabels:
      name: fluentd-elasticsearch
  template:
    metadata:
      labels:
        name: fluentd-elasticsearch
    spec:
      tolerations:
      - key: node-role.kubernetes.io/control-plane
        operator: Exists
        effect: NoSchedule
      - key: node-role.kubernetes.io/master
        operator: Exists
        effect: NoSchedule
      containers:
      - name: fluentd-elasticsearch
        image: quay.io/fluentd_elasticsearch/fluentd:v2.5.2
        resources:
          limits:
            memory: 200Mi
          requests:
            cpu: 100m
            memory: 200Mi
        volumeMounts:
        - name: varlog
          mountPath: /var/log
      terminationGracePeriodSeconds: 30
      volumes:
      - name: varlog
        hostPath:
          path: /var/log
`;

if (kubectl) {
  let up: NodeletUp;
  test.before(async () => {
    up = await NodeletUp.start(['--nodes', '3', '--hostname-override', 'apps']);
    for (const n of ['apps-1', 'apps-2', 'apps-3']) await up.waitNodeReady(n);
  });
  test.after.always(async () => {
    await up?.stop();
    up?.dispose();
  });

  /** The live pods with `selector` in `namespace`. */
  async function livePods(selector: string, namespace = 'default'): Promise<any[]> {
    const out = await up.kubectlOk(['get', 'pods', '-n', namespace, '-l', selector, '-o', 'json']);
    return JSON.parse(out).items.filter((p: any) => !p.metadata.deletionTimestamp);
  }

  const wait = { timeoutMs: 90_000, intervalMs: 250, describe: () => up.stderr().slice(-2000) };

  test.serial(
    'the fluentd-elasticsearch DaemonSet runs one pod on each node; rollout status returns 0',
    async (t) => {
      t.regex(
        await up.kubectlOk(['apply', '-f', '-'], fluentd),
        /daemonset.apps\/fluentd-elasticsearch created/,
      );
      const pods = await pollUntil(
        'a Running daemon pod on each node',
        async () => {
          const p = await livePods('name=fluentd-elasticsearch', 'kube-system');
          return p.length === 3 && p.every((x) => x.status?.phase === 'Running') ? p : undefined;
        },
        wait,
      );
      t.deepEqual(pods.map((p) => p.spec.nodeName).sort(), ['apps-1', 'apps-2', 'apps-3']);
      const rollout = await up.kubectl([
        'rollout',
        'status',
        '-n',
        'kube-system',
        'ds/fluentd-elasticsearch',
        '--timeout=90s',
      ]);
      t.is(rollout.code, 0, rollout.stderr);
      t.regex(rollout.stdout, /daemon set "fluentd-elasticsearch" successfully rolled out/);
      const get = await up.kubectlOk(['get', 'ds', '-n', 'kube-system']);
      t.regex(get, /^NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE\n/);
      t.regex(get, /\nfluentd-elasticsearch\s+3\s+3\s+3\s+3\s+3\s+<none>\s+\S+\n/);
    },
  );

  test.serial('kubectl set image on the DaemonSet rolls every node to the new image', async (t) => {
    await up.kubectlOk([
      'set',
      'image',
      '-n',
      'kube-system',
      'ds/fluentd-elasticsearch',
      'fluentd-elasticsearch=quay.io/fluentd_elasticsearch/fluentd:v2.5.3',
    ]);
    const rollout = await up.kubectl([
      'rollout',
      'status',
      '-n',
      'kube-system',
      'ds/fluentd-elasticsearch',
      '--timeout=120s',
    ]);
    t.is(rollout.code, 0, rollout.stderr);
    const images = (await livePods('name=fluentd-elasticsearch', 'kube-system')).map(
      (p) => p.spec.containers[0].image,
    );
    t.deepEqual(images, Array(3).fill('quay.io/fluentd_elasticsearch/fluentd:v2.5.3'));
    const history = await up.kubectlOk([
      'rollout',
      'history',
      '-n',
      'kube-system',
      'ds/fluentd-elasticsearch',
    ]);
    t.regex(history, /REVISION\s+CHANGE-CAUSE\n1\s+<none>\n2\s+<none>/);
  });

  test.serial('kubectl delete ds: its pods and ControllerRevisions go', async (t) => {
    await up.kubectlOk(['delete', '-n', 'kube-system', 'ds/fluentd-elasticsearch']);
    await pollUntil(
      'no fluentd pods or revisions',
      async () => {
        const pods = await up.kubectlOk([
          'get',
          'pods',
          '-n',
          'kube-system',
          '-l',
          'name=fluentd-elasticsearch',
          '-o',
          'name',
        ]);
        const revs = await up.kubectlOk(['get', 'controllerrevisions', '-n', 'kube-system', '-o', 'name']);
        return pods.trim() === '' && revs.trim() === '' ? true : undefined;
      },
      wait,
    );
    t.pass();
  });
}

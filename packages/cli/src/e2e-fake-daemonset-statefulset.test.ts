import test, { type ExecutionContext } from 'ava';
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

// The "web" example of "StatefulSets" (concepts/workloads/controllers/statefulset), its
// volumeClaimTemplates replaced by an emptyDir volume (`claims` puts them back) and minReadySeconds 10
// lowered to 1, so that the three pods in order take seconds.
const web = (claims: boolean) => `apiVersion: v1
kind: Service
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  ports:
  - port: 80
    name: web
  clusterIP: None
  selector:
    app: nginx
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: nginx
  serviceName: "nginx"
  replicas: 3
  minReadySeconds: 1
  template:
    metadata:
      labels:
        app: nginx
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: nginx
        image: registry.k8s.io/nginx-slim:0.24
        ports:
        - containerPort: 80
          name: web
        volumeMounts:
        - name: www
          mountPath: /usr/share/nginx/html
${
  claims
    ? `  volumeClaimTemplates:
  - metadata:
      name: www
    spec:
      accessModes: [ "ReadWriteOnce" ]
      storageClassName: "my-storage-class"
      resources:
        requests:
          storage: 1Gi
`
    : `      volumes:
      - name: www
        emptyDir: {}
`
}`;

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

  /** The fluentd DaemonSet's `-n kube-system ds/…` arguments. */
  const FLUENTD = ['-n', 'kube-system', 'ds/fluentd-elasticsearch'];

  /** Waits for `kubectl rollout status` of the fluentd DaemonSet (exit 0), then its live pods' images. */
  async function rolledOutImages(t: ExecutionContext): Promise<string[]> {
    const rollout = await up.kubectl(['rollout', 'status', ...FLUENTD, '--timeout=120s']);
    t.is(rollout.code, 0, rollout.stderr);
    return (await livePods('name=fluentd-elasticsearch', 'kube-system')).map(
      (p) => p.spec.containers[0].image,
    );
  }

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
      const described = await up.kubectlOk(['describe', 'ds', '-n', 'kube-system', 'fluentd-elasticsearch']);
      t.regex(described, /Desired Number of Nodes Scheduled: 3/);
      t.regex(described, /Pods Status:\s+3 Running \/ 0 Waiting \/ 0 Succeeded \/ 0 Failed/);
      t.regex(described, /Normal\s+SuccessfulCreate\s+.*Created pod: fluentd-elasticsearch-\w{5}/);
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
    const images = await rolledOutImages(t);
    t.deepEqual(images, Array(3).fill('quay.io/fluentd_elasticsearch/fluentd:v2.5.3'));
    const history = await up.kubectlOk(['rollout', 'history', ...FLUENTD]);
    t.regex(history, /REVISION\s+CHANGE-CAUSE\n1\s+<none>\n2\s+<none>/);
    const revisions = await up.kubectlOk(['get', 'controllerrevisions', '-n', 'kube-system']);
    t.regex(revisions, /^NAME\s+CONTROLLER\s+REVISION\s+AGE\n/);
    t.regex(revisions, /\nfluentd-elasticsearch-\w+\s+daemonset\.apps\/fluentd-elasticsearch\s+2\s+\S+\n/);
  });

  test.serial('kubectl rollout undo ds: back to the first image, as revision 3', async (t) => {
    await up.kubectlOk(['rollout', 'undo', '-n', 'kube-system', 'ds/fluentd-elasticsearch']);
    const images = await rolledOutImages(t);
    t.deepEqual(images, Array(3).fill('quay.io/fluentd_elasticsearch/fluentd:v2.5.2'));
    const history = await up.kubectlOk(['rollout', 'history', ...FLUENTD]);
    t.regex(history, /REVISION\s+CHANGE-CAUSE\n2\s+<none>\n3\s+<none>/);
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

  const ready = (p: any) => p.status?.conditions?.find((c: any) => c.type === 'Ready' && c.status === 'True');

  test.serial('the web StatefulSet with volumeClaimTemplates is refused, naming the field', async (t) => {
    const r = await up.kubectl(['apply', '-f', '-'], web(true));
    t.not(r.code, 0);
    t.regex(r.stderr, /spec\.volumeClaimTemplates: Forbidden: persistent volumes are not supported/);
    t.regex(await up.kubectlOk(['get', 'sts']), /^$|No resources/);
  });

  test.serial(
    'the web StatefulSet makes web-0, web-1, web-2 in order; rollout status returns 0',
    async (t) => {
      t.regex(await up.kubectlOk(['apply', '-f', '-'], web(false)), /statefulset.apps\/web created/);
      const rollout = await up.kubectl(['rollout', 'status', 'sts/web', '--timeout=90s']);
      t.is(rollout.code, 0, rollout.stderr);
      t.regex(rollout.stdout, /partitioned roll out complete: 3 new pods have been updated/);
      const pods = (await livePods('app=nginx')).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
      t.deepEqual(
        pods.map((p) => p.metadata.name),
        ['web-0', 'web-1', 'web-2'],
      );
      for (let i = 1; i < 3; i++) {
        // Each pod was made only once the one before it was Ready.
        const readySince = Date.parse(ready(pods[i - 1]).lastTransitionTime);
        t.true(Date.parse(pods[i].metadata.creationTimestamp) >= readySince, pods[i].metadata.name);
      }
      t.deepEqual(
        pods.map((p) => [
          p.spec.hostname,
          p.spec.subdomain,
          p.metadata.labels['apps.kubernetes.io/pod-index'],
        ]),
        [
          ['web-0', 'nginx', '0'],
          ['web-1', 'nginx', '1'],
          ['web-2', 'nginx', '2'],
        ],
      );
      t.regex(await up.kubectlOk(['get', 'sts', 'web']), /^NAME\s+READY\s+AGE\nweb\s+3\/3\s+\S+\n$/);
      const described = await up.kubectlOk(['describe', 'sts', 'web']);
      t.regex(described, /Replicas:\s+3 desired \| 3 total/);
      t.regex(described, /Update Strategy:\s+RollingUpdate\n\s+Partition:\s+0/);
      t.regex(described, /Pods Status:\s+3 Running \/ 0 Waiting \/ 0 Succeeded \/ 0 Failed/);
      t.regex(described, /Normal\s+SuccessfulCreate\s+.*create Pod web-0 in StatefulSet web successful/);
    },
  );

  test.serial('kubectl delete pod web-1: it comes back with the same name', async (t) => {
    const uid = JSON.parse(await up.kubectlOk(['get', 'pod', 'web-1', '-o', 'json'])).metadata.uid;
    await up.kubectlOk(['delete', 'pod', 'web-1']);
    await pollUntil(
      'a new Ready web-1',
      async () => {
        const p = (await livePods('app=nginx')).find((x) => x.metadata.name === 'web-1');
        return p && p.metadata.uid !== uid && ready(p) ? p : undefined;
      },
      wait,
    );
    t.pass();
  });

  test.serial('kubectl set image sts/web rolls web-2, web-1, web-0 to the new image', async (t) => {
    await up.kubectlOk(['set', 'image', 'sts/web', 'nginx=registry.k8s.io/nginx-slim:0.27']);
    const rollout = await up.kubectl(['rollout', 'status', 'sts/web', '--timeout=120s']);
    t.is(rollout.code, 0, rollout.stderr);
    const pods = await livePods('app=nginx');
    t.deepEqual(
      pods.map((p) => p.spec.containers[0].image),
      Array(3).fill('registry.k8s.io/nginx-slim:0.27'),
    );
    const created = (n: string) =>
      Date.parse(pods.find((p) => p.metadata.name === n).metadata.creationTimestamp);
    t.true(
      created('web-2') <= created('web-1') && created('web-1') <= created('web-0'),
      'highest ordinal first',
    );
    const sts = JSON.parse(await up.kubectlOk(['get', 'sts', 'web', '-o', 'json']));
    t.is(sts.status.currentRevision, sts.status.updateRevision);
  });

  test.serial('kubectl scale sts web --replicas=1 leaves web-0', async (t) => {
    t.regex(await up.kubectlOk(['scale', 'sts', 'web', '--replicas=1']), /statefulset.apps\/web scaled/);
    const left = await pollUntil(
      'only web-0',
      async () => {
        const all = JSON.parse(await up.kubectlOk(['get', 'pods', '-l', 'app=nginx', '-o', 'json'])).items;
        return all.length === 1 ? all : undefined;
      },
      wait,
    );
    t.is(left[0].metadata.name, 'web-0');
    const rollout = await up.kubectl(['rollout', 'status', 'sts/web', '--timeout=60s']);
    t.is(rollout.code, 0, rollout.stderr);
  });

  test.serial('kubectl delete sts web: its pods go too', async (t) => {
    await up.kubectlOk(['delete', 'sts', 'web']);
    await pollUntil(
      'no web pods',
      async () =>
        (await up.kubectlOk(['get', 'pods', '-l', 'app=nginx', '-o', 'name'])).trim() === ''
          ? true
          : undefined,
      wait,
    );
    t.pass();
  });
}

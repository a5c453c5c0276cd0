import test from 'ava';
import { spawn } from 'node:child_process';
import { parse as parseYaml } from 'yaml';
import {
  kubectlMissing,
  kubectlPath,
  kubectlTests,
  readyNode,
  startCluster,
  waitFor,
  type TestCluster,
} from './test-helpers.js';

// The real kubectl against a control plane started here (temporary data directory, a free port).
// Without kubectl: one skipped test saying so, or under CI=true one failing test.
const serial = kubectlTests(test);

let c: TestCluster;

if (!kubectlMissing)
  test.before(async () => {
    c = await startCluster();
    const node = await c.api('POST', '/api/v1/nodes', readyNode('node-1'));
    if (node.status !== 201) throw new Error(`node not created: ${node.text}`);
  });

if (!kubectlMissing)
  test.after.always(async () => {
    await c?.destroy();
  });

const manifests = (label: string) => `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
    tier: ${label}
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    ports:
    - name: http
      containerPort: 8080
    resources:
      requests:
        cpu: 100m
        memory: 64Mi
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: http
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
---
apiVersion: v1
kind: Secret
metadata:
  name: token
type: Opaque
data:
  token: c2VjcmV0
`;

serial(
  'kubectl apply creates a Pod, Service, ConfigMap and Secret; applied again they are unchanged; a changed label is configured',
  async (t) => {
    const first = await c.kubectl(['apply', '-f', '-'], { input: manifests('frontend') });
    t.is(first.code, 0, first.stderr);
    t.deepEqual(first.stdout.trim().split('\n'), [
      'pod/web created',
      'service/web created',
      'configmap/settings created',
      'secret/token created',
    ]);
    const second = await c.kubectl(['apply', '-f', '-'], { input: manifests('frontend') });
    t.is(second.code, 0, second.stderr);
    t.deepEqual(second.stdout.trim().split('\n'), [
      'pod/web unchanged',
      'service/web unchanged',
      'configmap/settings unchanged',
      'secret/token unchanged',
    ]);
    const third = await c.kubectl(['apply', '-f', '-'], { input: manifests('backend') });
    t.is(third.code, 0, third.stderr);
    t.regex(third.stdout, /^pod\/web configured$/m);
    t.regex(third.stdout, /^service\/web unchanged$/m);
    const pod = await c.api('GET', '/api/v1/namespaces/default/pods/web');
    t.is(pod.json.metadata.labels.tier, 'backend');
    // The server validated strictly and applied kubectl's strategic merge patch.
    t.truthy(pod.json.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']);
  },
);

serial('kubectl get prints upstream columns (-o wide) and the stored object (-o yaml)', async (t) => {
  await waitFor(
    async () =>
      (await c.api('GET', '/api/v1/namespaces/default/pods/web')).json.spec.nodeName ? true : undefined,
    'the pod bound',
  );
  const wide = await c.kubectl(['get', 'pods', '-o', 'wide']);
  t.is(wide.code, 0, wide.stderr);
  const [header, row] = wide.stdout.trim().split('\n');
  t.deepEqual(header!.split(/\s{2,}/), [
    'NAME',
    'READY',
    'STATUS',
    'RESTARTS',
    'AGE',
    'IP',
    'NODE',
    'NOMINATED NODE',
    'READINESS GATES',
  ]);
  t.regex(row!, /^web\s+0\/1\s+Pending\s+0\s+\d+s\s+<none>\s+node-1\s+<none>\s+<none>$/);

  const svc = await c.kubectl(['get', 'svc', 'web']);
  t.regex(svc.stdout, /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE$/m);
  t.regex(svc.stdout, /^web\s+ClusterIP\s+10\.96\.\d+\.\d+\s+<none>\s+80\/TCP\s+\d+s$/m);

  const yaml = await c.kubectl(['get', 'pod', 'web', '-o', 'yaml']);
  t.is(yaml.code, 0, yaml.stderr);
  const pod = parseYaml(yaml.stdout);
  t.is(pod.kind, 'Pod');
  t.is(pod.spec.nodeName, 'node-1');
  t.is(pod.status.qosClass, 'Burstable');
  t.regex(pod.metadata.resourceVersion, /^\d+$/);
  t.is(pod.spec.containers[0].imagePullPolicy, 'IfNotPresent');

  const nodes = await c.kubectl(['get', 'nodes']);
  t.regex(nodes.stdout, /^node-1\s+Ready\s+<none>\s+\d+s\s+v1\.34\.0$/m);
});

serial('kubectl get -w prints each change of a pod as it happens', async (t) => {
  const child = spawn(
    kubectlPath,
    [
      '--kubeconfig',
      c.cp.kubeconfigPath,
      '--cache-dir',
      `${c.dataDir}/kubectl-cache`,
      'get',
      'pod',
      'web',
      '-w',
      '--no-headers',
    ],
    {
      env: { ...process.env, KUBECONFIG: '' },
    },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const lines = () => out.split('\n').filter(Boolean);
  try {
    await waitFor(() => (lines().length >= 1 ? true : undefined), 'the first line of the watch');
    const pod = (await c.api('GET', '/api/v1/namespaces/default/pods/web')).json;
    // The kubelet's part, played here: the pod starts.
    const status = await c.api(
      'PATCH',
      '/api/v1/namespaces/default/pods/web/status',
      {
        status: {
          phase: 'Running',
          hostIP: '10.0.0.10',
          podIP: '10.244.0.7',
          podIPs: [{ ip: '10.244.0.7' }],
          conditions: [{ type: 'Ready', status: 'True' }],
          containerStatuses: [
            {
              name: 'nginx',
              ready: true,
              restartCount: 0,
              image: 'nginx:1.27',
              imageID: '',
              started: true,
              state: { running: { startedAt: pod.metadata.creationTimestamp } },
            },
          ],
        },
      },
      { 'content-type': 'application/merge-patch+json' },
    );
    t.is(status.status, 200, status.text);
    await waitFor(() => (lines().length >= 2 ? true : undefined), 'the Running line of the watch');
  } finally {
    child.kill();
  }
  t.regex(lines()[0]!, /^web\s+0\/1\s+Pending\s+0/);
  t.regex(lines()[1]!, /^web\s+1\/1\s+Running\s+0/);
});

serial('kubectl describe pod shows the pod with its events', async (t) => {
  const out = await c.kubectl(['describe', 'pod', 'web']);
  t.is(out.code, 0, out.stderr);
  t.regex(out.stdout, /^Name:\s+web$/m);
  t.regex(out.stdout, /^Node:\s+node-1\/10\.0\.0\.10$/m);
  t.regex(out.stdout, /^Status:\s+Running$/m);
  t.regex(out.stdout, /^IP:\s+10\.244\.0\.7$/m);
  t.regex(out.stdout, /^QoS Class:\s+Burstable$/m);
  t.regex(
    out.stdout,
    /Normal\s+Scheduled\s+\S+\s+default-scheduler\s+Successfully assigned default\/web to node-1/,
  );
  const node = await c.kubectl(['describe', 'node', 'node-1']);
  t.is(node.code, 0, node.stderr);
  t.regex(node.stdout, /default\s+web\s+100m \(2%\)/);
});

serial(
  'kubectl logs: an error naming the node while its kubelet cannot be reached; a registered provider answers',
  async (t) => {
    const before = await c.kubectl(['logs', 'web']);
    t.is(before.code, 1);
    t.regex(before.stderr, /ServiceUnavailable.*node node-1/);
    const seen: string[] = [];
    const unregister = c.cp.registerLogProvider('node-1', {
      logs: async (pod, options) => {
        seen.push(`${pod.metadata.name}/${options.container} tail=${options.tailLines ?? '-'}`);
        return 'hello from nginx\n';
      },
    });
    try {
      const logs = await c.kubectl(['logs', 'web', '--tail=5']);
      t.is(logs.code, 0, logs.stderr);
      t.is(logs.stdout, 'hello from nginx\n');
      t.deepEqual(seen, ['web/nginx tail=5']);
    } finally {
      unregister();
    }
  },
);

serial('kubectl get endpointslices lists the ready address of the pod behind the service', async (t) => {
  const out = await waitFor(async () => {
    const r = await c.kubectl(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=web']);
    return /10\.244\.0\.7/.test(r.stdout) ? r : undefined;
  }, 'the endpoint of web');
  t.regex(out.stdout, /^NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE$/m);
  // The named targetPort `http` resolved to the container's port.
  t.regex(out.stdout, /^web-\w{5}\s+IPv4\s+8080\s+10\.244\.0\.7\s+\d+s$/m);
});

serial('kubectl delete pod is graceful: the pod terminates until its kubelet confirms', async (t) => {
  const pod = (await c.api('GET', '/api/v1/namespaces/default/pods/web')).json;
  const deleting = spawn(
    kubectlPath,
    [
      '--kubeconfig',
      c.cp.kubeconfigPath,
      '--cache-dir',
      `${c.dataDir}/kubectl-cache`,
      'delete',
      'pod',
      'web',
    ],
    {
      env: { ...process.env, KUBECONFIG: '' },
    },
  );
  let out = '';
  deleting.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number>((resolve) => deleting.on('exit', (code) => resolve(code ?? -1)));
  try {
    const marked = await waitFor(async () => {
      const p = (await c.api('GET', '/api/v1/namespaces/default/pods/web')).json;
      return p.metadata?.deletionTimestamp ? p : undefined;
    }, 'the deletionTimestamp');
    t.is(marked.metadata.deletionGracePeriodSeconds, 30);
    const slices = await c.kubectl([
      'get',
      'endpointslices',
      '-l',
      'kubernetes.io/service-name=web',
      '-o',
      'yaml',
    ]);
    t.deepEqual(parseYaml(slices.stdout).items[0].endpoints[0].conditions, {
      ready: false,
      serving: true,
      terminating: true,
    });
    const listed = await c.kubectl(['get', 'pod', 'web', '--no-headers']);
    t.regex(listed.stdout, /^web\s+1\/1\s+Terminating/);
    // The kubelet confirms: its containers stopped, it deletes with grace 0 and the pod's UID.
    const confirm = await c.api('DELETE', '/api/v1/namespaces/default/pods/web', {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      gracePeriodSeconds: 0,
      preconditions: { uid: pod.metadata.uid },
    });
    t.is(confirm.status, 200, confirm.text);
    t.is(await exited, 0);
  } finally {
    deleting.kill();
  }
  t.is(out.trim(), 'pod "web" deleted');
  t.is((await c.api('GET', '/api/v1/namespaces/default/pods/web')).status, 404);
});

serial('kubectl delete of the service, configmap and secret removes them and the slices', async (t) => {
  const out = await c.kubectl(['delete', 'service/web', 'configmap/settings', 'secret/token']);
  t.is(out.code, 0, out.stderr);
  t.deepEqual(out.stdout.trim().split('\n'), [
    'service "web" deleted',
    'configmap "settings" deleted',
    'secret "token" deleted',
  ]);
  await waitFor(async () => {
    const r = await c.api(
      'GET',
      '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dweb',
    );
    return r.json.items.length === 0 ? true : undefined;
  }, 'the slices of web to go');
  t.pass();
});

serial('kubectl api-resources and explain read discovery and OpenAPI v3', async (t) => {
  const resources = await c.kubectl(['api-resources', '--no-headers']);
  t.is(resources.code, 0, resources.stderr);
  for (const name of [
    'pods',
    'services',
    'nodes',
    'namespaces',
    'configmaps',
    'secrets',
    'serviceaccounts',
    'events',
    'leases',
    'endpointslices',
  ]) {
    t.regex(resources.stdout, new RegExp(`^${name}\\s`, 'm'));
  }
  const explain = await c.kubectl(['explain', 'pod.spec.containers.ports']);
  t.is(explain.code, 0, explain.stderr);
  t.regex(explain.stdout, /containerPort\s+<integer>/);
});

serial(
  'kubectl create namespace, configmap, secret, service and serviceaccount (protobuf request bodies)',
  async (t) => {
    const runs = [
      ['create', 'namespace', 'made-by-create'],
      ['create', 'configmap', 'literal', '--from-literal=color=blue', '-n', 'made-by-create'],
      ['create', 'secret', 'generic', 'pw', '--from-literal=password=hunter2', '-n', 'made-by-create'],
      ['create', 'service', 'nodeport', 'np', '--tcp=8080:http', '-n', 'made-by-create'],
      ['create', 'serviceaccount', 'robot', '-n', 'made-by-create'],
    ];
    for (const args of runs) {
      const out = await c.kubectl(args);
      t.is(out.code, 0, `${args.join(' ')}: ${out.stderr}`);
    }
    const cm = await c.api('GET', '/api/v1/namespaces/made-by-create/configmaps/literal');
    t.deepEqual(cm.json.data, { color: 'blue' });
    const secret = await c.api('GET', '/api/v1/namespaces/made-by-create/secrets/pw');
    t.is(Buffer.from(secret.json.data.password, 'base64').toString(), 'hunter2');
    t.is(secret.json.type, 'Opaque');
    const svc = await c.api('GET', '/api/v1/namespaces/made-by-create/services/np');
    t.like(svc.json.spec, { type: 'NodePort', sessionAffinity: 'None', selector: { app: 'np' } });
    t.like(svc.json.spec.ports[0], { name: '8080-http', port: 8080, targetPort: 'http', protocol: 'TCP' });
    t.true(svc.json.spec.ports[0].nodePort >= 30000 && svc.json.spec.ports[0].nodePort <= 32767);
    t.is((await c.api('GET', '/api/v1/namespaces/made-by-create/serviceaccounts/robot')).status, 200);
  },
);

import test from 'ava';
import { kubectlMissing, kubectlTests, startCluster, type TestCluster } from './test-helpers.js';

// apps/v1 Deployments and ReplicaSets as served resources (no controllers involved): defaults,
// validation, printing, generation and the scale subresource, through the real kubectl.
const serial = kubectlTests(test);

let c: TestCluster;

if (!kubectlMissing)
  test.before(async () => {
    c = await startCluster({ controllers: { scheduler: false, endpointSlices: false, workloads: false } });
  });

if (!kubectlMissing)
  test.after.always(async () => {
    await c?.destroy();
  });

serial('kubectl create deployment stores upstream defaults and generation 1', async (t) => {
  const r = await c.kubectl(['create', 'deployment', 'web', '--image=nginx', '--replicas=3']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /deployment.apps\/web created/);
  const d = (await c.api('GET', '/apis/apps/v1/namespaces/default/deployments/web')).json;
  t.is(d.metadata.generation, 1);
  t.is(d.spec.replicas, 3);
  t.deepEqual(d.spec.strategy, {
    type: 'RollingUpdate',
    rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' },
  });
  t.is(d.spec.revisionHistoryLimit, 10);
  t.is(d.spec.progressDeadlineSeconds, 600);
  t.is(d.spec.template.spec.restartPolicy, 'Always');
  t.is(d.spec.template.spec.containers[0].terminationMessagePath, '/dev/termination-log');
  t.deepEqual(d.spec.selector, { matchLabels: { app: 'web' } });
});

serial('kubectl get deploy prints READY UP-TO-DATE AVAILABLE AGE, by short name', async (t) => {
  const r = await c.kubectl(['get', 'deploy']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\n/);
  t.regex(r.stdout, /\nweb\s+0\/3\s+0\s+0\s+\S+\n/);
  const wide = await c.kubectl(['get', 'deploy', '-o', 'wide']);
  t.regex(wide.stdout, /CONTAINERS\s+IMAGES\s+SELECTOR/);
  t.regex(wide.stdout, /nginx\s+nginx\s+app=web/);
});

serial('kubectl scale writes spec.replicas through the scale subresource and bumps generation', async (t) => {
  const r = await c.kubectl(['scale', 'deployment', 'web', '--replicas=5']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /deployment.apps\/web scaled/);
  const d = (await c.api('GET', '/apis/apps/v1/namespaces/default/deployments/web')).json;
  t.is(d.spec.replicas, 5);
  t.is(d.metadata.generation, 2);
  const scale = (await c.api('GET', '/apis/apps/v1/namespaces/default/deployments/web/scale')).json;
  t.like(scale, {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    spec: { replicas: 5 },
    status: { replicas: 0, selector: 'app=web' },
  });
  // A status write leaves the generation alone.
  const status = await c.api('PUT', '/apis/apps/v1/namespaces/default/deployments/web/status', {
    ...d,
    status: { observedGeneration: 2, replicas: 5 },
  });
  t.is(status.status, 200, status.text);
  t.is(status.json.metadata.generation, 2);
  t.is(status.json.spec.replicas, 5);
});

serial('a selector that does not match the template labels is refused with upstream message', async (t) => {
  const manifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: bad
spec:
  selector:
    matchLabels:
      app: other
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: c
        image: nginx
`;
  const r = await c.kubectl(['create', '-f', '-'], { input: manifest });
  t.not(r.code, 0);
  t.regex(
    r.stderr,
    /spec\.template\.metadata\.labels: Invalid value: map\[string\]string\{"app":"web"\}: `selector` does not match template `labels`/,
  );
  const rs = await c.kubectl(['create', '-f', '-'], {
    input: manifest.replace('Deployment', 'ReplicaSet').replace('name: bad', 'name: bad-rs'),
  });
  t.not(rs.code, 0);
  t.regex(rs.stderr, /The ReplicaSet "bad-rs" is invalid/);
});

serial('ReplicaSets print DESIRED CURRENT READY AGE and scale', async (t) => {
  const manifest = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: front
spec:
  selector:
    matchLabels:
      app: front
  template:
    metadata:
      labels:
        app: front
    spec:
      containers:
      - name: c
        image: nginx
`;
  t.is((await c.kubectl(['create', '-f', '-'], { input: manifest })).code, 0);
  const scaled = await c.kubectl(['scale', 'rs', 'front', '--replicas=2']);
  t.is(scaled.code, 0, scaled.stderr);
  const r = await c.kubectl(['get', 'rs']);
  t.regex(r.stdout, /^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\n/);
  t.regex(r.stdout, /\nfront\s+2\s+0\s+0\s+\S+\n/);
  const changed = await c.kubectl([
    'patch',
    'rs',
    'front',
    '--type=merge',
    '-p',
    '{"spec":{"selector":{"matchLabels":{"app":"x"}}}}',
  ]);
  t.not(changed.code, 0);
  t.regex(changed.stderr, /spec\.selector: Invalid value: .*field is immutable/);
});

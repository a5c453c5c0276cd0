import test from 'ava';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { kubectlMissing, kubectlTests, runKubectl, startCluster, type TestCluster } from './test-helpers.js';

// The real kubectl against the HTTPS server: `kubectl create token`, then requests with that token
// (`kubectl auth whoami` is a SelfSubjectReview), and a TokenReview. Without kubectl: one skipped test
// saying so, or under CI=true one failing test.
const serial = kubectlTests(test);

let c: TestCluster;

if (!kubectlMissing)
  test.before(async () => {
    c = await startCluster();
    const pod = await c.api('POST', '/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web' },
      spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
    });
    if (pod.status !== 201) throw new Error(pod.text);
  });

if (!kubectlMissing)
  test.after.always(async () => {
    await c?.destroy();
  });

/** kubectl with a kubeconfig whose user is only `token`. */
async function withToken(token: string, args: string[]) {
  const path = join(c.dataDir, `token-${Math.random().toString(36).slice(2)}.kubeconfig`);
  const ca = Buffer.from(c.cp.caCert).toString('base64');
  await writeFile(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "${c.cp.url}", certificate-authority-data: ${ca}}}]`,
      `users: [{name: u, user: {token: "${token}"}}]`,
      'contexts: [{name: c, context: {cluster: c, user: u}}]',
      'current-context: c',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return runKubectl(['--kubeconfig', path, '--cache-dir', join(c.dataDir, 'kubectl-cache-token'), ...args]);
}

serial(
  'kubectl create token default; a request with it is answered as system:serviceaccount:default:default',
  async (t) => {
    const created = await c.kubectl(['create', 'token', 'default']);
    t.is(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    const whoami = await withToken(token, ['auth', 'whoami']);
    t.is(whoami.code, 0, whoami.stderr);
    t.regex(whoami.stdout, /Username\s+system:serviceaccount:default:default/);
    t.regex(
      whoami.stdout,
      /Groups\s+\[system:serviceaccounts system:serviceaccounts:default system:authenticated\]/,
    );
    // RBAC decides what the service account may do: nothing on pods until a binding grants it.
    const refused = await withToken(token, ['get', 'pods', '-o', 'name']);
    t.is(refused.code, 1);
    t.regex(
      refused.stderr,
      /pods is forbidden: User "system:serviceaccount:default:default" cannot list resource "pods" in API group "" in the namespace "default"/,
    );
    const bound = await c.kubectl([
      'create',
      'rolebinding',
      'default-view',
      '--clusterrole=view',
      '--serviceaccount=default:default',
    ]);
    t.is(bound.code, 0, bound.stderr);
    const pods = await withToken(token, ['get', 'pods', '-o', 'name']);
    t.is(pods.code, 0, pods.stderr);
    t.is(pods.stdout.trim(), 'pod/web');
  },
);

serial(
  'kubectl create token bound to a pod: whoami shows the pod; deleting the pod ends the token',
  async (t) => {
    const created = await c.kubectl([
      'create',
      'token',
      'default',
      '--bound-object-kind',
      'Pod',
      '--bound-object-name',
      'web',
    ]);
    t.is(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    const whoami = await withToken(token, ['auth', 'whoami', '-o', 'yaml']);
    t.is(whoami.code, 0, whoami.stderr);
    const review = parseYaml(whoami.stdout);
    t.deepEqual(review.status.userInfo.extra['authentication.kubernetes.io/pod-name'], ['web']);
    const deleted = await c.kubectl(['delete', 'pod', 'web', '--grace-period=0', '--force']);
    t.is(deleted.code, 0, deleted.stderr);
    const after = await withToken(token, ['get', 'pods']);
    t.not(after.code, 0);
    t.regex(after.stderr, /You must be logged in to the server/);
  },
);

serial('kubectl create token --duration below 10m is refused with the API server message', async (t) => {
  const r = await c.kubectl(['create', 'token', 'default', '--duration', '5m']);
  t.not(r.code, 0);
  t.regex(
    r.stderr,
    /TokenRequest\.authentication\.k8s\.io "" is invalid: spec\.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes/,
  );
});

serial('kubectl create -f a TokenReview answers whether the token authenticates', async (t) => {
  const token = (await c.kubectl(['create', 'token', 'default', '--audience', 'vault'])).stdout.trim();
  const manifest = `apiVersion: authentication.k8s.io/v1
kind: TokenReview
spec:
  token: ${token}
  audiences: [vault]
`;
  const r = await c.kubectl(['create', '-f', '-', '-o', 'yaml'], { input: manifest });
  t.is(r.code, 0, r.stderr);
  const status = parseYaml(r.stdout).status;
  t.true(status.authenticated);
  t.deepEqual(status.audiences, ['vault']);
  t.is(status.user.username, 'system:serviceaccount:default:default');
});

serial(
  'kubectl describe shows the kube-api-access volume and a grpc probe (the defaults it needs are there)',
  async (t) => {
    const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: grpc
spec:
  containers:
  - name: c
    image: busybox:1.36
    livenessProbe:
      grpc:
        port: 9000
`;
    const created = await c.kubectl(['create', '-f', '-'], { input: manifest });
    t.is(created.code, 0, created.stderr);
    const r = await c.kubectl(['describe', 'pod', 'grpc']);
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, /Liveness:\s+grpc <pod>:9000 {2}delay=0s timeout=1s period=10s #success=1 #failure=3/);
    t.regex(r.stdout, /kube-api-access-\w{5}:\n\s+Type:\s+Projected/);
    t.regex(r.stdout, /TokenExpirationSeconds:\s+3607/);
    t.regex(r.stdout, /ConfigMapName:\s+kube-root-ca\.crt/);
    t.regex(
      r.stdout,
      /\/var\/run\/secrets\/kubernetes\.io\/serviceaccount from kube-api-access-\w{5} \(ro\)/,
    );
  },
);

import test from 'ava';
import { fileCluster, kubectlTests } from './test-helpers.js';

// policy/v1 PodDisruptionBudgets as a served resource (no controllers), pods/eviction in discovery, and the
// protobuf DeleteOptions `kubectl drain` sends, through the real kubectl and raw requests.
const serial = kubectlTests(test);

const cluster = fileCluster(test, {
  controllers: { scheduler: false, endpointSlices: false, workloads: false },
});

serial('kubectl create pdb (a protobuf body) and kubectl get pdb with upstream columns', async (t) => {
  const c = cluster();
  const a = await c.kubectl(['create', 'pdb', 'web', '--selector=app=web', '--min-available=2']);
  t.is(a.code, 0, a.stderr);
  t.regex(a.stdout, /poddisruptionbudget.policy\/web created/);
  const b = await c.kubectl(['create', 'pdb', 'zero', '--selector=app=z', '--max-unavailable=0']);
  t.is(b.code, 0, b.stderr);
  const zero = (await c.api('GET', '/apis/policy/v1/namespaces/default/poddisruptionbudgets/zero')).json;
  t.deepEqual(zero.spec, { maxUnavailable: 0, selector: { matchLabels: { app: 'z' } } });
  t.like(zero.status, { currentHealthy: 0, desiredHealthy: 0, disruptionsAllowed: 0, expectedPods: 0 });
  const r = await c.kubectl(['get', 'pdb']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE$/m);
  t.regex(r.stdout, /^web\s+2\s+N\/A\s+0\s+\S+$/m);
  t.regex(r.stdout, /^zero\s+N\/A\s+0\s+0\s+\S+$/m);
});

serial('validation: not both of minAvailable and maxUnavailable; percentages up to 100%', async (t) => {
  const c = cluster();
  const pdb = (name: string, spec: string) =>
    `apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: ${name}\nspec:\n  selector:\n    matchLabels: {app: x}\n${spec}`;
  const both = await c.kubectl(['apply', '-f', '-'], {
    input: pdb('both', '  minAvailable: 1\n  maxUnavailable: 1\n'),
  });
  t.not(both.code, 0);
  t.regex(both.stderr, /spec: Invalid value: "": minAvailable and maxUnavailable cannot be both set/);
  const over = await c.kubectl(['apply', '-f', '-'], { input: pdb('over', '  minAvailable: "150%"\n') });
  t.not(over.code, 0);
  t.regex(over.stderr, /spec.minAvailable: Invalid value: "150%": must not be greater than 100%/);
  const word = await c.kubectl(['apply', '-f', '-'], { input: pdb('word', '  maxUnavailable: "half"\n') });
  t.not(word.code, 0);
  t.regex(word.stderr, /spec.maxUnavailable: Invalid value: "half": a valid percent string must be/);
});

serial('pods/eviction is in discovery as policy/v1 Eviction (what kubectl drain looks for)', async (t) => {
  const c = cluster();
  const v1 = (await c.api('GET', '/api/v1')).json;
  const eviction = v1.resources.find((r: { name: string }) => r.name === 'pods/eviction');
  t.like(eviction, { kind: 'Eviction', group: 'policy', version: 'v1', verbs: ['create'] });
});

// The bodies kubectl drain --disable-eviction sends (captured from kubectl 1.32): `k8s\0`, a runtime.Unknown
// of TypeMeta v1/DeleteOptions and the message — empty, and gracePeriodSeconds 7 (`--grace-period=7`).
const emptyOptions = Buffer.from(
  '6b3873000a130a027631120d' + '44656c6574654f7074696f6e73' + '12001a002200',
  'hex',
);
const graceSeven = Buffer.from(
  '6b3873000a130a027631120d' + '44656c6574654f7074696f6e73' + '120208071a002200',
  'hex',
);

serial('DELETE with a protobuf DeleteOptions body is honoured', async (t) => {
  const c = cluster();
  const pod = (name: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'nginx' }] },
  });
  const proto = { 'content-type': 'application/vnd.kubernetes.protobuf' };
  for (const name of ['p7', 'p30'])
    t.is((await c.api('POST', '/api/v1/namespaces/default/pods', pod(name))).status, 201);
  const seven = await c.api('DELETE', '/api/v1/namespaces/default/pods/p7', graceSeven, proto);
  t.is(seven.status, 200, seven.text);
  t.is(seven.json.metadata.deletionGracePeriodSeconds, 7);
  const dflt = await c.api('DELETE', '/api/v1/namespaces/default/pods/p30', emptyOptions, proto);
  t.is(dflt.status, 200, dflt.text);
  t.is(dflt.json.metadata.deletionGracePeriodSeconds, 30);
});

serial('RBAC: the default edit and admin roles may create pods/eviction, view may not', async (t) => {
  const c = cluster();
  for (const [user, role] of [
    ['ed', 'edit'],
    ['ad', 'admin'],
    ['vi', 'view'],
  ] as const) {
    const r = await c.kubectl([
      'create',
      'rolebinding',
      `${user}-${role}`,
      `--clusterrole=${role}`,
      `--user=${user}`,
    ]);
    t.is(r.code, 0, r.stderr);
  }
  // A SubjectAccessReview asks for another user (this server does not impersonate).
  const canEvict = async (user: string) => {
    const review = await c.api('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user,
        resourceAttributes: {
          namespace: 'default',
          verb: 'create',
          resource: 'pods',
          subresource: 'eviction',
        },
      },
    });
    return review.json.status?.allowed === true;
  };
  // The aggregated roles are filled by a controller: wait, bounded, until edit has its rules.
  const deadline = Date.now() + 20_000;
  while (!(await canEvict('ed')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  t.true(await canEvict('ed'));
  t.true(await canEvict('ad'));
  t.false(await canEvict('vi'));
});

// An Eviction as a typed client encodes it: TypeMeta policy/v1 Eviction; metadata.name "pe",
// deleteOptions.gracePeriodSeconds 0.
const evictionPe = Buffer.from(
  '6b387300' +
    '0a15' +
    '0a09706f6c6963792f7631' +
    '12084576696374696f6e' +
    '120a' +
    '0a040a027065' +
    '12020800',
  'hex',
);

serial('POST pods/eviction with a protobuf Eviction: its deleteOptions are honoured', async (t) => {
  const c = cluster();
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'pe' },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'nginx' }] },
  };
  t.is((await c.api('POST', '/api/v1/namespaces/default/pods', pod)).status, 201);
  const r = await c.api('POST', '/api/v1/namespaces/default/pods/pe/eviction', evictionPe, {
    'content-type': 'application/vnd.kubernetes.protobuf',
  });
  t.is(r.status, 201, r.text);
  t.like(r.json, { kind: 'Status', status: 'Success' });
  // Grace 0: gone at once.
  t.is((await c.api('GET', '/api/v1/namespaces/default/pods/pe')).status, 404);
});

serial(
  'malformed protobuf Evictions and DeleteOptions are a 400 naming the body; nothing is deleted, the server serves on',
  async (t) => {
    const c = cluster();
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'pm' },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'nginx' }] },
    };
    t.is((await c.api('POST', '/api/v1/namespaces/default/pods', pod)).status, 201);
    const proto = { 'content-type': 'application/vnd.kubernetes.protobuf' };
    const bodies: [string, Buffer][] = [
      ['truncated', evictionPe.subarray(0, evictionPe.length - 3)],
      ['no envelope magic', Buffer.from('0a0012020800', 'hex')],
      ['a length past the end', Buffer.concat([evictionPe.subarray(0, 4), Buffer.from('0aff7f', 'hex')])],
      ['random bytes', Buffer.from('6b387300ffffffffffffffffffffff', 'hex')],
    ];
    for (const [what, body] of bodies) {
      const evict = await c.api('POST', '/api/v1/namespaces/default/pods/pm/eviction', body, proto);
      t.true(evict.status >= 400 && evict.status < 500, `eviction, ${what}: ${evict.status} ${evict.text}`);
      t.regex(evict.json?.message ?? '', /\S/, `eviction, ${what}: a message`);
      const del = await c.api('DELETE', '/api/v1/namespaces/default/pods/pm', body, proto);
      t.true(del.status >= 400 && del.status < 500, `delete, ${what}: ${del.status} ${del.text}`);
    }
    t.is((await c.api('GET', '/api/v1/namespaces/default/pods/pm')).status, 200, 'the pod is still there');
  },
);

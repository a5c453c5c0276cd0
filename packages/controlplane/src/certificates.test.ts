// CertificateSigningRequests, bootstrap tokens and the CSR approving/signing controller, over HTTPS
// with raw requests and the real kubectl.
import test from 'ava';
import { webcrypto, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import {
  apiRequest,
  type ApiResponse,
  type RequestAuth,
  startCluster,
  type TestCluster,
  waitFor,
  kubectlTests,
} from './test-helpers.js';
import { nodeBootstrapTokenGroup } from './cluster-bootstrap.js';

const kubectlTest = kubectlTests(test);

x509.cryptoProvider.set(webcrypto as any);
const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

let c: TestCluster;
test.before(async () => {
  c = await startCluster();
});
test.after.always(() => c?.destroy());

async function csrPem(subject: string, dnsNames: string[] = []): Promise<string> {
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as any;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: subject,
    keys,
    signingAlgorithm: algorithm,
    extensions: dnsNames.length
      ? [new x509.SubjectAlternativeNameExtension(dnsNames.map((value) => ({ type: 'dns', value })))]
      : [],
  });
  return csr.toString('pem');
}

function csrObject(name: string, pem: string, signerName = 'kubernetes.io/kube-apiserver-client-kubelet') {
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name },
    spec: {
      request: Buffer.from(pem).toString('base64'),
      signerName,
      usages: ['digital signature', 'client auth'],
      // A client may not claim to be someone else: the server replaces these.
      username: 'system:admin',
      groups: ['system:masters'],
    },
  };
}

/** A request authenticated by a bearer token only (no client certificate). */
function withToken(token: string, method: string, path: string, body?: unknown): Promise<ApiResponse> {
  return send({ headers: { authorization: `Bearer ${token}` } }, method, path, body);
}

/** A request authenticated by the client certificate of a node kubeconfig. */
function withKubeconfig(file: string, method: string, path: string, body?: unknown): Promise<ApiResponse> {
  const text = readFileSync(file, 'utf8');
  const data = (field: string) =>
    Buffer.from(new RegExp(`${field}: (\\S+)`).exec(text)![1]!, 'base64').toString('utf8');
  return send({ cert: data('client-certificate-data'), key: data('client-key-data') }, method, path, body);
}

const send = (auth: RequestAuth, method: string, path: string, body?: unknown) =>
  apiRequest(c.cp, auth, method, path, body);

/** Polls until `check` gives a value (the helper takes the description second). */
const until = <T>(what: string, check: () => Promise<T | undefined>): Promise<T> => waitFor(check, what);

const b64 = (s: string) => Buffer.from(s).toString('base64');

async function makeToken(id: string, secret: string, extra: Record<string, string> = {}): Promise<string> {
  const r = await c.api('POST', '/api/v1/namespaces/kube-system/secrets', {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `bootstrap-token-${id}` },
    type: 'bootstrap.kubernetes.io/token',
    data: {
      'token-id': b64(id),
      'token-secret': b64(secret),
      'usage-bootstrap-authentication': b64('true'),
      // The group nodelet up's tokens carry, which its bootstrap bindings grant CSR creation and approval.
      'auth-extra-groups': b64(nodeBootstrapTokenGroup),
      ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, b64(v)])),
    },
  });
  if (r.status !== 201) throw new Error(r.text);
  return `${id}.${secret}`;
}

const path = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

test.serial(
  'a bootstrap token may create and read CSRs, nothing else; the server records who asked',
  async (t) => {
    const token = await makeToken('tok001', '0123456789abcdef');
    const created = await withToken(
      token,
      'POST',
      path,
      csrObject('by-token', await csrPem('CN=system:node:n1, O=system:nodes')),
    );
    t.is(created.status, 201, created.text);
    t.is(created.json.spec.username, 'system:bootstrap:tok001');
    t.deepEqual(created.json.spec.groups, [
      'system:bootstrappers',
      nodeBootstrapTokenGroup,
      'system:authenticated',
    ]);

    t.is((await withToken(token, 'GET', `${path}/by-token`)).status, 200);
    t.is((await withToken(token, 'GET', '/api')).status, 200, 'discovery is open to it');
    const pods = await withToken(token, 'GET', '/api/v1/pods');
    t.is(pods.status, 403);
    t.is(
      pods.json.message,
      'pods is forbidden: User "system:bootstrap:tok001" cannot list resource "pods" in API group "" at the cluster scope',
    );
    t.is((await withToken(token, 'DELETE', `${path}/by-token`)).status, 403);

    // Approved (nodeclient rule) and signed by the cluster CA, for a year at most.
    const issued = await until('the certificate', async () => {
      const r = await c.api('GET', `${path}/by-token`);
      return r.json.status?.certificate ? r.json : undefined;
    });
    const approved = issued.status.conditions.find((x: { type: string }) => x.type === 'Approved');
    t.is(approved.reason, 'AutoApproved');
    const cert = new X509Certificate(Buffer.from(issued.status.certificate, 'base64'));
    t.regex(cert.subject, /CN=system:node:n1/);
    t.true(cert.verify(new X509Certificate(c.cp.caCert).publicKey));
    t.true(Date.parse(cert.validTo) <= Date.now() + 366 * 24 * 3600 * 1000);
  },
);

test.serial('unknown, wrong, expired and not-for-authentication tokens are 401', async (t) => {
  await makeToken('tok002', 'aaaaaaaaaaaaaaaa', { expiration: new Date(Date.now() - 60_000).toISOString() });
  const noAuth = await makeToken('tok003', 'bbbbbbbbbbbbbbbb', { 'usage-bootstrap-authentication': 'false' });
  for (const token of [
    'zzzzzz.0123456789abcdef',
    'tok001.ffffffffffffffff',
    'tok002.aaaaaaaaaaaaaaaa',
    noAuth,
    'not-a-token',
  ]) {
    const r = await withToken(token, 'GET', path);
    t.is(r.status, 401, token);
    t.is(r.json.reason, 'Unauthorized');
  }
});

kubectlTest(
  'not auto-approved: a CSR the admin makes, and one breaking the kubelet signer rules',
  async (t) => {
    // A user who may create CSRs (system:node-bootstrapper) but not have kubelet client certificates
    // approved (certificatesigningrequests/nodeclient): the request waits for a decision.
    c.cp.registry.create(c.cp.registry.byStorage('clusterrolebindings'), '', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'csr-maker' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'system:node-bootstrapper',
      },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'csr-maker' }],
    });
    const maker = await c.cp.userCredentials('csr-maker');
    const manual = csrObject('manual', await csrPem('CN=system:node:n2, O=system:nodes'));
    t.is((await send(maker, 'POST', path, manual)).status, 201);
    const token = await makeToken('tok004', 'cccccccccccccccc');
    const withSan = csrObject(
      'with-san',
      await csrPem('CN=system:node:n3, O=system:nodes', ['evil.example']),
    );
    t.is((await withToken(token, 'POST', path, withSan)).status, 201);
    const wrongOrg = csrObject('wrong-org', await csrPem('CN=system:node:n4, O=system:masters'));
    t.is((await withToken(token, 'POST', path, wrongOrg)).status, 201);

    const list = await c.kubectl(['get', 'csr', 'manual', 'with-san', 'wrong-org', '--no-headers']);
    t.is(list.code, 0, list.stderr);
    for (const line of list.stdout.trim().split('\n')) t.regex(line, /Pending$/, line);

    // kubectl certificate approve: the approval subresource; then the signer issues it.
    const approve = await c.kubectl(['certificate', 'approve', 'manual']);
    t.is(approve.code, 0, approve.stderr);
    await until('manual to be issued', async () => {
      const r = await c.kubectl(['get', 'csr', 'manual', '--no-headers']);
      return /Approved,Issued$/.test(r.stdout.trim()) ? true : undefined;
    });
    // Approved by hand but breaking the signer's rules: Failed, never signed.
    t.is((await c.kubectl(['certificate', 'approve', 'with-san'])).code, 0);
    const failed = await until('with-san to fail', async () => {
      const r = await c.api('GET', `${path}/with-san`);
      return r.json.status?.conditions?.find((x: { type: string }) => x.type === 'Failed');
    });
    t.regex(failed.message, /subject alternative names/);
    t.falsy((await c.api('GET', `${path}/with-san`)).json.status.certificate);
    // kubectl describe reads the request itself (subject, SANs) and the conditions from the object.
    const described = await c.kubectl(['describe', 'csr', 'with-san']);
    t.is(described.code, 0, described.stderr);
    for (const line of [
      /^Name:\s+with-san$/m,
      /^Requesting User:\s+system:bootstrap:tok004$/m,
      /^Signer:\s+kubernetes.io\/kube-apiserver-client-kubelet$/m,
      /^Status:\s+Approved,Failed$/m,
      /^\s+Common Name:\s+system:node:n3$/m,
      /^\s+Organization:\s+system:nodes$/m,
      /^\s+DNS Names:\s+evil.example$/m,
    ]) {
      t.regex(described.stdout, line);
    }
    // A decision stays: denying an approved request is refused.
    const deny = await c.kubectl(['certificate', 'deny', 'manual']);
    t.not(deny.code, 0);
  },
);

kubectlTest("a node may renew its own client certificate, not ask for another node's", async (t) => {
  const kubeconfig = await c.cp.nodeKubeconfig('n5');
  const other = csrObject('n5-for-n6', await csrPem('CN=system:node:n6, O=system:nodes'));
  const created = await withKubeconfig(kubeconfig, 'POST', path, other);
  t.is(created.status, 201, created.text);
  t.is(created.json.spec.username, 'system:node:n5');
  const own = csrObject('n5-renewal', await csrPem('CN=system:node:n5, O=system:nodes'));
  t.is((await withKubeconfig(kubeconfig, 'POST', path, own)).status, 201);

  // The controller takes requests one at a time, in order: once the renewal (selfnodeclient) is
  // approved, the earlier request for n6 has been decided too, and it was left for an administrator.
  const approved = await until('the renewal to be approved', async () => {
    const r = await c.api('GET', `${path}/n5-renewal`);
    return r.json.status?.conditions?.find((x: { type: string }) => x.type === 'Approved');
  });
  t.is(approved.reason, 'AutoApproved');
  t.regex(approved.message, /self kubelet client certificate/);
  const list = await c.kubectl(['get', 'csr', 'n5-for-n6', '--no-headers']);
  t.regex(list.stdout.trim(), /system:node:n5\s+.*Pending$/);
});

test.serial('bad CSRs are 422 naming the field', async (t) => {
  const bad = csrObject('bad', 'not pem');
  const r = await c.api('POST', path, { ...bad, spec: { ...bad.spec, signerName: '', usages: ['flying'] } });
  t.is(r.status, 422);
  const fields = r.json.details.causes.map((x: { field: string }) => x.field);
  t.deepEqual(fields.sort(), ['spec.request', 'spec.signerName', 'spec.usages[0]']);
});

import test from 'ava';
import { webcrypto, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { apiRequest, type ApiResponse, startCluster, type TestCluster, waitFor } from './test-helpers.js';

/** kubelet-serving CSRs: approved and signed for the node that asks for itself, left pending otherwise. */
x509.cryptoProvider.set(webcrypto as any);
const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const path = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
const serving = 'kubernetes.io/kubelet-serving';

let c: TestCluster;
test.before(async () => {
  c = await startCluster();
});
test.after.always(() => c?.destroy());

async function csrPem(subject: string, names: x509.JsonGeneralName[]): Promise<string> {
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as any;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: subject,
    keys,
    signingAlgorithm: algorithm,
    extensions: names.length ? [new x509.SubjectAlternativeNameExtension(names)] : [],
  });
  return csr.toString('pem');
}

const csrObject = (
  name: string,
  pem: string,
  usages = ['digital signature', 'key encipherment', 'server auth'],
) => ({
  apiVersion: 'certificates.k8s.io/v1',
  kind: 'CertificateSigningRequest',
  metadata: { name },
  spec: { request: Buffer.from(pem).toString('base64'), signerName: serving, usages },
});

async function asNode(node: string, method: string, url: string, body?: unknown): Promise<ApiResponse> {
  const text = readFileSync(await c.cp.nodeKubeconfig(node), 'utf8');
  const data = (field: string) =>
    Buffer.from(new RegExp(`${field}: (\\S+)`).exec(text)![1]!, 'base64').toString('utf8');
  return apiRequest(
    c.cp,
    { cert: data('client-certificate-data'), key: data('client-key-data') },
    method,
    url,
    body,
  );
}

const names = (dns: string, ip: string): x509.JsonGeneralName[] => [
  { type: 'dns', value: dns },
  { type: 'ip', value: ip },
];

test.serial(
  'a node gets a serving certificate for itself: server auth, its DNS and IP names, from the CA',
  async (t) => {
    const pem = await csrPem('CN=system:node:s1, O=system:nodes', names('s1.example', '192.0.2.10'));
    const created = await asNode('s1', 'POST', path, csrObject('s1-serving', pem));
    t.is(created.status, 201, created.text);
    const issued = await waitFor(async () => {
      const r = await c.api('GET', `${path}/s1-serving`);
      return r.json.status?.certificate as string | undefined;
    }, 'the serving certificate');
    const cert = new X509Certificate(Buffer.from(issued, 'base64').toString());
    t.is(cert.subject, 'CN=system:node:s1\nO=system:nodes');
    t.is(cert.subjectAltName, 'DNS:s1.example, IP Address:192.0.2.10');
    t.true(cert.verify(new X509Certificate(c.cp.caCert).publicKey));
    t.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']); // serverAuth only
    const r = await c.api('GET', `${path}/s1-serving`);
    t.regex(r.json.status.conditions[0].message, /serving certificate of its own node/);
  },
);

test.serial('other nodes, email names, client usages and the admin stay pending or fail', async (t) => {
  const forOther = await csrPem('CN=system:node:s3, O=system:nodes', names('s3', '192.0.2.3'));
  t.is((await asNode('s2', 'POST', path, csrObject('s2-for-s3', forOther))).status, 201);
  const email = await csrPem('CN=system:node:s2, O=system:nodes', [{ type: 'email', value: 'a@b.c' }]);
  t.is((await asNode('s2', 'POST', path, csrObject('s2-email', email))).status, 201);
  const client = await csrPem('CN=system:node:s2, O=system:nodes', names('s2', '192.0.2.2'));
  t.is((await asNode('s2', 'POST', path, csrObject('s2-client', client, ['client auth']))).status, 201);
  const byAdmin = await csrPem('CN=system:node:s2, O=system:nodes', names('s2', '192.0.2.2'));
  t.is((await c.api('POST', path, csrObject('admin-for-s2', byAdmin))).status, 201);
  // A last, good one: once it is signed the controller has decided the earlier ones (it goes in order).
  const own = await csrPem('CN=system:node:s2, O=system:nodes', names('s2', '192.0.2.2'));
  t.is((await asNode('s2', 'POST', path, csrObject('s2-own', own))).status, 201);
  await waitFor(async () => (await c.api('GET', `${path}/s2-own`)).json.status?.certificate, 's2-own signed');
  for (const name of ['s2-for-s3', 's2-email', 's2-client', 'admin-for-s2']) {
    const r = await c.api('GET', `${path}/${name}`);
    t.falsy(r.json.status?.certificate, name);
    t.falsy(
      r.json.status?.conditions?.some((x: { type: string }) => x.type === 'Approved'),
      name,
    );
  }
});

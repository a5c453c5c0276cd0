import 'reflect-metadata';
import test from 'ava';
import { webcrypto, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import { createLogger, MemorySink, RealClock, VirtualClock } from '@nodelet/kernel';
import { bootstrapClientCredentials, KubeletClientSigner } from './bootstrap.js';
import { loadKubeConfig } from '@nodelet/client/client-node';
import { FakeKubeApi } from '@nodelet/client/testing';

x509.cryptoProvider.set(webcrypto as any);
const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

async function makeCa() {
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as any;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=test-ca',
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    keys,
    signingAlgorithm: alg,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
  });
  return { keys, cert };
}

/** Acts as the CSR approver and signer: approves and issues every pending CSR of the fake API. */
async function approveAll(api: FakeKubeApi, ca: Awaited<ReturnType<typeof makeCa>>, deny = false) {
  for (const csr of api.csrs.values()) {
    if (csr.status?.certificate || csr.status?.conditions?.length) continue;
    if (deny) {
      csr.status = {
        conditions: [{ type: 'Denied', status: 'True', reason: 'NotAllowed', message: 'no' }] as any,
      };
      continue;
    }
    const request = new x509.Pkcs10CertificateRequest(Buffer.from(csr.spec.request, 'base64').toString());
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: '02',
      subject: request.subject,
      issuer: ca.cert.subject,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 3_600_000),
      signingAlgorithm: alg,
      publicKey: await request.publicKey.export(webcrypto as any),
      signingKey: ca.keys.privateKey,
    });
    csr.status = {
      conditions: [{ type: 'Approved', status: 'True', reason: 'AutoApproved', message: 'ok' }] as any,
      certificate: Buffer.from(cert.toString('pem')).toString('base64'),
    };
  }
}

function bootstrapKubeconfig(dir: string, caPem: string): string {
  const path = join(dir, 'bootstrap-kubeconfig');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: ${Buffer.from(caPem).toString('base64')}}}]`,
      'users: [{name: bootstrap, user: {token: abcdef.0123456789abcdef}}]',
      'contexts: [{name: b, context: {cluster: c, user: bootstrap}}]',
      'current-context: b',
    ].join('\n'),
  );
  return path;
}

test('TLS bootstrap: a CSR for system:node:<node>, approved and issued, becomes the node kubeconfig', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-bootstrap-'));
  const ca = await makeCa();
  const api = new FakeKubeApi();
  const clock = new RealClock();
  const logs = new MemorySink();
  const kubeconfig = join(dir, 'kubelet.kubeconfig');
  const done = bootstrapClientCredentials({
    nodeName: 'node1',
    kubeconfig,
    bootstrapKubeconfig: bootstrapKubeconfig(dir, ca.cert.toString('pem')),
    certDir: join(dir, 'pki'),
    clock,
    logger: createLogger({ sink: logs.sink }),
    makeApi: () => api,
    pollIntervalMs: 20,
  });
  for (let i = 0; i < 100 && api.csrs.size === 0; i++) await new Promise((r) => setTimeout(r, 10));
  const csr = [...api.csrs.values()][0]!;
  t.is(csr.spec.signerName, KubeletClientSigner);
  t.deepEqual(csr.spec.usages, ['digital signature', 'client auth']);
  const request = new x509.Pkcs10CertificateRequest(Buffer.from(csr.spec.request, 'base64').toString());
  t.is(request.subject, 'CN=system:node:node1, O=system:nodes');
  await approveAll(api, ca);
  t.is(await done, kubeconfig);

  const kc = loadKubeConfig(kubeconfig);
  t.is(kc.getCurrentCluster()!.server, 'https://127.0.0.1:6443');
  const user = kc.getCurrentUser()!;
  t.is(user.name, 'system:node:node1');
  const pem = readFileSync(user.certFile!, 'utf8');
  t.is(new X509Certificate(pem).subject, 'CN=system:node:node1\nO=system:nodes');
  t.regex(pem, /BEGIN PRIVATE KEY/);
  t.is(statSync(user.certFile!).mode & 0o777, 0o600);

  // The next start uses the kubeconfig as it is: no new CSR.
  const again = await bootstrapClientCredentials({
    nodeName: 'node1',
    kubeconfig,
    bootstrapKubeconfig: join(dir, 'bootstrap-kubeconfig'),
    certDir: join(dir, 'pki'),
    clock,
    logger: createLogger({ sink: logs.sink }),
    makeApi: () => api,
  });
  t.is(again, kubeconfig);
  t.is(api.csrs.size, 1);
});

test('TLS bootstrap: a denied CSR and one never approved fail with messages naming the CSR', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-bootstrap-'));
  const ca = await makeCa();
  const api = new FakeKubeApi();
  const base = {
    nodeName: 'node1',
    kubeconfig: join(dir, 'kubelet.kubeconfig'),
    bootstrapKubeconfig: bootstrapKubeconfig(dir, ca.cert.toString('pem')),
    certDir: join(dir, 'pki'),
    logger: createLogger({ sink: new MemorySink().sink }),
    makeApi: () => api,
  };
  const denied = bootstrapClientCredentials({ ...base, clock: new RealClock(), pollIntervalMs: 20 });
  for (let i = 0; i < 100 && api.csrs.size === 0; i++) await new Promise((r) => setTimeout(r, 10));
  await approveAll(api, ca, true);
  await t.throwsAsync(denied, {
    message: /^certificate signing request node-csr-\w+ was denied: NotAllowed no$/,
  });

  const clock = new VirtualClock();
  const waiting = bootstrapClientCredentials({ ...base, clock, waitTimeoutMs: 60_000 });
  const settled = waiting.then(
    () => 'resolved',
    (err: Error) => err.message,
  );
  for (let i = 0; i < 200 && clock.pendingTimers() === 0; i++) await new Promise((r) => setTimeout(r, 10));
  await clock.advance(61_000);
  t.regex(
    await settled,
    /^certificate signing request node-csr-\w+ was not approved and issued within 60 s$/,
  );
});

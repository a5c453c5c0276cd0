import { webcrypto, X509Certificate } from 'node:crypto';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import test from 'ava';
import type { CertificateSigningRequest } from '@nodelet/client';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { rotationDeadline, ServingCertManager, type CsrApi } from './serving-cert-manager.js';

x509.cryptoProvider.set(webcrypto as any);
const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const day = 24 * 3600 * 1000;

/** A fake certificates API that issues each request on its second read, valid for ten days from then. */
async function fakeSigner(clock: VirtualClock) {
  const caKeys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as any;
  const created: CertificateSigningRequest[] = [];
  const reads = new Map<string, number>();
  const api: CsrApi = {
    createCertificateSigningRequest: async (csr) => {
      created.push(csr);
      return csr;
    },
    getCertificateSigningRequest: async (name) => {
      const csr = created.find((c) => c.metadata?.name === name)!;
      const n = (reads.get(name) ?? 0) + 1;
      reads.set(name, n);
      if (n < 2) return csr;
      const request = new x509.Pkcs10CertificateRequest(Buffer.from(csr.spec.request, 'base64').toString());
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: '01',
        subject: request.subjectName,
        issuer: 'CN=test-ca',
        notBefore: new Date(clock.now()),
        notAfter: new Date(clock.now() + 10 * day),
        publicKey: request.publicKey,
        signingKey: caKeys.privateKey,
        signingAlgorithm: algorithm,
        extensions: request.extensions,
      });
      return { ...csr, status: { certificate: Buffer.from(cert.toString('pem')).toString('base64') } };
    },
  };
  return { api, created };
}

test('rotation falls at 70–90 % of the lifetime', (t) => {
  t.is(
    rotationDeadline(0, 1000, () => 0),
    700,
  );
  t.is(
    rotationDeadline(0, 1000, () => 0.5),
    800,
  );
  t.true(rotationDeadline(0, 1000, () => 0.999) <= 900);
});

test('requests a kubelet-serving certificate, hands it over, and rotates it on the clock', async (t) => {
  const clock = new VirtualClock();
  const { api, created } = await fakeSigner(clock);
  const issued: { certPem: string; keyPem: string }[] = [];
  const manager = new ServingCertManager({
    nodeName: 'node-a',
    hostname: 'node-a.example',
    ips: ['192.0.2.7'],
    api,
    clock,
    logger: createLogger({ sink: new MemorySink().sink }),
    onCertificate: (certPem, keyPem) => issued.push({ certPem, keyPem }),
    random: () => 0.5, // rotate at 80 %: day 8
  });
  t.teardown(() => manager.stop());
  manager.start();
  await clock.advanceUntil(() => issued.length === 1, { stepMs: 500, maxMs: 10_000 });
  const spec = created[0]!.spec;
  t.is(spec.signerName, 'kubernetes.io/kubelet-serving');
  t.deepEqual(spec.usages, ['digital signature', 'key encipherment', 'server auth']);
  const cert = new X509Certificate(issued[0]!.certPem);
  t.is(cert.subject, 'CN=system:node:node-a\nO=system:nodes');
  t.is(cert.subjectAltName, 'DNS:node-a.example, IP Address:192.0.2.7');
  t.regex(issued[0]!.keyPem, /BEGIN PRIVATE KEY/);

  await clock.advance(7.9 * day);
  t.is(issued.length, 1, 'not rotated before 80 % of its lifetime');
  await clock.advanceUntil(() => issued.length === 2, { stepMs: 500, maxMs: 0.2 * day });
  t.is(created.length, 2);
  t.not(issued[1]!.keyPem, issued[0]!.keyPem, 'a new key with each rotation');
});

test('a refused request is retried later, not given up', async (t) => {
  const clock = new VirtualClock();
  const { api, created } = await fakeSigner(clock);
  let refuse = true;
  const get = api.getCertificateSigningRequest;
  api.getCertificateSigningRequest = async (name) => {
    const csr = await get(name);
    return refuse
      ? { ...csr, status: { conditions: [{ type: 'Denied', status: 'True', message: 'no' }] } }
      : csr;
  };
  const issued: string[] = [];
  const manager = new ServingCertManager({
    nodeName: 'n',
    hostname: 'n',
    ips: [],
    api,
    clock,
    logger: createLogger({ sink: new MemorySink().sink }),
    onCertificate: (certPem) => issued.push(certPem),
    retryMs: 60_000,
  });
  t.teardown(() => manager.stop());
  manager.start();
  await clock.advanceUntil(() => created.length === 1, { stepMs: 500, maxMs: 10_000 });
  await clock.advance(30_000);
  t.is(issued.length, 0);
  refuse = false;
  await clock.advanceUntil(() => issued.length === 1, { stepMs: 1_000, maxMs: 120_000 });
  t.is(created.length, 2, 'a fresh request after the refused one');
});

import { webcrypto } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { KubeletClient, kubeletEndpoint } from './apiserver/kubelet-client.js';
import { ensurePki, issue, type KeyPair } from './pki.js';

x509.cryptoProvider.set(webcrypto as any);

/** Serves `pair` on a free port and returns what a KubeletClient of `pki` makes of it. */
async function dial(client: KubeletClient, pair: KeyPair): Promise<string> {
  const server = createServer({ key: pair.key, cert: pair.cert }, (_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await client.request(
      { host: '127.0.0.1', port: (server.address() as AddressInfo).port },
      '/',
    );
    let text = '';
    for await (const chunk of res) text += String(chunk);
    return text;
  } catch (err) {
    return (err as Error).message;
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

async function selfSigned(): Promise<KeyPair> {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as any;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=node-1@1700000000',
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    keys,
    signingAlgorithm: algorithm,
  });
  const der = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { cert: cert.toString('pem'), key: x509.PemConverter.encode(der, 'PRIVATE KEY') };
}

test('a kubelet certificate is verified against the cluster CA when it names it; self-signed ones pass', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-kc-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const pki = await ensurePki(join(dir, 'a'), '10.96.0.1');
  const other = await ensurePki(join(dir, 'b'), '10.96.0.1'); // another CA of the same name
  const client = new KubeletClient({ ...pki.kubeletClient, ca: pki.ca.cert });
  const serving = (ca: KeyPair) => issue(ca, { subject: 'CN=node-1', usage: 'server', ips: ['127.0.0.1'] });
  t.is(await dial(client, await serving(pki.ca)), 'ok');
  t.is(await dial(client, await selfSigned()), 'ok');
  t.regex(await dial(client, await serving(other.ca)), /names the cluster CA as issuer but does not verify/);
});

test('the node address follows the preferred types; no address or port is 503 naming the node', (t) => {
  const node = (addresses: object[], port?: number) => ({
    metadata: { name: 'n1' },
    status: { addresses, ...(port ? { daemonEndpoints: { kubeletEndpoint: { Port: port } } } : {}) },
  });
  const all = [
    { type: 'ExternalIP', address: '203.0.113.1' },
    { type: 'InternalIP', address: '10.0.0.1' },
    { type: 'Hostname', address: 'n1.local' },
  ];
  // kubeadm's order: InternalIP, ExternalIP, Hostname.
  t.deepEqual(kubeletEndpoint(node(all, 10250) as any), { host: '10.0.0.1', port: 10250 });
  t.deepEqual(kubeletEndpoint(node([all[0], all[2]], 10250) as any), { host: '203.0.113.1', port: 10250 });
  t.deepEqual(kubeletEndpoint(node([all[2]], 10250) as any), { host: 'n1.local', port: 10250 });
  t.throws(() => kubeletEndpoint(node([], 10250) as any), {
    message: /no preferred addresses found for node n1/,
  });
  t.throws(() => kubeletEndpoint(node(all) as any), { message: /node n1 reports no kubelet endpoint port/ });
});

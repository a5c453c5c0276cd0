import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import test from 'ava';
import { advertiseAddress } from './cluster-bootstrap.js';
import { startCluster } from './test-helpers.js';

// Pods reach the API server at the address the `kubernetes` EndpointSlice names (upstream's advertise
// address): the bind address, which the serving certificate must cover.

test('the advertise address is the bind address; 0.0.0.0 is a host address that is not loopback', (t) => {
  t.is(advertiseAddress('10.88.0.1'), '10.88.0.1');
  t.is(advertiseAddress('127.0.0.1'), '127.0.0.1');
  const any = advertiseAddress('0.0.0.0');
  t.not(any, '0.0.0.0');
  t.regex(any, /^\d+\.\d+\.\d+\.\d+$/);
});

test('bound to one address, the kubernetes EndpointSlice names it and the serving certificate covers it', async (t) => {
  const c = await startCluster({ bindAddress: '127.0.0.2' });
  t.teardown(() => c.destroy());
  const slice = (await c.api('GET', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes'))
    .json;
  t.deepEqual(slice.endpoints[0].addresses, ['127.0.0.2']);
  t.is(slice.ports[0].port, Number(new URL(c.cp.url).port));
  const cert = new X509Certificate(await readFile(`${c.dataDir}/pki/apiserver.crt`, 'utf8'));
  t.true(cert.subjectAltName!.includes('IP Address:127.0.0.2'), cert.subjectAltName);
  await c.stop();

  // Restarted on the default address: the slice and certificate follow.
  const again = await startCluster({ dataDir: c.dataDir });
  t.teardown(() => again.stop());
  const moved = (
    await again.api('GET', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes')
  ).json;
  t.deepEqual(moved.endpoints[0].addresses, ['127.0.0.1']);
});

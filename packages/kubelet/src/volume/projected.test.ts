import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { Volume } from '@nodelet/api';
import { VolumeManager } from './manager.js';
import { HostMounter } from './mounter.js';
import { fsUserOf } from './projected.js';
import { podWith, volumeEnv } from './test-volumes.js';

/** The volume a real API server's ServiceAccount admission adds to every pod. */
const kubeApiAccess: Volume = {
  name: 'kube-api-access-x7k2p',
  projected: {
    defaultMode: 0o644,
    sources: [
      { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      {
        downwardAPI: {
          items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
        },
      },
    ],
  },
};

test('the kube-api-access volume: token, ca.crt and namespace in one directory; the token asked for the pod', async (t) => {
  const { volumes, objects, calls } = volumeEnv(t, { tmpfs: true });
  objects.setConfigMap('default', 'kube-root-ca.crt', { 'ca.crt': '-----BEGIN CERTIFICATE-----\n' });
  const dir = (await volumes.setUp(podWith([kubeApiAccess]))).get('kube-api-access-x7k2p')!;
  t.true(dir.endsWith('/volumes/kubernetes.io~projected/kube-api-access-x7k2p'));
  t.deepEqual(
    readdirSync(dir)
      .filter((n) => !n.startsWith('..'))
      .sort(),
    ['ca.crt', 'namespace', 'token'],
  );
  t.is(readFileSync(join(dir, 'token'), 'utf8'), 'token-1');
  t.is(readFileSync(join(dir, 'namespace'), 'utf8'), 'default');
  t.is(statSync(join(dir, 'token')).mode & 0o777, 0o644);
  t.deepEqual(objects.tokenRequests, [
    {
      pod: 'p',
      spec: {
        audiences: [],
        expirationSeconds: 3607,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'uid-1' },
      },
    },
  ]);
  t.deepEqual(calls, [`mount -t tmpfs tmpfs ${dir}`], 'in memory, as secrets');

  // A renewed token reaches the file on the next sync.
  objects.token = 'token-2';
  await volumes.setUp(podWith([kubeApiAccess]));
  t.is(readFileSync(join(dir, 'token'), 'utf8'), 'token-2');
});

test('serviceAccountToken: the audience asked for; expirationSeconds defaults to 3600; 0600 with an fsGroup', async (t) => {
  const { volumes, objects } = volumeEnv(t);
  const p = podWith(
    [
      {
        name: 'vault',
        projected: { sources: [{ serviceAccountToken: { audience: 'vault', path: 'vault/token' } }] },
      },
    ],
    { securityContext: { fsGroup: 3000 } },
  );
  const dir = (await volumes.setUp(p)).get('vault')!;
  t.like(objects.tokenRequests[0]?.spec, { audiences: ['vault'], expirationSeconds: 3600 });
  t.is(statSync(join(dir, 'vault/token')).mode & 0o777, 0o640, '0600, and the group may read it');
});

test('a pod whose containers all run as one user: the token is theirs, 0600', async (t) => {
  const { volumes } = volumeEnv(t);
  const p = podWith([{ name: 'v', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }], {
    securityContext: { runAsUser: 1234 },
    containers: [
      { name: 'a', image: 'busybox' },
      { name: 'b', image: 'busybox', securityContext: { runAsUser: 1234 } },
    ],
  });
  const dir = (await volumes.setUp(p)).get('v')!;
  const info = statSync(join(dir, 'token'));
  t.is(info.mode & 0o777, 0o600);
  if (process.getuid?.() === 0) t.is(info.uid, 1234);
});

test('fsUserOf: upstream FsUserFrom — one effective runAsUser for every container, else none', (t) => {
  const spec = (podUser: number | undefined, ...users: (number | undefined)[]) =>
    podWith([], {
      ...(podUser !== undefined ? { securityContext: { runAsUser: podUser } } : {}),
      containers: users.map((u, i) => ({
        name: `c${i}`,
        image: 'x',
        ...(u !== undefined ? { securityContext: { runAsUser: u } } : {}),
      })),
    });
  t.is(fsUserOf(spec(1000, undefined, undefined)), 1000);
  t.is(fsUserOf(spec(undefined, 5, 5)), 5);
  t.is(fsUserOf(spec(undefined, 5, 6)), undefined);
  t.is(fsUserOf(spec(undefined, 5, undefined)), undefined);
  t.is(fsUserOf(spec(1000, 0)), 0);
});

test('projected sources nodelet does not make are refused by name; every source’s error is reported together', async (t) => {
  const { volumes } = volumeEnv(t);
  const p = podWith([
    {
      name: 'v',
      projected: {
        sources: [
          { clusterTrustBundle: { signerName: 'example.com/signer', path: 'ca.pem' } },
          {
            podCertificate: {
              signerName: 'example.com/signer',
              keyType: 'ED25519',
              credentialBundlePath: 'creds.pem',
            },
          },
          { secret: { name: 'missing' } },
          { configMap: { name: 'missing-but-optional', optional: true } },
        ],
      },
    },
  ]);
  const err = await t.throwsAsync(volumes.setUp(p));
  t.is(
    err?.message,
    'volume "v": [projected.sources[0]: clusterTrustBundle is not supported by nodelet (supported: configMap, secret, ' +
      'downwardAPI, serviceAccountToken), projected.sources[1]: podCertificate is not supported by nodelet (supported: ' +
      'configMap, secret, downwardAPI, serviceAccountToken), secret "missing" not found]',
  );
});

test('a standalone kubelet (no API server) says so for a token', async (t) => {
  const { root } = volumeEnv(t);
  const standalone = new VolumeManager(root, { mounter: new HostMounter({ tmpfs: false }) });
  await t.throwsAsync(standalone.setUp(podWith([kubeApiAccess])), {
    message:
      /couldn't get token of serviceAccount default\/default, no kubeClient defined: the kubelet runs standalone/,
  });
});

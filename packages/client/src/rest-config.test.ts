import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealClock } from '@nodelet/kernel';
import { connectListWatch } from './connect.js';
import { ClientNodeApi } from './client-node-api.js';
import { HttpsListWatchApi } from './https-list-watch.js';
import { readRestConfig } from './rest-config.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function kubeconfig(dir: string, name: string, cluster: object, user: object): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'other', cluster: { server: 'https://10.0.0.9:6443' } },
        { name: 'c', cluster },
      ],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return path;
}

test('the current context: server, CA, client certificate and key as data or files relative to the kubeconfig', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-rc-'));
  writeFileSync(join(dir, 'ca.crt'), 'CA PEM');
  writeFileSync(join(dir, 'token'), 'file-token\n');
  const data = kubeconfig(
    dir,
    'data',
    {
      server: 'https://127.0.0.1:6443',
      'certificate-authority-data': b64('CA PEM'),
      'tls-server-name': 'api',
    },
    { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
  );
  t.deepEqual(readRestConfig(data), {
    config: {
      server: 'https://127.0.0.1:6443',
      ca: 'CA PEM',
      tlsServerName: 'api',
      cert: 'CERT',
      key: 'KEY',
    },
  });
  const files = kubeconfig(
    dir,
    'files',
    { server: 'https://127.0.0.1:6443', 'certificate-authority': 'ca.crt', 'insecure-skip-tls-verify': true },
    { tokenFile: 'token' },
  );
  t.deepEqual(readRestConfig({ kubeconfig: files, master: 'https://10.1.1.1:6443' }), {
    config: {
      server: 'https://10.1.1.1:6443',
      ca: 'CA PEM',
      insecureSkipTLSVerify: true,
      tokenFile: join(dir, 'token'),
    },
  });
  t.deepEqual(readRestConfig({ master: 'http://127.0.0.1:8080' }), {
    config: { server: 'http://127.0.0.1:8080' },
  });
});

test('errors name the file, the field and what to fix, as the client-node loader does', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-rc-'));
  t.throws(() => readRestConfig(join(dir, 'nope')), {
    message: `kubeconfig ${join(dir, 'nope')}: no such file`,
  });
  writeFileSync(join(dir, 'bad'), 'clusters: [not: closed\n');
  t.throws(() => readRestConfig(join(dir, 'bad')), {
    message: new RegExp(`^kubeconfig ${join(dir, 'bad')} could not be loaded: `),
  });
  writeFileSync(join(dir, 'empty'), 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
  t.throws(() => readRestConfig(join(dir, 'empty')), {
    message: `kubeconfig ${join(dir, 'empty')} has no current cluster: set current-context to a context whose cluster exists`,
  });
  const noServer = kubeconfig(dir, 'no-server', {}, {});
  t.throws(() => readRestConfig(noServer), { message: `kubeconfig ${noServer}: cluster "c" has no server` });
  const notUrl = kubeconfig(dir, 'not-url', { server: '10.0.0.1:6443' }, {});
  t.throws(() => readRestConfig(notUrl), {
    message: `kubeconfig ${notUrl}: cluster server "10.0.0.1:6443" is not a URL`,
  });
  const missingCa = kubeconfig(
    dir,
    'missing-ca',
    { server: 'https://x', 'certificate-authority': 'gone.crt' },
    {},
  );
  t.throws(() => readRestConfig(missingCa), {
    message: new RegExp(
      `^kubeconfig ${missingCa}: clusters\\[1\\]\\.cluster\\.certificate-authority ${join(dir, 'gone.crt')} cannot be read`,
    ),
  });
  t.throws(() => readRestConfig({ master: 'localhost:6443' }), {
    message: '--master "localhost:6443" is not a URL; write it like https://10.0.0.1:6443',
  });
});

test('an exec credential plugin, an auth provider or a proxy URL needs client-node: connectListWatch uses it then', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-rc-'));
  const exec = kubeconfig(
    dir,
    'exec',
    { server: 'https://127.0.0.1:6443' },
    { exec: { command: 'get-token' } },
  );
  t.deepEqual(readRestConfig(exec), { needsClientNode: 'users[0].user.exec' });
  const proxied = kubeconfig(
    dir,
    'proxy',
    { server: 'https://127.0.0.1:6443', 'proxy-url': 'http://p:3128' },
    {},
  );
  t.deepEqual(readRestConfig(proxied), { needsClientNode: 'clusters[1].cluster.proxy-url' });
  const clock = new RealClock();
  const viaClientNode = await connectListWatch(exec, { clock });
  t.true(viaClientNode instanceof ClientNodeApi);
  viaClientNode.close();
  const direct = await connectListWatch({ master: 'https://127.0.0.1:6443' }, { clock });
  t.true(direct instanceof HttpsListWatchApi);
  t.is(direct.server, 'https://127.0.0.1:6443');
  direct.close();
});

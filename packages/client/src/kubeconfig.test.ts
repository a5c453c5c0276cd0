import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadKubeConfig } from './kubeconfig.js';

test('kubeconfig: missing, not YAML, no current context — each a message naming the file', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-kc-'));
  t.throws(() => loadKubeConfig(join(dir, 'nope')), {
    message: `kubeconfig ${join(dir, 'nope')}: no such file`,
  });
  writeFileSync(join(dir, 'bad'), 'clusters: [not: closed\n');
  t.throws(() => loadKubeConfig(join(dir, 'bad')), {
    message: new RegExp(`^kubeconfig ${join(dir, 'bad')} could not be loaded: `),
  });
  writeFileSync(join(dir, 'empty'), 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
  t.throws(() => loadKubeConfig(join(dir, 'empty')), {
    message: `kubeconfig ${join(dir, 'empty')} has no current cluster: set current-context to a context whose cluster exists`,
  });
});

test('kubeconfig and master errors name the file or flag and what to fix', (t) => {
  t.throws(() => loadKubeConfig({ kubeconfig: '/nonexistent/kubeconfig' }), {
    message: 'kubeconfig /nonexistent/kubeconfig: no such file',
  });
  t.throws(() => loadKubeConfig({ master: 'localhost:6443' }), {
    message: '--master "localhost:6443" is not a URL; write it like https://10.0.0.1:6443',
  });
  t.is(
    loadKubeConfig({ master: 'https://127.0.0.1:6443' }).getCurrentCluster()?.server,
    'https://127.0.0.1:6443',
  );
});

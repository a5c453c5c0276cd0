import test from 'ava';
import { chmod, lstat, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { startCluster } from './test-helpers.js';

// Modes are set explicitly, not left to the umask: with none at all, nothing may come out readable.
process.umask(0);

/** Every path under `root` (itself included) whose mode lets group or others read, write or enter. */
async function loosePaths(root: string): Promise<string[]> {
  const loose: string[] = [];
  const walk = async (path: string) => {
    const info = await lstat(path);
    if (info.mode & 0o077) loose.push(`${relative(root, path) || '.'} ${(info.mode & 0o777).toString(8)}`);
    if (info.isDirectory()) for (const entry of await readdir(path)) await walk(join(path, entry));
  };
  await walk(root);
  return loose;
}

test('a data dir made inside a 0755 directory holds nothing group or others may read', async (t) => {
  const parent = await mkdtemp(join(tmpdir(), 'nodelet-perm-'));
  await chmod(parent, 0o755);
  const dataDir = join(parent, 'data');
  const cluster = await startCluster({ dataDir });
  try {
    await cluster.cp.nodeKubeconfig('node-a');
    await cluster.cp.userKubeconfig('alice', ['team']);
    const created = await cluster.api('POST', '/api/v1/namespaces/default/secrets', {
      metadata: { name: 's' },
      stringData: { password: 'x' },
    });
    t.is(created.status, 201, created.text);
    const files = await readdir(dataDir);
    for (const name of ['state.db', 'state.db-wal', 'state.db-shm', 'kubeconfig', 'bootstrap-kubeconfig'])
      t.true(files.includes(name), name);
    t.deepEqual(await loosePaths(dataDir), []);
  } finally {
    await cluster.stop();
    await rm(parent, { recursive: true, force: true });
  }
});

test('what an older version left readable is tightened at start, with one log line naming it', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'nodelet-perm-'));
  // A first start makes everything; then it is loosened as an older version (or a restore) left it.
  const first = await startCluster({ dataDir });
  await first.cp.nodeKubeconfig('node-a');
  await first.cp.userKubeconfig('alice');
  await first.stop();
  await chmod(dataDir, 0o755);
  for (const file of ['state.db', 'kubeconfig', 'pki/ca.crt', 'pki/ca.key', 'pki/sa.pub'])
    await chmod(join(dataDir, file), 0o644);
  for (const dir of ['pki', 'users', 'nodes', 'nodes/node-a']) await chmod(join(dataDir, dir), 0o755);
  await chmod(join(dataDir, 'nodes/node-a/kubeconfig'), 0o644);
  // What nodelet up keeps per node: its kubelet's root and pod logs, and the client CA.
  for (const dir of ['kubelet', 'pods']) await mkdir(join(dataDir, 'nodes/node-a', dir), { mode: 0o755 });
  await writeFile(join(dataDir, 'nodes/node-a/client-ca.crt'), 'ca', { mode: 0o644 });
  // Below the kubelet's root, modes are the kubelet's (pod volumes): left as they are.
  await mkdir(join(dataDir, 'nodes/node-a/kubelet/pods'), { mode: 0o750 });
  await mkdir(join(dataDir, 'pki', 'old'), { mode: 0o755 });
  await writeFile(join(dataDir, 'pki', 'old', 'leftover.key'), 'k', { mode: 0o644 });
  await chmod(join(dataDir, 'pki', 'old', 'leftover.key'), 0o644);

  const second = await startCluster({ dataDir });
  try {
    t.deepEqual(await loosePaths(dataDir), ['nodes/node-a/kubelet/pods 750']);
    const lines = second.logs.find('tightened permissions');
    t.is(lines.length, 1);
    t.deepEqual([...(lines[0]!.fields.paths as string[])].sort(), [
      '.',
      'kubeconfig',
      'nodes',
      'nodes/node-a',
      'nodes/node-a/client-ca.crt',
      'nodes/node-a/kubeconfig',
      'nodes/node-a/kubelet',
      'nodes/node-a/pods',
      'pki',
      'pki/ca.crt',
      'pki/ca.key',
      'pki/old',
      'pki/old/leftover.key',
      'pki/sa.pub',
      'state.db',
      'users',
    ]);
    // Nothing was loose the next time: no line.
    await second.stop();
    const third = await startCluster({ dataDir });
    t.is(third.logs.find('tightened permissions').length, 0);
    await third.stop();
  } finally {
    await second.destroy();
  }
});

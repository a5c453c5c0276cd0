import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { VolumePlugin } from '@nodelet/volume';
import { VolumeManager } from './manager.js';
import { HostMounter } from './mounter.js';
import { emptyDirPath, volumeDir } from './paths.js';
import { MemoryPodObjects, podWith, volumeEnv } from './test-volumes.js';
import { VolumeError } from './volume-error.js';

test('emptyDir medium Memory: a tmpfs (sized by sizeLimit) mounted once however often the pod syncs; unmounted at teardown', async (t) => {
  const { root, mounted, calls, volumes } = volumeEnv(t, { tmpfs: true });
  const p = podWith([
    { name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } },
    { name: 'scratch', emptyDir: { medium: 'Memory' } },
    { name: 'disk', emptyDir: {} },
  ]);
  const paths = await volumes.setUp(p);
  await volumes.setUp(p); // every sync calls setUp
  const cache = emptyDirPath(root, 'uid-1', 'cache');
  const scratch = emptyDirPath(root, 'uid-1', 'scratch');
  t.is(paths.get('cache'), cache);
  t.true(statSync(paths.get('disk')!).isDirectory());
  t.is(statSync(paths.get('disk')!).mode & 0o777, 0o777, 'any container user may write');
  t.deepEqual(
    calls.sort(),
    [`mount -t tmpfs -o size=${64 * 2 ** 20} tmpfs ${cache}`, `mount -t tmpfs tmpfs ${scratch}`].sort(),
  );

  await volumes.tearDown('uid-1');
  t.deepEqual(calls.slice(2).sort(), [`umount ${cache}`, `umount ${scratch}`]);
  t.is(mounted.size, 0);
  t.false(existsSync(join(root, 'pods', 'uid-1')));
});

test('without tmpfs (not root, not Linux, or the fake runtime) medium Memory is a plain directory', async (t) => {
  const { calls, volumes } = volumeEnv(t);
  const paths = await volumes.setUp(podWith([{ name: 'cache', emptyDir: { medium: 'Memory' } }]));
  t.true(statSync(paths.get('cache')!).isDirectory());
  await volumes.tearDown('uid-1');
  t.deepEqual(calls, []);
});

test('a failed umount fails the teardown (retried), leaving the directory in place', async (t) => {
  const { root } = volumeEnv(t);
  const dir = emptyDirPath(root, 'uid-1', 'cache');
  mkdirSync(dir, { recursive: true });
  const volumes = new VolumeManager(root, {
    mounter: new HostMounter({
      tmpfs: true,
      run: async () => {
        throw new VolumeError(`umount ${dir}: target is busy`);
      },
      mountPoints: async () => [dir],
    }),
  });
  await t.throwsAsync(volumes.tearDown('uid-1'), { instanceOf: VolumeError, message: /target is busy/ });
  t.true(existsSync(dir));
});

test('a volume that cannot be set up: FailedMount with upstream’s message naming the volume, and setUp throws; the others are set up', async (t) => {
  const { volumes, events } = volumeEnv(t);
  const p = podWith([
    { name: 'config', configMap: { name: 'special-config' } },
    { name: 'nfs', nfs: { server: 'nfs.example', path: '/exports' } },
    { name: 'scratch', emptyDir: {} },
  ]);
  await t.throwsAsync(volumes.setUp(p), {
    instanceOf: VolumeError,
    message:
      'volume "config": configmap "special-config" not found; volume "nfs": source "nfs" is not supported by nodelet ' +
      '(supported: emptyDir, hostPath, configMap, secret, downwardAPI, projected)',
  });
  t.deepEqual(events, [
    'Warning FailedMount MountVolume.SetUp failed for volume "config" : configmap "special-config" not found',
    'Warning FailedMount MountVolume.SetUp failed for volume "nfs" : source "nfs" is not supported by nodelet (supported: emptyDir, hostPath, configMap, secret, downwardAPI, projected)',
  ]);
});

test('the object appears: the next sync mounts it; it changes: the next sync updates the file; it goes: the content stays, FailedMount says why', async (t) => {
  const { volumes, objects, events, logs } = volumeEnv(t);
  const p = podWith([{ name: 'config', configMap: { name: 'cfg' } }]);
  await t.throwsAsync(volumes.setUp(p));
  objects.setConfigMap('default', 'cfg', { color: 'blue' });
  const dir = (await volumes.setUp(p)).get('config')!;
  t.is(readFileSync(join(dir, 'color'), 'utf8'), 'blue');
  objects.setConfigMap('default', 'cfg', { color: 'green' });
  await volumes.setUp(p);
  t.is(readFileSync(join(dir, 'color'), 'utf8'), 'green');
  t.is(logs.find('Volume content updated').length, 1);
  objects.configMaps.clear();
  t.is((await volumes.setUp(p)).get('config'), dir, 'a running pod keeps its volume');
  t.is(readFileSync(join(dir, 'color'), 'utf8'), 'green');
  t.is(events.length, 2);
  t.is(
    events[1],
    'Warning FailedMount MountVolume.SetUp failed for volume "config" : configmap "cfg" not found',
  );
  t.is(logs.find('Volume refresh failed; keeping its content').length, 1);
});

test('after a kubelet restart, a volume an earlier kubelet set up is kept though its object is gone', async (t) => {
  const { root, volumes, objects } = volumeEnv(t);
  const p = podWith([{ name: 'config', configMap: { name: 'cfg' } }]);
  objects.setConfigMap('default', 'cfg', { a: '1' });
  await volumes.setUp(p);
  const restarted = new VolumeManager(root, { objects: new MemoryPodObjects() }); // the ConfigMap is gone
  const paths = await restarted.setUp(p);
  t.is(readFileSync(join(paths.get('config')!, 'a'), 'utf8'), '1');
});

const recorder = (source: string, name = `example.com/${source}`) => {
  const calls: string[] = [];
  const plugin: VolumePlugin = {
    name,
    source,
    async setUp(ctx) {
      calls.push(`setUp ${ctx.volume.name} refreshing=${ctx.refreshing}`);
      writeFileSync(join(ctx.dir, 'by-plugin'), name);
      return ctx.dir;
    },
    async tearDown(ctx) {
      calls.push(`tearDown ${ctx.volumeName}`);
    },
  };
  return { plugin, calls };
};

test('a third-party plugin provides a new source: set up once (no refresh), torn down through it with the pod', async (t) => {
  const { plugin, calls } = recorder('nfs');
  const { root, volumes } = volumeEnv(t, { plugins: [plugin] });
  const p = podWith([{ name: 'share', nfs: { server: 's', path: '/x' } }]);
  const paths = await volumes.setUp(p);
  await volumes.setUp(p);
  const dir = volumeDir(root, 'uid-1', 'example.com/nfs', 'share');
  t.is(paths.get('share'), dir);
  t.true(dir.endsWith('/volumes/example.com~nfs/share'));
  t.is(readFileSync(join(dir, 'by-plugin'), 'utf8'), 'example.com/nfs');
  t.true(volumes.sources.includes('nfs'));
  await volumes.tearDown('uid-1');
  t.deepEqual(calls, ['setUp share refreshing=false', 'tearDown share']);
});

test('a plugin for a built-in source replaces it, and the log says so', async (t) => {
  const { plugin, calls } = recorder('emptyDir', 'example.com/scratch');
  const { volumes, logs } = volumeEnv(t, { plugins: [plugin] });
  await volumes.setUp(podWith([{ name: 'tmp', emptyDir: {} }]));
  t.deepEqual(calls, ['setUp tmp refreshing=false']);
  t.like(logs.find('replacing the one before it')[0]?.fields, {
    source: 'emptyDir',
    plugin: 'example.com/scratch',
    replaced: 'kubernetes.io/empty-dir',
  });
});

test('a plugin without a source is refused with the field named', (t) => {
  t.throws(() => volumeEnv(t, { plugins: [{ name: 'x', source: '', setUp: async () => '' }] }), {
    message: 'volume plugin #0: field "source" must be a non-empty string',
  });
});

test('orphaned pod directories are removed, never one of a pod the kubelet knows or has volumes of', async (t) => {
  const { root, volumes } = volumeEnv(t);
  await volumes.setUp({
    ...podWith([{ name: 'scratch', emptyDir: {} }]),
    metadata: { name: 'a', uid: 'active' },
  });
  for (const uid of ['orphan', 'known']) mkdirSync(emptyDirPath(root, uid, 'scratch'), { recursive: true });
  await volumes.removeOrphanedPodDirs((uid) => uid === 'known');
  t.false(existsSync(join(root, 'pods', 'orphan')));
  t.true(existsSync(join(root, 'pods', 'known')));
  t.true(existsSync(join(root, 'pods', 'active')), 'set up and not torn down: its pod is running');
  await volumes.tearDown('active');
  await volumes.removeOrphanedPodDirs(() => false);
  t.false(existsSync(join(root, 'pods', 'known')));
});

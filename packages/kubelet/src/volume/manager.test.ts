import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { emptyDirPath, VolumeError, VolumeManager } from './volumes.js';

/** A VolumeManager whose mount(8)/umount(8) are recorded against a pretend mount table. */
function setup(tmpfs: boolean) {
  const root = mkdtempSync(join(tmpdir(), 'nodelet-volumes-'));
  const mounted = new Set<string>();
  const calls: string[] = [];
  const volumes = new VolumeManager(root, {
    tmpfs,
    run: async (command, args) => {
      calls.push(`${command} ${args.join(' ')}`);
      const point = args[args.length - 1]!;
      if (command === 'mount') mounted.add(point);
      else mounted.delete(point);
    },
    mountPoints: async () => ['/', '/proc', ...mounted],
  });
  return { root, mounted, calls, volumes };
}

const pod = (volumes: NonNullable<Pod['spec']>['volumes']): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'uid-1' },
  spec: { containers: [{ name: 'c', image: 'busybox' }], volumes },
});

test('emptyDir medium Memory: a tmpfs (sized by sizeLimit) mounted once however often the pod syncs; unmounted at teardown', async (t) => {
  const { root, mounted, calls, volumes } = setup(true);
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const p = pod([
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
  t.deepEqual(calls, [
    `mount -t tmpfs -o size=${64 * 2 ** 20} tmpfs ${cache}`,
    `mount -t tmpfs tmpfs ${scratch}`,
  ]);

  await volumes.tearDown('uid-1');
  t.deepEqual(calls.slice(2).sort(), [`umount ${cache}`, `umount ${scratch}`]);
  t.is(mounted.size, 0);
  t.false(existsSync(join(root, 'pods', 'uid-1')));
});

test('without tmpfs (not root, not Linux, or the fake runtime) medium Memory is a plain directory', async (t) => {
  const { root, calls, volumes } = setup(false);
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const paths = await volumes.setUp(pod([{ name: 'cache', emptyDir: { medium: 'Memory' } }]));
  t.true(statSync(paths.get('cache')!).isDirectory());
  await volumes.tearDown('uid-1');
  t.deepEqual(calls, []);
});

test('a failed umount fails the teardown (retried), leaving the directory in place', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'nodelet-volumes-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = emptyDirPath(root, 'uid-1', 'cache');
  mkdirSync(dir, { recursive: true });
  const volumes = new VolumeManager(root, {
    tmpfs: true,
    run: async () => {
      throw new VolumeError(`umount ${dir}: target is busy`);
    },
    mountPoints: async () => [dir],
  });
  await t.throwsAsync(volumes.tearDown('uid-1'), { instanceOf: VolumeError, message: /target is busy/ });
  t.true(existsSync(dir));
});

test('a malformed sizeLimit names the volume', async (t) => {
  const { root, volumes } = setup(true);
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  await t.throwsAsync(
    volumes.setUp(pod([{ name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: 'lots' } }])),
    {
      instanceOf: VolumeError,
      message: /^volume "cache": emptyDir sizeLimit: quantity "lots" is not valid/,
    },
  );
});

test('hostPath: DirectoryOrCreate makes the directory; File on a directory fails naming volume and path', async (t) => {
  const { root, volumes } = setup(false);
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const made = join(root, 'host', 'made');
  const paths = await volumes.setUp(
    pod([{ name: 'h', hostPath: { path: made, type: 'DirectoryOrCreate' } }]),
  );
  t.is(paths.get('h'), made);
  t.true(statSync(made).isDirectory());
  await t.throwsAsync(volumes.setUp(pod([{ name: 'conf', hostPath: { path: made, type: 'File' } }])), {
    instanceOf: VolumeError,
    message: `volume "conf": hostPath type check failed: ${made} is not a file`,
  });
});

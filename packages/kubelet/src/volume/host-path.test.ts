import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { podWith, volumeEnv } from './test-volumes.js';

test('hostPath: the host’s own path, after its type check; OrCreate types create it', async (t) => {
  const { root, volumes } = volumeEnv(t);
  const host = join(root, 'host');
  mkdirSync(join(host, 'dir'), { recursive: true });
  writeFileSync(join(host, 'file'), 'x');
  const paths = await volumes.setUp(
    podWith([
      { name: 'any', hostPath: { path: join(host, 'missing') } },
      { name: 'dir', hostPath: { path: join(host, 'dir'), type: 'Directory' } },
      { name: 'file', hostPath: { path: join(host, 'file'), type: 'File' } },
      { name: 'newdir', hostPath: { path: join(host, 'new/dir'), type: 'DirectoryOrCreate' } },
      { name: 'newfile', hostPath: { path: join(host, 'new.txt'), type: 'FileOrCreate' } },
    ]),
  );
  t.is(paths.get('dir'), join(host, 'dir'));
  t.true(statSync(join(host, 'new/dir')).isDirectory());
  t.true(statSync(join(host, 'new.txt')).isFile());
});

test('hostPath type checks that fail name the volume and the path', async (t) => {
  const { root, volumes } = volumeEnv(t);
  const cases: [string, string][] = [
    ['Directory', 'is not a directory'],
    ['File', 'is not a file'],
    ['Socket', 'is not a socket file'],
    ['CharDevice', 'is not a character device'],
    ['BlockDevice', 'is not a block device'],
    ['Weird', 'has an unknown hostPath type "Weird"'],
  ];
  for (const [type, what] of cases) {
    const path = join(root, 'nothing-here');
    await t.throwsAsync(volumes.setUp(podWith([{ name: 'h', hostPath: { path, type } }])), {
      message: `volume "h": hostPath type check failed: ${path} ${what}`,
    });
  }
  const file = join(root, 'a-file');
  writeFileSync(file, '');
  await t.throwsAsync(
    volumes.setUp(podWith([{ name: 'h', hostPath: { path: file, type: 'DirectoryOrCreate' } }])),
    {
      message: `volume "h": hostPath type check failed: ${file} is not a directory`,
    },
  );
});

import test from 'ava';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Container } from '@nodelet/api';
import { containerMounts } from './mounts.js';

// Volume mounts with subPath and subPathExpr on a real directory tree (upstream makeMounts).

function volume() {
  const root = mkdtempSync(join(tmpdir(), 'nodelet-mounts-'));
  const dir = join(root, 'vol');
  mkdirSync(dir);
  chmodSync(dir, 0o2777); // an emptyDir's mode, with setgid as an fsGroup leaves it
  return { root, dir, paths: new Map([['data', dir]]) };
}

const container = (mount: object): Container => ({
  name: 'app',
  volumeMounts: [{ name: 'data', mountPath: '/data', ...mount }],
});

test('subPathExpr expands from the environment; a missing subPath is made with the volume mode', async (t) => {
  const { dir, paths } = volume();
  const [m] = await containerMounts(container({ subPathExpr: 'logs/$(POD_NAME)' }), paths, [
    ['POD_NAME', 'web-0'],
  ]);
  t.is(m!.hostPath, join(dir, 'logs', 'web-0'));
  t.is(m!.containerPath, '/data');
  t.true(statSync(m!.hostPath).isDirectory());
  t.is(statSync(m!.hostPath).mode & 0o7777, 0o2777, 'the volume mode, not what the umask leaves');
  t.is(statSync(join(dir, 'logs')).mode & 0o7777, 0o2777);
});

test('a subPath that exists (a file of a configMap volume) is mounted as it is', async (t) => {
  const { dir, paths } = volume();
  writeFileSync(join(dir, 'app.conf'), 'x');
  const [m] = await containerMounts(container({ subPath: 'app.conf', readOnly: true }), paths, []);
  t.is(m!.hostPath, join(dir, 'app.conf'));
  t.true(m!.readonly);
  t.true(statSync(m!.hostPath).isFile());
});

test('refused: an unset or empty variable, an unterminated $(, an absolute path, .., a symlink out of the volume', async (t) => {
  const { root, dir, paths } = volume();
  const at = 'container "app": volumeMount "data"';
  await t.throwsAsync(containerMounts(container({ subPathExpr: '$(A)/$(B)' }), paths, [['B', '']]), {
    message: `${at}: subPathExpr "$(A)/$(B)": missing value for A, B`,
  });
  await t.throwsAsync(containerMounts(container({ subPathExpr: 'x/$(A' }), paths, [['A', '1']]), {
    message: `${at}: subPathExpr "x/$(A" expands to "x/$(A", which has an unterminated "$("`,
  });
  await t.throwsAsync(containerMounts(container({ subPathExpr: '$(P)' }), paths, [['P', '/etc']]), {
    message: `${at}: error SubPath \`/etc\` must not be an absolute path`,
  });
  await t.throwsAsync(containerMounts(container({ subPath: 'a/../../b' }), paths, []), {
    message: `${at}: unable to provision SubPath \`a/../../b\`: must not contain '..'`,
  });
  mkdirSync(join(root, 'outside'));
  symlinkSync(join(root, 'outside'), join(dir, 'escape'));
  await t.throwsAsync(containerMounts(container({ subPath: 'escape/new' }), paths, []), {
    message: `${at}: subPath \`escape/new\` leads outside the volume (to ${join(root, 'outside')})`,
  });
  t.false(existsSync(join(root, 'outside', 'new')), 'nothing was made outside the volume');
  await t.throwsAsync(containerMounts(container({ name: 'nope' }), paths, []), {
    message: 'container "app": volumeMount "nope" names no volume of the pod',
  });
});

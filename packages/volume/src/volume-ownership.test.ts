import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { setVolumeOwnership } from './volume-ownership.js';

const isRoot = process.getuid?.() === 0;

function tree(t: { teardown: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'ownership-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'sub'));
  chmodSync(join(dir, 'sub'), 0o700);
  writeFileSync(join(dir, 'sub', 'file'), 'x');
  chmodSync(join(dir, 'sub', 'file'), 0o400);
  symlinkSync('sub/file', join(dir, 'link'));
  return dir;
}

test('read-only volumes: files gain group read, directories group read+search and setgid; symlinks are not followed by chmod', async (t) => {
  const dir = tree(t);
  const errors: string[] = [];
  await setVolumeOwnership(dir, 2345, { readOnly: true, onError: (what) => errors.push(what) });
  t.is(statSync(join(dir, 'sub', 'file')).mode & 0o7777, 0o440);
  t.is(statSync(join(dir, 'sub')).mode & 0o7777, 0o2750);
  t.is(lstatSync(join(dir, 'link')).isSymbolicLink(), true);
  if (isRoot) {
    t.deepEqual(errors, []);
    for (const p of ['sub/file', 'sub', 'link', '.']) t.is(lstatSync(join(dir, p)).gid, 2345, p);
  } else {
    t.deepEqual(errors, ['chown'], 'a non-root kubelet reports the chown once and still sets the modes');
  }
});

test('read-write volumes (emptyDir): group read+write', async (t) => {
  const dir = tree(t);
  await setVolumeOwnership(dir, 2345, { readOnly: false });
  t.is(statSync(join(dir, 'sub', 'file')).mode & 0o7777, 0o660);
  t.is(statSync(join(dir, 'sub')).mode & 0o7777, 0o2770);
});

test('no fsGroup: nothing changes', async (t) => {
  const dir = tree(t);
  await setVolumeOwnership(dir, undefined, { readOnly: true });
  t.is(statSync(join(dir, 'sub', 'file')).mode & 0o7777, 0o400);
});

test('fsGroupChangePolicy OnRootMismatch: a root that already has group, modes and setgid is not walked again', async (t) => {
  if (!isRoot) return t.pass('needs root to chown');
  const dir = tree(t);
  await setVolumeOwnership(dir, 2345, { readOnly: false });
  // A file that lost its group bits since: OnRootMismatch leaves it, Always mends it.
  chmodSync(join(dir, 'sub', 'file'), 0o600);
  await setVolumeOwnership(dir, 2345, { readOnly: false, changePolicy: 'OnRootMismatch' });
  t.is(statSync(join(dir, 'sub', 'file')).mode & 0o7777, 0o600, 'the root matched: not walked');
  await setVolumeOwnership(dir, 3456, { readOnly: false, changePolicy: 'OnRootMismatch' });
  t.is(statSync(join(dir, 'sub', 'file')).gid, 3456, 'another group: the root mismatches, walked');
  t.is(statSync(join(dir, 'sub', 'file')).mode & 0o7777, 0o660);
});

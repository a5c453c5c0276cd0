import {
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import {
  AtomicWriter,
  cleanPath,
  dataDirName,
  type FileProjection,
  validatePath,
  validatePayload,
} from './atomic-writer.js';

/** The cases are upstream's pkg/volume/util/atomic_writer_test.go, as data. */
type P = Record<string, FileProjection>;
const f = (data: string | Buffer, mode = 0o644): FileProjection => ({ data, mode });

function target(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'atomic-write-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

let tick = Date.UTC(2026, 11, 1, 10, 20, 30);
const writer = (dir: string) => new AtomicWriter(dir, { now: () => (tick += 1000) });

/** What a container sees: each visible top-level link followed, every file with its mode. */
function observed(dir: string): P {
  const seen: P = {};
  const walk = (path: string, rel: string) => {
    const info = statSync(path);
    if (info.isDirectory()) {
      for (const name of readdirSync(path)) walk(join(path, name), rel ? `${rel}/${name}` : name);
    } else {
      seen[rel] = { data: readFileSync(path), mode: info.mode & 0o7777 };
    }
  };
  for (const name of readdirSync(dir)) {
    if (name.startsWith('..')) continue;
    const path = join(dir, name);
    if (!lstatSync(path).isSymbolicLink()) throw new Error(`${name} is not a symlink`);
    if (readlinkSync(path) !== `${dataDirName}/${name}`)
      throw new Error(`${name} does not point into ..data`);
    walk(path, name);
  }
  return seen;
}

function checkContents(t: ExecutionContext, dir: string, payload: P, name: string): void {
  const want: P = {};
  for (const [k, v] of Object.entries(payload)) {
    want[cleanPath(k)] = { data: Buffer.from(v.data), mode: v.mode };
  }
  t.deepEqual(observed(dir), want, name);
  // Nothing of older versions is left: ..data and the one timestamped directory it names.
  const hidden = readdirSync(dir).filter((n) => n.startsWith('..'));
  t.deepEqual(hidden.sort(), [dataDirName, readlinkSync(join(dir, dataDirName))].sort(), name);
}

test('validatePath: upstream TestValidatePath, with the messages', (t) => {
  const cases: [string, string, string | undefined][] = [
    ['valid 1', 'i/am/well/behaved.txt', undefined],
    ['valid 2', 'keepyourheaddownandfollowtherules.txt', undefined],
    ['dotfile', '.dotfile', undefined],
    ['max path length', 'a'.repeat(4097), 'invalid path: must be less than or equal to 4096 characters'],
    [
      'max file length',
      'a'.repeat(256),
      'invalid path: filenames must be less than or equal to 255 characters',
    ],
    ['absolute failure', '/dev/null', 'invalid path: must be relative path: /dev/null'],
    ['reserved path', '..sneaky.txt', "invalid path: must not start with '..': ..sneaky.txt"],
    [
      'contains doubledot 1',
      'hello/there/../../../../../../etc/passwd',
      "invalid path: must not contain '..': hello/there/../../../../../../etc/passwd",
    ],
    [
      'contains doubledot 2',
      'hello/../etc/somethingbad',
      "invalid path: must not contain '..': hello/../etc/somethingbad",
    ],
    ['leading doubledot', '../x', "invalid path: must not contain '..': ../x"],
    ['empty', '', 'invalid path: must not be empty: ""'],
  ];
  for (const [name, path, error] of cases) {
    if (error === undefined) t.notThrows(() => validatePath(path), name);
    else t.throws(() => validatePath(path), { name: 'InvalidPathError', message: error }, name);
  }
});

test('validatePayload: upstream TestValidatePayload — paths cleaned, bad ones refused', (t) => {
  t.deepEqual([...validatePayload({ foo: f(''), bar: f('') }).keys()].sort(), ['bar', 'foo']);
  t.deepEqual([...validatePayload({ 'foo////bar': f('') }).keys()], ['foo/bar']);
  t.deepEqual([...validatePayload({ './bar': f(''), 'foo///bar/': f('') }).keys()].sort(), [
    'bar',
    'foo/bar',
  ]);
  for (const bad of ['a'.repeat(4097), '/dev/null', '..sneaky.txt', 'foo/../etc/password', '']) {
    t.throws(() => validatePayload({ [bad]: f('') }), { name: 'InvalidPathError' }, bad.slice(0, 20));
  }
  t.throws(() => validatePayload({ foo: f('a'), 'foo/bar': f('b') }), {
    message: 'invalid payload: "foo" is a file and the directory of "foo/bar"',
  });
});

// "$1 if you can tell me what this binary is" — upstream's test data, 125 bytes.
const mysteryBinary = Buffer.from(
  'f0VMRgIBAQAAAAAAAAAAAAIAPgABAAAAeABAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAEAAOAAB' +
    'AAAAAAAAAAEAAAAFAAAAAAAAAAAAAAAAAEAAAAAAAAAAQAAAAAAAfQAAAAAAAAB9AAAAAAAAAAAA' +
    'IAAAAAAAsDyZDwU=',
  'base64',
);

test('write once: upstream TestWriteOnce — files, modes whatever the umask, subdirectories, dotfiles', async (t) => {
  t.is(mysteryBinary.length, 125);
  const cases: [string, P, boolean][] = [
    ['invalid payload 1', { foo: f('foo'), '..bar': f('bar'), 'binary.bin': f(mysteryBinary) }, false],
    ['invalid payload 2', { 'foo/../bar': f('foo') }, false],
    ['basic 1', { foo: f('foo'), bar: f('bar') }, true],
    ['basic 2', { 'binary.bin': f(mysteryBinary), '.binary.bin': f(mysteryBinary) }, true],
    ['basic mode 1', { foo: f('foo', 0o777), bar: f('bar', 0o400) }, true],
    [
      'dotfiles',
      { foo: f('foo'), bar: f('bar'), '.dotfile': f('dotfile'), '.dotfile.file': f('dotfile.file') },
      true,
    ],
    [
      'dotfiles mode',
      {
        foo: f('foo', 0o407),
        bar: f('bar', 0o440),
        '.dotfile': f('dotfile', 0o777),
        '.dotfile.file': f('dotfile.file', 0o666),
      },
      true,
    ],
    ['subdirectories 1', { 'foo/bar.txt': f('foo/bar'), 'bar/zab.txt': f('bar/zab.txt') }, true],
    ['subdirectories mode 1', { 'foo/bar.txt': f('foo/bar', 0o400), 'bar/zab.txt': f('bar/zab.txt') }, true],
    [
      'subdirectories 2',
      { 'foo//bar.txt': f('foo//bar'), 'bar///bar/zab.txt': f('bar/../bar/zab.txt') },
      true,
    ],
    [
      'subdirectories 3',
      {
        'foo/bar.txt': f('foo/bar'),
        'bar/zab.txt': f('bar/zab.txt'),
        'foo/blaz/bar.txt': f('foo/blaz/bar'),
        'bar/zib/zab.txt': f('bar/zib/zab.txt'),
      },
      true,
    ],
    [
      'kitchen sink',
      {
        'foo.log': f('foo'),
        'bar.zap': f('bar'),
        '.dotfile': f('dotfile'),
        'foo/bar.txt': f('foo/bar'),
        'bar/zab.txt': f('bar/zab.txt'),
        'foo/blaz/bar.txt': f('foo/blaz/bar'),
        'bar/zib/zab.txt': f('bar/zib/zab.txt', 0o400),
        '1/2/3/4/5/6/7/8/9/10/.dotfile.lib': f('1-2-3-dotfile', 0o777),
      },
      true,
    ],
  ];
  for (const [name, payload, success] of cases) {
    const dir = target(t);
    const w = writer(dir);
    if (!success) {
      await t.throwsAsync(w.write(payload), { name: 'InvalidPathError' }, name);
      t.deepEqual(readdirSync(dir), [], `${name}: nothing written`);
      continue;
    }
    t.true(await w.write(payload), name);
    checkContents(t, dir, payload, name);
  }
});

test('update: upstream TestUpdate — change, add, delete; an unchanged payload rewrites nothing', async (t) => {
  const cases: [string, P, P, boolean][] = [
    ['update', { foo: f('foo'), bar: f('bar') }, { foo: f('foo2'), bar: f('bar2', 0o640) }, true],
    ['no update', { foo: f('foo'), bar: f('bar') }, { foo: f('foo'), bar: f('bar') }, false],
    [
      'no update 2',
      { 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar') },
      { 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar') },
      false,
    ],
    [
      'add 1',
      { 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar') },
      { 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar'), 'blu/zip.txt': f('zip') },
      true,
    ],
    [
      'add 2',
      { 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar') },
      { 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar'), 'blu/two/2/3/4/5/zip.txt': f('zip') },
      true,
    ],
    [
      'add 3',
      { 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar') },
      { 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar'), 'bar/2/3/4/5/zip.txt': f('zip') },
      true,
    ],
    ['delete 1', { 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar') }, { 'foo/bar.txt': f('foo') }, true],
    [
      'delete 2',
      { 'foo/bar.txt': f('foo'), 'bar/1/2/3/zab.txt': f('bar') },
      { 'foo/bar.txt': f('foo') },
      true,
    ],
    [
      'delete 3',
      { 'foo/bar.txt': f('foo'), 'bar/1/2/sip.txt': f('sip'), 'bar/1/2/3/zab.txt': f('bar') },
      { 'foo/bar.txt': f('foo'), 'bar/1/2/sip.txt': f('sip') },
      true,
    ],
    [
      'delete 4',
      { 'foo/bar.txt': f('foo'), 'bar/1/2/sip.txt': f('sip'), 'bar/1/2/3/4/5/6zab.txt': f('bar') },
      { 'foo/bar.txt': f('foo'), 'bar/1/2/sip.txt': f('sip') },
      true,
    ],
    [
      'delete all',
      { 'foo/bar.txt': f('foo'), 'bar/1/2/sip.txt': f('sip'), 'bar/1/2/3/4/5/6zab.txt': f('bar') },
      {},
      true,
    ],
    ['add and delete 1', { 'foo/bar.txt': f('foo') }, { 'bar/baz.txt': f('baz') }, true],
  ];
  for (const [name, first, next, shouldWrite] of cases) {
    const dir = target(t);
    const w = writer(dir);
    await w.write(first);
    checkContents(t, dir, first, name);
    const before = readlinkSync(join(dir, dataDirName));
    t.is(await w.write(next), shouldWrite, name);
    checkContents(t, dir, next, name);
    if (!shouldWrite) t.is(readlinkSync(join(dir, dataDirName)), before, `${name}: ..data not swapped`);
  }
});

test('multiple updates: upstream TestMultipleUpdates', async (t) => {
  const cases: [string, P[]][] = [
    [
      'update 1',
      [
        { foo: f('foo'), bar: f('bar') },
        { foo: f('foo2', 0o400), bar: f('bar2', 0o400) },
        { foo: f('foo3', 0o600), bar: f('bar3', 0o600) },
      ],
    ],
    [
      'update 2',
      [
        { 'foo/bar.txt': f('foo/bar'), 'bar/zab.txt': f('bar/zab.txt') },
        { 'foo/bar.txt': f('foo/bar2'), 'bar/zab.txt': f('bar/zab.txt2', 0o400) },
      ],
    ],
    ['clear sentinel', [1, 2, 3, 4].map((i) => ({ foo: f(`foo${i}`), bar: f(`bar${i}`) }))],
    [
      'add 1',
      [
        {
          'foo/bar.txt': f('foo/bar'),
          'bar//zab.txt': f('bar/zab.txt'),
          'foo/blaz/bar.txt': f('foo/blaz/bar'),
          'bar/zib////zib/zab.txt': f('bar/zib/zab.txt'),
        },
        {
          'foo/bar.txt': f('foo/bar2'),
          'bar/zab.txt': f('bar/zab.txt2'),
          'foo/blaz/bar.txt': f('foo/blaz/bar2'),
          'bar/zib/zab.txt': f('bar/zib/zab.txt2'),
          'add/new/keys.txt': f('addNewKeys'),
        },
      ],
    ],
    [
      'remove 1',
      [
        {
          'foo/bar.txt': f('foo/bar'),
          'bar//zab.txt': f('bar/zab.txt'),
          'foo/blaz/bar.txt': f('foo/blaz/bar'),
          'zip/zap/zup/fop.txt': f('zip/zap/zup/fop.txt'),
        },
        { 'foo/bar.txt': f('foo/bar2'), 'bar/zab.txt': f('bar/zab.txt2') },
        { 'foo/bar.txt': f('foo/bar') },
      ],
    ],
  ];
  for (const [name, payloads] of cases) {
    const dir = target(t);
    const w = writer(dir);
    for (const [i, payload] of payloads.entries()) {
      await w.write(payload);
      checkContents(t, dir, payload, `${name} #${i}`);
    }
  }
});

test('paths to remove: upstream TestPathsToRemove', async (t) => {
  const cases: [string, P, P, string[]][] = [
    ['simple', { 'foo.txt': f('foo'), 'bar.txt': f('bar') }, { 'foo.txt': f('foo') }, ['bar.txt']],
    [
      'simple 2',
      { 'foo.txt': f('foo'), 'zip/bar.txt': f('zip/b}ar') },
      { 'foo.txt': f('foo') },
      ['zip', 'zip/bar.txt'],
    ],
    [
      'subdirs 1',
      { 'foo.txt': f('foo'), 'zip/zap/bar.txt': f('zip/bar') },
      { 'foo.txt': f('foo') },
      ['zip', 'zip/zap', 'zip/zap/bar.txt'],
    ],
    [
      'subdirs 2',
      { 'foo.txt': f('foo'), 'zip/1/2/3/4/bar.txt': f('zip/b}ar') },
      { 'foo.txt': f('foo') },
      ['zip', 'zip/1', 'zip/1/2', 'zip/1/2/3', 'zip/1/2/3/4', 'zip/1/2/3/4/bar.txt'],
    ],
    [
      'subdirs 4',
      {
        'foo.txt': f('foo'),
        'zap/1/2/3/4/bar.txt': f('zip/bar'),
        'zap/1/2/c/bar.txt': f('zap/bar'),
        'zap/1/2/magic.txt': f('indigo'),
      },
      { 'foo.txt': f('foo'), 'zap/1/2/magic.txt': f('indigo') },
      ['zap/1/2/3', 'zap/1/2/3/4', 'zap/1/2/3/4/bar.txt', 'zap/1/2/c', 'zap/1/2/c/bar.txt'],
    ],
    [
      'subdirs 5',
      { 'foo.txt': f('foo'), 'zap/1/2/3/4/bar.txt': f('zip/bar'), 'zap/1/2/c/bar.txt': f('zap/bar') },
      { 'foo.txt': f('foo'), 'zap/1/2/magic.txt': f('indigo') },
      ['zap/1/2/3', 'zap/1/2/3/4', 'zap/1/2/3/4/bar.txt', 'zap/1/2/c', 'zap/1/2/c/bar.txt'],
    ],
  ];
  for (const [name, first, next, want] of cases) {
    const dir = target(t);
    const w = writer(dir);
    await w.write(first);
    const old = join(dir, readlinkSync(join(dir, dataDirName)));
    t.deepEqual([...(await w.pathsToRemove(validatePayload(next), old))].sort(), want.sort(), name);
  }
});

test('user-visible files: upstream TestCreateUserVisibleFiles — one link per top-level path', async (t) => {
  const cases: [string, P, Record<string, string>][] = [
    ['simple path', { foo: f(''), bar: f('') }, { foo: '..data/foo', bar: '..data/bar' }],
    [
      'simple nested path',
      { 'foo/bar': f(''), 'baz/bar/txt': f(''), 'bar/txt': f('') },
      { foo: '..data/foo', baz: '..data/baz', bar: '..data/bar' },
    ],
    ['unclean nested path', { './bar': f(''), 'foo///bar': f('') }, { bar: '..data/bar', foo: '..data/foo' }],
  ];
  for (const [name, payload, links] of cases) {
    const dir = target(t);
    await writer(dir).write(payload);
    const visible = readdirSync(dir).filter((n) => !n.startsWith('..'));
    t.deepEqual(Object.fromEntries(visible.map((n) => [n, readlinkSync(join(dir, n))])), links, name);
  }
});

test('the timestamped directory is named by the clock as upstream formats it, with the volume directory’s mode', async (t) => {
  const dir = target(t);
  const w = new AtomicWriter(dir, { now: () => Date.UTC(2026, 11, 1, 10, 20, 30, 123) });
  await w.write({ key: f('v') });
  const ts = readlinkSync(join(dir, dataDirName));
  t.regex(ts, /^\.\.2026_12_01_10_20_30\.\d+$/);
  t.is(statSync(join(dir, ts)).mode & 0o7777, statSync(dir).mode & 0o7777);
});

test('setPerms runs once on the new timestamped directory before the swap; its error fails the write and keeps the old version', async (t) => {
  const dir = target(t);
  const w = writer(dir);
  const seen: string[] = [];
  await w.write({ 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar') }, async (ts) => {
    t.true(statSync(join(dir, ts)).isDirectory());
    t.regex(ts, /^\.\.\d{4}_/);
    seen.push(ts);
  });
  t.is(seen.length, 1);
  t.is(readlinkSync(join(dir, dataDirName)), seen[0]);

  await t.throwsAsync(
    w.write({ 'foo/bar.txt': f('foo2'), 'bar/zab.txt': f('bar2') }, async () => {
      throw new Error('error in setPerms');
    }),
    { message: 'error in setPerms' },
  );
  checkContents(t, dir, { 'foo/bar.txt': f('foo'), 'bar/zab.txt': f('bar') }, 'the old version stays');
});

test('a writer left half-way (a stale ..data_tmp, a lost link) is repaired by the next write', async (t) => {
  const dir = target(t);
  const w = writer(dir);
  const payload = { foo: f('foo'), bar: f('bar') };
  await w.write(payload);
  rmSync(join(dir, 'bar'));
  symlinkSync('..gone', join(dir, '..data_tmp'));
  t.true(await w.write(payload), 'a missing link is a change');
  checkContents(t, dir, payload, 'repaired');
});

test('a reader that resolves ..data once never sees a mix of versions while the writer updates', async (t) => {
  const dir = target(t);
  const w = writer(dir);
  const version = (n: number): P => ({ a: f(`a${n}`), b: f(`b${n}`), 'sub/c': f(`c${n}`) });
  await w.write(version(0));
  let writing = true;
  const writes = (async () => {
    for (let n = 1; n <= 60; n++) await w.write(version(n));
    writing = false;
  })();
  let reads = 0;
  let gone = 0;
  while (writing) {
    const ts = join(dir, await readlink(join(dir, dataDirName)));
    try {
      const [a, b, c] = await Promise.all(['a', 'b', 'sub/c'].map((p) => readFile(join(ts, p), 'utf8')));
      const n = a!.slice(1);
      t.is(`${b!.slice(1)}|${c!.slice(1)}`, `${n}|${n}`, `one version in ${ts}`);
      reads++;
    } catch (err) {
      // The version was replaced and removed before every file was opened: nothing mixed was read.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      gone++;
    }
  }
  await writes;
  t.true(reads > 0, `${reads} consistent reads, ${gone} of a version already removed`);
  checkContents(t, dir, version(60), 'the last version');
  t.deepEqual((await readdir(dir)).filter((n) => n.startsWith('..')).length, 2);
});

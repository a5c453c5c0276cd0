import { lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { podWith, volumeEnv } from './test-volumes.js';

const modeOf = (path: string) => statSync(path).mode & 0o7777;
const visible = (dir: string) =>
  readdirSync(dir)
    .filter((n) => !n.startsWith('..'))
    .sort();

test('configMap: every key a file (data and binaryData), mode 0644, each a link through ..data', async (t) => {
  const { volumes, objects } = volumeEnv(t);
  objects.setConfigMap(
    'default',
    'special-config',
    { SPECIAL_LEVEL: 'very', SPECIAL_TYPE: 'charm' },
    {
      'logo.bin': Buffer.from([0, 1, 2, 255]).toString('base64'),
    },
  );
  const dir = (await volumes.setUp(podWith([{ name: 'config', configMap: { name: 'special-config' } }]))).get(
    'config',
  )!;
  t.true(dir.endsWith('/pods/uid-1/volumes/kubernetes.io~configmap/config'));
  t.deepEqual(visible(dir), ['SPECIAL_LEVEL', 'SPECIAL_TYPE', 'logo.bin']);
  t.is(readFileSync(join(dir, 'SPECIAL_LEVEL'), 'utf8'), 'very');
  t.deepEqual([...readFileSync(join(dir, 'logo.bin'))], [0, 1, 2, 255]);
  t.is(readlinkSync(join(dir, 'SPECIAL_TYPE')), '..data/SPECIAL_TYPE');
  t.regex(readlinkSync(join(dir, '..data')), /^\.\.2026_12_01_10_20_30\.\d+$/);
  t.is(modeOf(join(dir, 'SPECIAL_LEVEL')), 0o644);
  t.is(modeOf(dir), 0o777);
});

test('configMap items: only the keys listed, at their paths (subdirectories too), item mode over defaultMode', async (t) => {
  const { volumes, objects } = volumeEnv(t);
  objects.setConfigMap('default', 'cfg', { a: 'A', b: 'B', c: 'C' });
  const p = podWith([
    {
      name: 'config',
      configMap: {
        name: 'cfg',
        defaultMode: 0o440,
        items: [
          { key: 'a', path: 'conf/a.txt' },
          { key: 'b', path: 'b', mode: 0o600 },
        ],
      },
    },
  ]);
  const dir = (await volumes.setUp(p)).get('config')!;
  t.deepEqual(visible(dir), ['b', 'conf']);
  t.is(readFileSync(join(dir, 'conf/a.txt'), 'utf8'), 'A');
  t.is(modeOf(join(dir, 'conf/a.txt')), 0o440);
  t.is(modeOf(join(dir, 'b')), 0o600);
});

test('configMap missing: upstream’s messages; optional mounts what there is', async (t) => {
  const { volumes, objects } = volumeEnv(t);
  await t.throwsAsync(volumes.setUp(podWith([{ name: 'v', configMap: { name: 'nope' } }])), {
    message: 'volume "v": configmap "nope" not found',
  });
  const optional = (
    await volumes.setUp(podWith([{ name: 'v', configMap: { name: 'nope', optional: true } }]))
  ).get('v')!;
  t.deepEqual(visible(optional), [], 'an empty volume');

  objects.setConfigMap('default', 'cfg', { a: 'A' });
  const items = [
    { key: 'a', path: 'a' },
    { key: 'k', path: 'k' },
  ];
  await t.throwsAsync(volumes.setUp(podWith([{ name: 'w', configMap: { name: 'cfg', items } }])), {
    message: 'volume "w": configmap references non-existent config key: k',
  });
  const some = (
    await volumes.setUp(podWith([{ name: 'w', configMap: { name: 'cfg', items, optional: true } }]))
  ).get('w')!;
  t.deepEqual(visible(some), ['a']);
});

test('bad input is refused naming the field, nothing else disturbed: a key that is no file name, .. in a path, 2 MiB, a mode', async (t) => {
  const { volumes, objects, events } = volumeEnv(t);
  objects.setConfigMap('default', 'good', { g: 'G' });
  let n = 0;
  const p = (configMap: object) => {
    const pod = podWith([
      { name: 'good', configMap: { name: 'good' } },
      { name: 'v', configMap: { name: 'cfg', ...configMap } },
    ]);
    pod.metadata!.uid = `uid-${n++}`;
    return pod;
  };
  const cases: [string, Record<string, string>, object, string][] = [
    [
      'a key starting with ..',
      { '..a': 'x' },
      {},
      `configmap "cfg" key "..a": invalid path: must not start with '..': ..a`,
    ],
    [
      '.. in an item path',
      { a: 'A' },
      { items: [{ key: 'a', path: '../etc/passwd' }] },
      `configMap.items[0].path: invalid path: must not contain '..': ../etc/passwd`,
    ],
    [
      'an absolute item path',
      { a: 'A' },
      { items: [{ key: 'a', path: '/etc/passwd' }] },
      'configMap.items[0].path: invalid path: must be relative path: /etc/passwd',
    ],
    [
      '2 MiB',
      { a: 'x'.repeat(2 * 1024 * 1024) },
      {},
      'configmap "cfg": data: Too long: must have at most 1048576 bytes (it has 2097152)',
    ],
    [
      'a mode',
      { a: 'A' },
      { defaultMode: 0o1777 },
      'configMap.defaultMode: Invalid value: 1023: must be a number between 0 and 0777 (octal), both inclusive',
    ],
  ];
  for (const [name, data, source, message] of cases) {
    objects.setConfigMap('default', 'cfg', data);
    const pod = p(source);
    await t.throwsAsync(volumes.setUp(pod), { message: `volume "v": ${message}` }, name);
    const good = (
      await volumes.setUp({ ...pod, spec: { ...pod.spec!, volumes: pod.spec!.volumes!.slice(0, 1) } })
    ).get('good')!;
    t.is(readFileSync(join(good, 'g'), 'utf8'), 'G', `${name}: the pod's other volume is set up`);
    t.is(events.pop(), `Warning FailedMount MountVolume.SetUp failed for volume "v" : ${message}`, name);
  }

  // A volume in use whose object turns bad keeps its files.
  objects.setConfigMap('default', 'cfg', { a: 'A' });
  const running = p({});
  const dir = (await volumes.setUp(running)).get('v')!;
  objects.setConfigMap('default', 'cfg', { a: 'x'.repeat(2 * 1024 * 1024) });
  await volumes.setUp(running);
  t.is(readFileSync(join(dir, 'a'), 'utf8'), 'A');
  t.regex(events.pop()!, /volume "v" : configmap "cfg": data: Too long/);
});

test('secret: keys decoded, 0644 by default, defaultMode 0400 honoured; missing: upstream’s messages', async (t) => {
  const { volumes, objects } = volumeEnv(t);
  objects.setSecret('default', 'creds', { username: 'admin', password: 's3cr3t' });
  const paths = await volumes.setUp(
    podWith([
      { name: 'plain', secret: { secretName: 'creds' } },
      { name: 'strict', secret: { secretName: 'creds', defaultMode: 0o400 } },
    ]),
  );
  const plain = paths.get('plain')!;
  t.true(plain.endsWith('/volumes/kubernetes.io~secret/plain'));
  t.is(readFileSync(join(plain, 'password'), 'utf8'), 's3cr3t');
  t.is(modeOf(join(plain, 'password')), 0o644);
  t.is(modeOf(join(paths.get('strict')!, 'username')), 0o400);

  await t.throwsAsync(volumes.setUp(podWith([{ name: 's', secret: { secretName: 'nope' } }])), {
    message: 'volume "s": secret "nope" not found',
  });
  await t.throwsAsync(
    volumes.setUp(
      podWith([{ name: 's', secret: { secretName: 'creds', items: [{ key: 'token', path: 't' }] } }]),
    ),
    { message: 'volume "s": references non-existent secret key: token' },
  );
});

test('secret: a tmpfs where the kubelet can mount one; else a 0700 directory, said once in the log', async (t) => {
  const withTmpfs = volumeEnv(t, { tmpfs: true });
  withTmpfs.objects.setSecret('default', 'creds', { k: 'v' });
  const p = podWith([{ name: 's', secret: { secretName: 'creds' } }]);
  const dir = (await withTmpfs.volumes.setUp(p)).get('s')!;
  await withTmpfs.volumes.setUp(p);
  t.deepEqual(withTmpfs.calls, [`mount -t tmpfs tmpfs ${dir}`], 'mounted once');
  t.is(modeOf(dir), 0o777);

  const plain = volumeEnv(t);
  plain.objects.setSecret('default', 'creds', { k: 'v' });
  const two = podWith([
    { name: 's', secret: { secretName: 'creds' } },
    { name: 't', secret: { secretName: 'creds' } },
  ]);
  const paths = await plain.volumes.setUp(two);
  await plain.volumes.setUp(two);
  t.is(modeOf(paths.get('s')!), 0o700);
  t.deepEqual(plain.calls, []);
  t.is(plain.logs.find('not tmpfs').length, 1);
});

test('fsGroup: the files get the group and group read, the directories group search and setgid', async (t) => {
  const { volumes, objects } = volumeEnv(t);
  objects.setSecret('default', 'creds', { key: 'v' });
  const p = podWith([{ name: 's', secret: { secretName: 'creds', defaultMode: 0o400 } }], {
    securityContext: { fsGroup: 2000 },
  });
  const dir = (await volumes.setUp(p)).get('s')!;
  t.is(modeOf(join(dir, 'key')), 0o440);
  t.is(modeOf(dir), 0o2750);
  t.is(modeOf(join(dir, readlinkSync(join(dir, '..data')))), 0o2750);
  if (process.getuid?.() === 0) {
    t.is(statSync(join(dir, 'key')).gid, 2000);
    t.is(lstatSync(join(dir, 'key')).gid, 2000, 'the link too');
  }
  // An update keeps them: the new version is given the group before it is swapped in.
  objects.setSecret('default', 'creds', { key: 'v2' });
  await volumes.setUp(p);
  t.is(readFileSync(join(dir, 'key'), 'utf8'), 'v2');
  t.is(modeOf(join(dir, 'key')), 0o440);
});

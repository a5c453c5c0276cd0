import test from 'ava';
import { createDecipheriv, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EncryptionConfig } from './storage/encryption-config.js';
import { storageKey } from './storage/stored-values.js';
import { startCluster, type TestCluster } from './test-helpers.js';

// Secrets encrypted in state.db with an EncryptionConfiguration, as kube-apiserver's
// --encryption-provider-config: the stored format is upstream's, reads decrypt, keys rotate.

const key1 = randomBytes(32).toString('base64');
const key2 = randomBytes(32).toString('base64');

function configYaml(providers: string): string {
  return `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
${providers}`;
}

const aesgcm = (...keys: [string, string][]) =>
  `      - aesgcm:\n          keys:\n${keys.map(([n, s]) => `            - {name: ${n}, secret: "${s}"}\n`).join('')}`;
const aescbc = (name: string, secret: string) =>
  `      - aescbc:\n          keys:\n            - {name: ${name}, secret: "${secret}"}\n`;
const identity = '      - identity: {}\n';

async function writeConfig(dir: string, name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

/** The raw bytes SQLite holds: the database and its write-ahead log. */
async function rawState(dataDir: string): Promise<Buffer> {
  const parts = await Promise.all(
    ['state.db', 'state.db-wal'].map((f) => readFile(join(dataDir, f)).catch(() => Buffer.alloc(0))),
  );
  return Buffer.concat(parts);
}

async function createSecret(c: TestCluster, name: string, value: string): Promise<void> {
  const r = await c.api('POST', '/api/v1/namespaces/default/secrets', {
    metadata: { name },
    stringData: { password: value },
  });
  if (r.status !== 201) throw new Error(`create secret ${name}: ${r.status} ${r.text}`);
}

async function readSecret(c: TestCluster, name: string): Promise<string> {
  const r = await c.api('GET', `/api/v1/namespaces/default/secrets/${name}`);
  if (r.status !== 200) throw new Error(`get secret ${name}: ${r.status} ${r.text}`);
  return Buffer.from(r.json.data.password, 'base64').toString();
}

function distinctive(label: string): string {
  return `${label}-${randomBytes(12).toString('hex')}`;
}

test('with aesgcm, neither a Secret value nor its base64 is in state.db or its WAL, current or history', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-enc-'));
  const config = await writeConfig(dir, 'enc.yaml', configYaml(aesgcm(['key1', key1])));
  const c = await startCluster({ dataDir: join(dir, 'data'), encryptionProviderConfig: config });
  try {
    const first = distinctive('first-password');
    const second = distinctive('second-password');
    await createSecret(c, 'db', first);
    // An update leaves the first value in a history row: it must be encrypted too.
    const patched = await c.api(
      'PATCH',
      '/api/v1/namespaces/default/secrets/db',
      { stringData: { password: second } },
      { 'content-type': 'application/merge-patch+json' },
    );
    t.is(patched.status, 200, patched.text);
    t.is(await readSecret(c, 'db'), second);
    const raw = await rawState(c.dataDir);
    for (const value of [first, second]) {
      t.false(raw.includes(value), value);
      t.false(raw.includes(Buffer.from(value).toString('base64')), `base64 of ${value}`);
    }
    t.true(raw.includes('k8s:enc:aesgcm:v1:key1:'));
    // A ConfigMap is not listed: stored as it is.
    const plain = distinctive('configmap-value');
    const cm = await c.api('POST', '/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'cm' },
      data: { v: plain },
    });
    t.is(cm.status, 201, cm.text);
    t.true((await rawState(c.dataDir)).includes(plain));
    // Watches replay history rows decrypted: the update carries the first value as its previous state.
    const update = c.cp.store.eventsSince('secrets', 0).find((e) => e.name === 'db' && e.op === 'update')!;
    t.is(Buffer.from(update.prev!.data.password, 'base64').toString(), first);
    t.true(update.json.includes(Buffer.from(second).toString('base64')));
  } finally {
    await c.destroy();
    await rm(dir, { recursive: true, force: true });
  }
});

test('encryption turned on later reads what was written before (identity second); keys rotate', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-enc-'));
  const dataDir = join(dir, 'data');
  const before = distinctive('before-encryption');
  const underKey1 = distinctive('under-key1');
  const underKey2 = distinctive('under-key2');
  try {
    const plain = await startCluster({ dataDir });
    await createSecret(plain, 'old', before);
    await plain.stop();

    // aescbc with key1 writes; identity reads the plaintext written before.
    const withCbc = await writeConfig(dir, 'cbc.yaml', configYaml(aescbc('key1', key1) + identity));
    const second = await startCluster({ dataDir, encryptionProviderConfig: withCbc });
    t.is(await readSecret(second, 'old'), before);
    await createSecret(second, 'k1', underKey1);
    t.false((await rawState(dataDir)).includes(underKey1));
    await second.stop();

    // Rotation: a new key writes, the old key and identity still read.
    const rotated = await writeConfig(
      dir,
      'rotated.yaml',
      configYaml(aesgcm(['key2', key2]) + aescbc('key1', key1) + identity),
    );
    const third = await startCluster({ dataDir, encryptionProviderConfig: rotated });
    t.is(await readSecret(third, 'old'), before);
    t.is(await readSecret(third, 'k1'), underKey1);
    await createSecret(third, 'k2', underKey2);
    t.is(await readSecret(third, 'k2'), underKey2);
    t.true((await rawState(dataDir)).includes('k8s:enc:aesgcm:v1:key2:'));
    await third.stop();

    // Dropping the old key too early: the start fails naming what it cannot read, and closes what it
    // opened (this test's process would not exit otherwise).
    const onlyKey2 = await writeConfig(dir, 'key2.yaml', configYaml(aesgcm(['key2', key2])));
    await t.throwsAsync(startCluster({ dataDir, encryptionProviderConfig: onlyKey2 }), {
      message: /^\/registry\/secrets\/.*: no provider of the encryption configuration reads this value/,
    });

    const rewriting = await startCluster({ dataDir, encryptionProviderConfig: rotated });
    // Upstream's procedure before an old key is dropped: rewrite every Secret (kubectl get secrets -A
    // -o json | kubectl replace -f -), and compact the history still under the old key.
    for (const { metadata } of (await rewriting.api('GET', '/api/v1/secrets')).json.items) {
      const path = `/api/v1/namespaces/${metadata.namespace}/secrets/${metadata.name}`;
      const replaced = await rewriting.api('PUT', path, (await rewriting.api('GET', path)).json);
      t.is(replaced.status, 200, replaced.text);
    }
    rewriting.cp.compact();
    await rewriting.stop();

    const fourth = await startCluster({ dataDir, encryptionProviderConfig: onlyKey2 });
    try {
      for (const [name, value] of [
        ['old', before],
        ['k1', underKey1],
        ['k2', underKey2],
      ] as const)
        t.is(await readSecret(fourth, name), value);
    } finally {
      await fourth.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('stored formats are upstream: aescbc is IV + PKCS#7 CBC, aesgcm authenticates the storage key', (t) => {
  const secret = randomBytes(32);
  const b64 = secret.toString('base64');
  const cbc = EncryptionConfig.parse(configYaml(aescbc('k', b64))).transformerFor('', 'secrets')!;
  const key = storageKey('secrets', 'default', 'db');
  t.is(key, '/registry/secrets/default/db');
  const json = '{"kind":"Secret","data":{"a":"YQ=="}}';
  const stored = cbc.toStorage(json, key) as Buffer;
  const prefix = Buffer.from('k8s:enc:aescbc:v1:k:');
  t.true(stored.subarray(0, prefix.length).equals(prefix));
  const body = stored.subarray(prefix.length);
  t.is((body.length - 16) % 16, 0);
  // Decrypted by hand, as any AES-CBC implementation would: the padding is PKCS#7.
  const decipher = createDecipheriv('aes-256-cbc', secret, body.subarray(0, 16));
  decipher.setAutoPadding(false);
  const padded = Buffer.concat([decipher.update(body.subarray(16)), decipher.final()]);
  const pad = padded[padded.length - 1]!;
  t.deepEqual([...padded.subarray(padded.length - pad)], Array(pad).fill(pad));
  t.is(padded.subarray(0, padded.length - pad).toString(), json);
  t.is(cbc.fromStorage(stored, key), json);

  const gcm = EncryptionConfig.parse(configYaml(aesgcm(['g', b64]))).transformerFor('', 'secrets')!;
  const sealed = gcm.toStorage(json, key) as Buffer;
  const gcmPrefix = Buffer.from('k8s:enc:aesgcm:v1:g:');
  t.true(sealed.subarray(0, gcmPrefix.length).equals(gcmPrefix));
  t.is(sealed.length, gcmPrefix.length + 12 + Buffer.byteLength(json) + 16);
  t.is(gcm.fromStorage(sealed, key), json);
  // A value copied under another object's key does not open.
  t.throws(() => gcm.fromStorage(sealed, storageKey('secrets', 'default', 'other')));
  // Plaintext without identity, or a value under a key no longer listed: not readable, and said why.
  t.throws(() => gcm.fromStorage(json, key), {
    message: /no provider .* reads this value \(stored unencrypted\)/,
  });
  t.throws(() => gcm.fromStorage(stored, key), {
    message: /no provider .* reads this value \(encrypted as k8s:enc:aescbc:v1:k:\)/,
  });
});

test('a bad EncryptionConfiguration is refused naming the file and the field', (t) => {
  const cases: [string, string, RegExp][] = [
    [
      'key not base64',
      configYaml(aescbc('k', 'not base64!')),
      /resources\[0\]\.providers\[0\]\.aescbc\.keys\[0\]\.secret: must be base64/,
    ],
    [
      'wrong length',
      configYaml(aesgcm(['k', randomBytes(20).toString('base64')])),
      /resources\[0\]\.providers\[0\]\.aesgcm\.keys\[0\]\.secret: must decode to 16, 24 or 32 bytes for aesgcm, got 20/,
    ],
    [
      'unknown provider',
      configYaml('      - rot13: {}\n'),
      /resources\[0\]\.providers\[0\]\.rot13: unknown provider/,
    ],
    [
      'secretbox',
      configYaml('      - secretbox: {keys: []}\n'),
      /providers\[0\]\.secretbox: provider secretbox is not supported/,
    ],
    [
      'no providers',
      configYaml('      []\n').replace('providers:\n      []', 'providers: []'),
      /resources\[0\]\.providers: at least one provider/,
    ],
    [
      'two in one element',
      configYaml('      - {identity: {}, aescbc: {keys: []}}\n'),
      /providers\[0\]: name exactly one provider/,
    ],
    [
      'no key name',
      configYaml(`      - aescbc: {keys: [{secret: "${key1}"}]}\n`),
      /keys\[0\]\.name: is required/,
    ],
    [
      'wrong kind',
      'apiVersion: apiserver.config.k8s.io/v1\nkind: Config\nresources: []\n',
      /kind: must be EncryptionConfiguration/,
    ],
  ];
  for (const [what, text, message] of cases) {
    const err = t.throws(() => EncryptionConfig.parse(text, '/etc/enc.yaml'), undefined, what);
    t.regex(err!.message, /^\/etc\/enc\.yaml: /, what);
    t.regex(err!.message, message, what);
  }
});

test('the control plane does not start with a bad or missing configuration, and leaves nothing behind', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-enc-'));
  try {
    const bad = await writeConfig(dir, 'bad.yaml', configYaml(aescbc('k', 'AAAA')));
    await t.throwsAsync(startCluster({ dataDir: join(dir, 'data'), encryptionProviderConfig: bad }), {
      message: new RegExp(
        `^${bad}: resources\\[0\\]\\.providers\\[0\\]\\.aescbc\\.keys\\[0\\]\\.secret: must decode`,
      ),
    });
    await t.throwsAsync(
      startCluster({ dataDir: join(dir, 'data'), encryptionProviderConfig: join(dir, 'missing.yaml') }),
      { message: /missing\.yaml: cannot read the encryption configuration/ },
    );
    await t.throwsAsync(readFile(join(dir, 'data', 'state.db')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('resource patterns: name, name.group, *.group, *. and *.*', (t) => {
  const parse = (patterns: string) =>
    EncryptionConfig.parse(
      `apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [${patterns}]\n    providers: [{identity: {}}]\n`,
    );
  t.truthy(parse('secrets').transformerFor('', 'secrets'));
  t.falsy(parse('secrets').transformerFor('', 'configmaps'));
  t.truthy(parse('leases.coordination.k8s.io').transformerFor('coordination.k8s.io', 'leases'));
  t.truthy(parse('"*.apps"').transformerFor('apps', 'deployments'));
  t.falsy(parse('"*.apps"').transformerFor('', 'secrets'));
  t.truthy(parse('"*."').transformerFor('', 'configmaps'));
  t.truthy(parse('"*.*"').transformerFor('rbac.authorization.k8s.io', 'roles'));
});

import test from 'ava';
import type { Secret } from '@nodelet/api';
import { decodeAuthField, dockerConfigOfSecret, PullSecretError } from './docker-config.js';
import { keyringOfSecrets } from './pull-secrets.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
function secret(type: string, key: string, content: string, name = 'regcred'): Secret {
  return { metadata: { name, namespace: 'default' }, type, data: { [key]: b64(content) } };
}
const JSON_TYPE = 'kubernetes.io/dockerconfigjson';
const CFG_TYPE = 'kubernetes.io/dockercfg';

// Upstream secrets_test.go Test_MakeDockerKeyring (the cases without a node-wide keyring), as data.
const makeKeyringCases: [name: string, secret: Secret, found: { username: string; password: string }[]][] = [
  [
    'with .dockerconfigjson and auth field',
    secret(
      JSON_TYPE,
      '.dockerconfigjson',
      `{"auths": {"test.registry.io": {"auth": "dXNlcjpwYXNzd29yZA=="}}}`,
    ),
    [{ username: 'user', password: 'password' }],
  ],
  [
    'with .dockerconfig and auth field',
    secret(CFG_TYPE, '.dockercfg', `{"test.registry.io": {"auth": "dXNlcjpwYXNzd29yZA=="}}`),
    [{ username: 'user', password: 'password' }],
  ],
  [
    'with .dockerconfigjson and username/password fields',
    secret(
      JSON_TYPE,
      '.dockerconfigjson',
      `{"auths": {"test.registry.io": {"username": "user", "password": "password"}}}`,
    ),
    [{ username: 'user', password: 'password' }],
  ],
  [
    'with .dockerconfig and username/password fields',
    secret(CFG_TYPE, '.dockercfg', `{"test.registry.io": {"username": "user", "password": "password"}}`),
    [{ username: 'user', password: 'password' }],
  ],
  [
    'with .dockerconfigjson but with wrong Secret Type',
    secret(
      CFG_TYPE,
      '.dockerconfigjson',
      `{"auths": {"test.registry.io": {"auth": "dXNlcjpwYXNzd29yZA=="}}}`,
    ),
    [],
  ],
  [
    'with .dockerconfig but with wrong Secret Type',
    secret(JSON_TYPE, '.dockercfg', `{"test.registry.io": {"auth": "dXNlcjpwYXNzd29yZA=="}}`),
    [],
  ],
  [
    'with not matching .dockerconfigjson',
    secret(JSON_TYPE, '.dockerconfigjson', `{"auths": {"foobar.io": {"auth": "dXNlcjpwYXNzd29yZA=="}}}`),
    [],
  ],
];

for (const [name, s, found] of makeKeyringCases) {
  test(`MakeDockerKeyring ${name}`, (t) => {
    const creds = keyringOfSecrets([s]).lookup('test.registry.io');
    t.deepEqual(
      creds.map(({ username, password }) => ({ username, password })),
      found,
    );
  });
}

// Upstream config_test.go TestDockerConfigEntryJSONDecode, as data.
const entryCases: [json: string, expect: { username: string; password: string; email?: string } | 'fail'][] =
  [
    [
      `{"username": "foo", "password": "bar", "email": "foo@example.com"}`,
      { username: 'foo', password: 'bar', email: 'foo@example.com' },
    ],
    // auth field decodes to username & password
    [
      `{"auth": "Zm9vOmJhcg==", "email": "foo@example.com"}`,
      { username: 'foo', password: 'bar', email: 'foo@example.com' },
    ],
    // auth field overrides username & password
    [
      `{"username": "foo", "password": "bar", "auth": "cGluZzpwb25n", "email": "foo@example.com"}`,
      { username: 'ping', password: 'pong', email: 'foo@example.com' },
    ],
    // poorly-formatted auth causes failure
    [`{"auth": "pants", "email": "foo@example.com"}`, 'fail'],
    // invalid JSON causes failure
    [`{"email": false}`, 'fail'],
  ];

for (const [json, expect] of entryCases) {
  test(`DockerConfigEntry ${json}`, (t) => {
    const parse = () => dockerConfigOfSecret(secret(CFG_TYPE, '.dockercfg', `{"r.example.com": ${json}}`));
    if (expect === 'fail') {
      const err = t.throws(parse, { instanceOf: PullSecretError });
      t.regex(err!.message, /^image pull secret "regcred": \.dockercfg\["r\.example\.com"\]\.(auth|email): /);
    } else {
      t.deepEqual(parse(), [['r.example.com', { ...expect, source: 'default/regcred' }]]);
    }
  });
}

// Upstream TestDecodeDockerConfigFieldAuth, and the unpadded form it accepts.
for (const [input, expect] of [
  ['Zm9vOmJhcg==', ['foo', 'bar']],
  ['Zm9vOmJhcg', ['foo', 'bar']],
  ['Zm9vOmJhcgo=', ['foo', 'bar\n']],
  ['dXNlcjpwYXNzOndpdGg6Y29sb25z', ['user', 'pass:with:colons']],
  ['cGFudHM=', 'fail'], // good base64 data, but no colon separating username & password
  ['pants', 'fail'], // bad base64 data
  ['Zm9vOmJhcg=', 'fail'],
] as const) {
  test(`decodeDockerConfigFieldAuth(${input})`, (t) => {
    const decoded = decodeAuthField(input);
    if (expect === 'fail') t.is(typeof decoded, 'string');
    else t.deepEqual(decoded, [...expect]);
  });
}

test('dockerconfigjson: entries in file order, field names as Go matches them (any case), other fields ignored', (t) => {
  const content = JSON.stringify({
    Auths: {
      'https://index.docker.io/v1/': { Username: 'hub', Password: 'p1', identitytoken: 'ignored' },
      '127.0.0.1:5000': { auth: b64('local:p2'), registrytoken: 'ignored' },
    },
    HttpHeaders: { 'X-Extra': 'ignored' },
  });
  t.deepEqual(dockerConfigOfSecret(secret(JSON_TYPE, '.dockerconfigjson', content)), [
    ['https://index.docker.io/v1/', { username: 'hub', password: 'p1', source: 'default/regcred' }],
    ['127.0.0.1:5000', { username: 'local', password: 'p2', source: 'default/regcred' }],
  ]);
});

test('a Secret of another type, or with the key empty, holds no registry credentials', (t) => {
  t.is(dockerConfigOfSecret(secret('Opaque', '.dockerconfigjson', '{"auths": {}}')), undefined);
  t.is(
    dockerConfigOfSecret({ metadata: { name: 'x' }, type: JSON_TYPE, data: { '.dockerconfigjson': '' } }),
    undefined,
  );
  t.deepEqual(dockerConfigOfSecret(secret(JSON_TYPE, '.dockerconfigjson', '{"auths": null}')), []);
});

test('a malformed pull secret is refused naming the secret and the field, never its content', (t) => {
  const cases: [string, RegExp][] = [
    [
      '{"auths": {"r.io": {"auth": "s3cr3t!!"}}}',
      /"regcred": \.dockerconfigjson\.auths\["r\.io"\]\.auth: is not base64$/,
    ],
    ['{"auths": "s3cr3t"}', /"regcred": \.dockerconfigjson\.auths: must be an object of registry entries$/],
    ['s3cr3t', /"regcred": \.dockerconfigjson: is not valid JSON$/],
    ['["s3cr3t"]', /"regcred": \.dockerconfigjson: must be an object with "auths"$/],
    [
      '{"auths": {"r.io": {"password": 5}}}',
      /"regcred": \.dockerconfigjson\.auths\["r\.io"\]\.password: must be a string$/,
    ],
  ];
  for (const [content, message] of cases) {
    const err = t.throws(() => dockerConfigOfSecret(secret(JSON_TYPE, '.dockerconfigjson', content)));
    t.regex(err!.message, message);
    t.false(err!.message.includes('s3cr3t'));
  }
  const notBase64: Secret = {
    metadata: { name: 'regcred' },
    type: JSON_TYPE,
    data: { '.dockerconfigjson': '%%' },
  };
  t.throws(() => dockerConfigOfSecret(notBase64), { message: /data\[\.dockerconfigjson\]: is not base64/ });
});

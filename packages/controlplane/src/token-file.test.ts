import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { StaticTokens } from './apiserver/token-file.js';
import { apiRequest, startCluster } from './test-helpers.js';

// kube-apiserver's --token-auth-file: the CSV format, its errors, and users it authenticates over HTTPS.

test('a token file line is token,user,uid and optionally quoted groups; comments and blank lines are skipped', (t) => {
  const tokens = StaticTokens.parse(
    [
      '# admin tokens',
      '',
      'abc123,alice,1001,"dev,ops"',
      'def456,bob,,',
      'ghi789,carol,1003',
      '"quoted,token",dave,1004,"team ""a"""',
    ].join('\n'),
    'tokens.csv',
  );
  t.is(tokens.size, 4);
  t.deepEqual(tokens.authenticate('abc123'), {
    name: 'alice',
    uid: '1001',
    groups: ['dev', 'ops', 'system:authenticated'],
  });
  t.deepEqual(tokens.authenticate('def456'), { name: 'bob', groups: ['system:authenticated'] });
  t.is(tokens.authenticate('ghi789')?.name, 'carol');
  t.deepEqual(tokens.authenticate('quoted,token')?.groups, ['team "a"', 'system:authenticated']);
  t.is(tokens.authenticate('abc12'), undefined);
  t.is(tokens.authenticate('abc1234'), undefined);
});

test('a malformed token file is refused naming the file, the line and what is wrong', (t) => {
  const cases: [string, RegExp][] = [
    ['abc,alice', /^tokens\.csv:1: a token line is token,user,uid\[,"group1,group2"\]; got 2 field\(s\)$/],
    ['ok,u,1\n,bob,2', /^tokens\.csv:2: the token \(first field\) is empty$/],
    ['abc,,1', /^tokens\.csv:1: the user name \(second field\) is empty$/],
    ['abc,a,1\nabc,b,2', /^tokens\.csv:2: this token is already on an earlier line$/],
    ['abc,a,1,"dev', /^tokens\.csv:1: a quoted field is not closed$/],
  ];
  for (const [text, message] of cases) {
    t.throws(() => StaticTokens.parse(text, 'tokens.csv'), { message }, text);
  }
});

test('a bearer token of the token file authenticates its user and groups; another token is 401', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-tokens-'));
  const file = join(dir, 'tokens.csv');
  await writeFile(file, 'tok-alice-0123456789,alice,1001,"dev,ops"\n', { mode: 0o600 });
  const c = await startCluster({ tokenAuthFile: file });
  t.teardown(async () => {
    await c.destroy();
    await rm(dir, { recursive: true, force: true });
  });
  const whoami = await apiRequest(
    c.cp,
    { headers: { authorization: 'Bearer tok-alice-0123456789' } },
    'POST',
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  );
  t.is(whoami.status, 201, whoami.text);
  t.deepEqual(whoami.json.status.userInfo, {
    username: 'alice',
    uid: '1001',
    groups: ['dev', 'ops', 'system:authenticated'],
  });
  const wrong = await apiRequest(
    c.cp,
    { headers: { authorization: 'Bearer tok-alice-012345678X' } },
    'GET',
    '/api/v1/namespaces',
  );
  t.is(wrong.status, 401);
  t.regex(wrong.json.message, /neither a service-account token of this cluster, a token of the token file/);
});

test('a control plane given a token file it cannot read does not start, and says which file', async (t) => {
  const missing = '/nonexistent/tokens.csv';
  await t.throwsAsync(() => startCluster({ tokenAuthFile: missing }), {
    message: /^\/nonexistent\/tokens\.csv: cannot read the token file: ENOENT/,
  });
});

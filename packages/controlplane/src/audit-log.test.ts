import test from 'ava';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditEventFields } from './audit/event.js';
import { apiRequest, startCluster } from './test-helpers.js';

// The audit log end to end: a control plane with a policy, requests over HTTPS, and the lines it wrote.

const policy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
  - level: None
    nonResourceURLs: ["/healthz*"]
  - level: RequestResponse
    resources: [{group: "", resources: [configmaps]}]
  - level: Metadata
`;

/** Every field an audit.k8s.io/v1 Event may have (upstream's apis/audit/v1/types.go). */
const eventFields = new Set<string>(auditEventFields);
const objectRefFields = new Set([
  'resource',
  'namespace',
  'name',
  'uid',
  'apiGroup',
  'apiVersion',
  'resourceVersion',
  'subresource',
]);

interface Line {
  level: string;
  stage: string;
  verb: string;
  requestURI: string;
  auditID: string;
  user: { username: string; groups?: string[] };
  objectRef?: Record<string, string>;
  responseStatus?: { code: number; message?: string; reason?: string };
  requestObject?: any;
  responseObject?: any;
  annotations?: Record<string, string>;
  [field: string]: unknown;
}

test('the audit log follows its policy, in the schema of audit.k8s.io/v1 Events', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-audit-'));
  const policyFile = join(dir, 'policy.yaml');
  const logPath = join(dir, 'log', 'audit.log');
  await writeFile(policyFile, policy);
  const c = await startCluster({ dataDir: join(dir, 'data'), audit: { path: logPath, policyFile } });
  const password = `audit-password-${Date.now()}`;
  try {
    t.is((await c.api('GET', '/healthz')).status, 200);
    const cm = await c.api('POST', '/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'settings' },
      data: { mode: 'fast' },
    });
    t.is(cm.status, 201, cm.text);
    const secret = await c.api('POST', '/api/v1/namespaces/default/secrets', {
      metadata: { name: 'db' },
      stringData: { password },
    });
    t.is(secret.status, 201, secret.text);
    t.is((await c.api('GET', '/api/v1/namespaces/default/secrets/db')).status, 200);
    t.is((await c.api('GET', '/api/v1/namespaces/default/secrets/missing')).status, 404);
    const watch = await c.api('GET', '/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1');
    t.is(watch.status, 200);
    const anonymous = await apiRequest(c.cp, {}, 'GET', '/version');
    t.is(anonymous.status, 200);
    // A user RBAC grants nothing: refused by the authorizer (403).
    await c.cp.userKubeconfig('mallory');
    const pki = join(c.dataDir, 'pki', 'users');
    const mallory = {
      cert: await readFile(join(pki, 'mallory.crt'), 'utf8'),
      key: await readFile(join(pki, 'mallory.key'), 'utf8'),
    };
    t.is((await apiRequest(c.cp, mallory, 'GET', '/api/v1/namespaces/default/secrets/db')).status, 403);
    const refused = await apiRequest(
      c.cp,
      { headers: { authorization: 'Bearer not-a-token' } },
      'GET',
      '/api/v1/pods',
    );
    t.is(refused.status, 401);
  } finally {
    // Stopping closes the log: every line is on disk.
    await c.stop();
  }
  try {
    t.is((await stat(logPath)).mode & 0o777, 0o600);
    const text = await readFile(logPath, 'utf8');
    t.false(text.includes(password), 'a Secret value at Metadata level');
    t.false(text.includes(Buffer.from(password).toString('base64')), 'its base64');
    const lines = text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Line);
    for (const line of lines) {
      t.deepEqual(
        Object.keys(line).filter((k) => !eventFields.has(k)),
        [],
      );
      t.is(line.kind, 'Event');
      t.is(line.apiVersion, 'audit.k8s.io/v1');
      t.regex(String(line.stageTimestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      t.regex(String(line.requestReceivedTimestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      t.deepEqual(
        Object.keys(line.objectRef ?? {}).filter((k) => !objectRefFields.has(k)),
        [],
      );
    }
    t.false(
      lines.some((l) => l.requestURI.startsWith('/healthz')),
      '/healthz is None',
    );
    const complete = (verb: string, uri: string) =>
      lines.find((l) => l.stage === 'ResponseComplete' && l.verb === verb && l.requestURI === uri)!;

    const cmCreate = complete('create', '/api/v1/namespaces/default/configmaps');
    t.is(cmCreate.level, 'RequestResponse');
    t.deepEqual(cmCreate.requestObject.data, { mode: 'fast' });
    t.is(cmCreate.responseObject.metadata.name, 'settings');
    t.is(cmCreate.responseObject.metadata.managedFields, undefined);
    t.deepEqual(cmCreate.objectRef, {
      resource: 'configmaps',
      namespace: 'default',
      name: 'settings',
      apiVersion: 'v1',
    });
    t.is(cmCreate.responseStatus!.code, 201);
    t.is(cmCreate.user.username, 'nodelet-admin');
    t.true(cmCreate.user.groups!.includes('system:masters'));
    t.deepEqual(
      lines.filter((l) => l.auditID === cmCreate.auditID).map((l) => l.stage),
      ['RequestReceived', 'ResponseComplete'],
    );

    t.is(cmCreate.annotations!['authorization.k8s.io/decision'], 'allow');
    const forbidden = lines.filter((l) => l.user.username === 'mallory' && l.stage === 'ResponseComplete');
    t.is(forbidden.length, 1);
    t.is(forbidden[0]!.responseStatus!.code, 403);
    t.is(forbidden[0]!.annotations!['authorization.k8s.io/decision'], 'forbid');
    t.is(typeof forbidden[0]!.annotations!['authorization.k8s.io/reason'], 'string');

    const secretCreate = complete('create', '/api/v1/namespaces/default/secrets');
    t.is(secretCreate.level, 'Metadata');
    t.is(secretCreate.requestObject, undefined);
    t.is(secretCreate.responseObject, undefined);
    const get = complete('get', '/api/v1/namespaces/default/secrets/db');
    t.deepEqual(get.objectRef, { resource: 'secrets', namespace: 'default', name: 'db', apiVersion: 'v1' });
    const missing = complete('get', '/api/v1/namespaces/default/secrets/missing');
    t.is(missing.responseStatus!.code, 404);
    t.is(missing.responseStatus!.reason, 'NotFound');
    t.is(missing.responseStatus!.message, 'secrets "missing" not found');

    const watchURI = '/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1';
    const watchLines = lines.filter((l) => l.requestURI === watchURI);
    t.deepEqual(
      watchLines.map((l) => [l.stage, l.verb, l.level]),
      [
        ['RequestReceived', 'watch', 'RequestResponse'],
        ['ResponseStarted', 'watch', 'RequestResponse'],
        ['ResponseComplete', 'watch', 'RequestResponse'],
      ],
    );
    t.is(watchLines[2]!.responseObject, undefined, 'a watch stream is not copied into the log');

    // Refused credentials: one ResponseStarted event with the 401, no user (upstream's failed-authn audit).
    const unauthorized = lines.filter((l) => l.requestURI === '/api/v1/pods');
    t.deepEqual(
      unauthorized.map((l) => [l.stage, l.verb, l.user, l.responseStatus]),
      [
        [
          'ResponseStarted',
          'list',
          {},
          { metadata: {}, message: 'Authentication failed, attempted: bearer', code: 401 },
        ],
      ],
    );

    const version = complete('get', '/version');
    t.is(version.user.username, 'system:anonymous');
    t.is(version.objectRef, undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('an audit log without a policy, or a bad policy, stops the start naming it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-audit-'));
  try {
    await t.throwsAsync(startCluster({ dataDir: join(dir, 'data'), audit: { path: join(dir, 'a.log') } }), {
      message: /a\.log needs an audit policy file \(--audit-policy-file\)/,
    });
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Loud\n');
    await t.throwsAsync(
      startCluster({ dataDir: join(dir, 'data'), audit: { path: join(dir, 'a.log'), policyFile: bad } }),
      { message: new RegExp(`^${bad}: rules\\[0\\]\\.level: must be one of`) },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

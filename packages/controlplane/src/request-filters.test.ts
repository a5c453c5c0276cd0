import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import test from 'ava';
import { VirtualClock } from '@nodelet/kernel';
import { sendRaw } from '@nodelet/kernel/testing';
import { apiRequest, startCluster, waitFor, type TestCluster } from './test-helpers.js';

// The filters around every request, as upstream's: the request timeout (504 for requests that are not
// long-running) and the in-flight limits (429 with Retry-After when too many are served at once).

function tls(c: TestCluster, credentials: 'admin' | 'none'): TLSSocket {
  return connect({
    host: '127.0.0.1',
    port: Number(new URL(c.cp.url).port),
    ca: c.cp.caCert,
    ...(credentials === 'admin' ? c.cp.adminCredentials : {}),
    servername: 'localhost',
  });
}

/** A create whose body never finishes arriving: it stays in flight until the rest is written. */
function heldCreate(c: TestCluster, name: string, auth: string[] = []) {
  const socket = tls(c, auth.length ? 'none' : 'admin');
  const body = JSON.stringify({ metadata: { name } });
  const head =
    `POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
    `${auth.map((h) => `${h}\r\n`).join('')}Content-Length: ${body.length}\r\n\r\n`;
  const answer = sendRaw(socket, Buffer.from(head + body.slice(0, 5)), 30_000, { halfClose: false });
  return { answer, finish: () => socket.write(body.slice(5)) };
}

/** A watch as a client reads it: the lines so far, and a way to end it. */
function watch(c: TestCluster, path: string, headers: Record<string, string> = {}) {
  const lines: string[] = [];
  let status = 0;
  const req = httpsRequest(new URL(path, c.cp.url), {
    ca: c.cp.caCert,
    ...(Object.keys(headers).length ? {} : c.cp.adminCredentials),
    headers,
  });
  req.on('response', (res) => {
    status = res.statusCode ?? 0;
    res.setEncoding('utf8');
    res.on('data', (d: string) => lines.push(...d.split('\n').filter(Boolean)));
  });
  req.on('error', () => undefined);
  req.end();
  return { lines, status: () => status, close: () => req.destroy() };
}

test('a request still unanswered after --request-timeout is 504 with upstream Status; a watch is not cut', async (t) => {
  const clock = new VirtualClock();
  const c = await startCluster({ clock, requestTimeoutMs: 5_000 });
  t.teardown(() => c.destroy());
  const w = watch(c, '/api/v1/namespaces/default/configmaps?watch=true');
  await waitFor(() => (w.status() === 200 ? true : undefined), 'the watch to start');

  const held = heldCreate(c, 'slow');
  let answeredAt: number | undefined;
  void held.answer.then(() => (answeredAt = clock.elapsed()));
  const start = clock.elapsed();
  await clock.advanceUntil(() => answeredAt !== undefined, { stepMs: 250, maxMs: 120_000 });
  const answer = await held.answer;
  t.is(answer.status, 504);
  t.true(answeredAt! - start >= 5_000, 'not before the timeout');
  const status = JSON.parse(answer.body);
  t.like(status, {
    kind: 'Status',
    status: 'Failure',
    reason: 'Timeout',
    code: 504,
    message: 'Timeout: request did not complete within requested timeout - context deadline exceeded',
  });
  t.regex(answer.head, /\r\nconnection: close/i, 'a client that never finishes its body is let go');

  // The watch opened before lives on, past the timeout: it is long-running.
  t.is(
    (await c.api('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'after' } })).status,
    201,
  );
  await waitFor(() => (w.lines.some((l) => l.includes('"after"')) ? true : undefined), 'the watch event');
  w.close();
  // Quick requests are not touched.
  t.is((await c.api('GET', '/api/v1/namespaces/default/configmaps/after')).status, 200);
});

test('past --max-mutating-requests-inflight a request is 429 with Retry-After: 1; reads, watches and system:masters are not held back', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-inflight-'));
  const tokens = join(dir, 'tokens.csv');
  await writeFile(tokens, 'tok-alice-0123456789,alice,1001,"devs"\n', { mode: 0o600 });
  const c = await startCluster({
    tokenAuthFile: tokens,
    maxMutatingRequestsInflight: 1,
    maxRequestsInflight: 1,
  });
  t.teardown(async () => {
    await c.destroy();
    await rm(dir, { recursive: true, force: true });
  });
  // Alice may do anything (once authorization is enforced too): the limits, not her rights, are tested.
  await c.api('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    metadata: { name: 'everything' },
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  await c.api('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    metadata: { name: 'devs-everything' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'everything' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'devs' }],
  });
  const bearer = 'Bearer tok-alice-0123456789';
  const alice = (method: string, path: string, body?: unknown) =>
    apiRequest(c.cp, { headers: { authorization: bearer } }, method, path, body);

  // A watch is long-running: with one read-only request allowed, it does not take the place.
  const w = watch(c, '/api/v1/namespaces/default/configmaps?watch=true', { authorization: bearer });
  await waitFor(() => (w.status() === 200 ? true : undefined), 'the watch to start');
  t.teardown(() => w.close());

  const held = heldCreate(c, 'held', [`Authorization: ${bearer}`]);
  await waitFor(
    async () =>
      (await alice('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'probe' } }))
        .status === 429
        ? true
        : undefined,
    'the held create to fill the one mutating place',
  );
  const refused = await alice('POST', '/api/v1/namespaces/default/configmaps', {
    metadata: { name: 'second' },
  });
  t.is(refused.status, 429);
  t.is(refused.headers['retry-after'], '1');
  t.like(refused.json, {
    kind: 'Status',
    reason: 'TooManyRequests',
    code: 429,
    message: 'Too many requests, please try again later.',
    details: { retryAfterSeconds: 1 },
  });
  t.is(
    (await alice('GET', '/api/v1/namespaces/default/configmaps')).status,
    200,
    'reads have places of their own',
  );
  const admin = await c.api('POST', '/api/v1/namespaces/default/configmaps', {
    metadata: { name: 'by-admin' },
  });
  t.is(admin.status, 201, 'a member of system:masters is always answered');

  held.finish();
  t.is((await held.answer).status, 201);
  const after = await alice('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'after' } });
  t.is(after.status, 201, 'the place is given back when the request is done');
});

import { connect } from 'node:tls';
import test from 'ava';
import { sendRaw, type RawAnswer } from '@nodelet/kernel/testing';
import { startCluster, type TestCluster } from './test-helpers.js';

// What the API server does with bodies and request targets no client should send: too deep, too large,
// cut short, malformed escapes, overlong URLs and headers. Always a 4xx with a message, never a 5xx, and the
// server keeps serving.

let c: TestCluster;

test.before(async () => {
  c = await startCluster();
  await c.api('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'x' } });
});

test.after.always(async () => {
  await c?.destroy();
});

/** Raw bytes on a fresh TLS connection with the admin's certificate; the first answer. */
function raw(bytes: Buffer | string, deadlineMs = 5000): Promise<RawAnswer> {
  const { cert, key } = c.cp.adminCredentials;
  const socket = connect({
    host: '127.0.0.1',
    port: Number(new URL(c.cp.url).port),
    ca: c.cp.caCert,
    cert,
    key,
    servername: 'localhost',
  });
  return sendRaw(socket, typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes, deadlineMs, {
    halfClose: false,
  });
}

const post = (path: string, contentType: string, body: string) =>
  c.api('POST', path, body, { 'content-type': contentType });

test('bodies nested deeper than 500 levels are 400s naming the problem, in JSON and YAML, flow or block', async (t) => {
  const cases: [string, string, string][] = [
    ['application/json', 'JSON arrays 200,000 deep', '['.repeat(200_000) + ']'.repeat(200_000)],
    ['application/json', 'JSON objects 200,000 deep', '{"a":'.repeat(200_000) + '1' + '}'.repeat(200_000)],
    ['application/yaml', 'YAML flow 200,000 deep', 'data: ' + '['.repeat(200_000) + ']'.repeat(200_000)],
    ['application/yaml', 'YAML sequences 100,000 deep', 'data: ' + '- '.repeat(100_000) + 'a'],
    [
      'application/yaml',
      'YAML indentation 600 deep',
      Array.from({ length: 600 }, (_, i) => `${' '.repeat(i)}a:`).join('\n') + ' 1',
    ],
  ];
  for (const [type, what, body] of cases) {
    const r = await post('/api/v1/namespaces/default/configmaps', type, body);
    t.is(r.status, 400, what);
    t.is(r.json.reason, 'BadRequest', what);
    t.regex(r.json.message, /the request body is nested deeper than 500 levels/, what);
  }
  // Patches are bodies too, and apply is YAML: the 200,000-deep flow sequence once aborted the process.
  const apply = await c.api(
    'PATCH',
    '/api/v1/namespaces/default/configmaps/x?fieldManager=m',
    '['.repeat(200_000) + ']'.repeat(200_000),
    { 'content-type': 'application/apply-patch+yaml' },
  );
  t.is(apply.status, 400);
  const merge = await c.api(
    'PATCH',
    '/api/v1/namespaces/default/configmaps/x',
    `{"x":${'{"a":'.repeat(9_990)}1${'}'.repeat(9_991)}`,
    { 'content-type': 'application/merge-patch+json' },
  );
  t.is(merge.status, 400, 'a merge patch 10,000 deep once overflowed the merge (500)');
  t.regex(merge.json.message, /nested deeper than 500 levels/);
});

test('a body 400 levels deep is decoded as usual (its unknown fields dropped)', async (t) => {
  const deep = '{"a":'.repeat(398) + '1' + '}'.repeat(398);
  const r = await post(
    '/api/v1/namespaces/default/configmaps?fieldValidation=Ignore',
    'application/json',
    `{"metadata":{"name":"deep-ok"},"x":${deep}}`,
  );
  t.is(r.status, 201, r.text);
  t.is(r.json.x, undefined);
});

test('a body past 3 MiB is 413 with upstream message, whether announced, chunked or lying about its length', async (t) => {
  const announced = await raw(
    'POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      'Content-Length: 4194304\r\n\r\n{}',
  );
  t.is(announced.status, 413, 'refused from its Content-Length alone, before the body comes');
  t.regex(announced.body, /"message":"Request entity too large: limit is 3145728"/);
  t.regex(announced.body, /"reason":"RequestEntityTooLarge"/);

  // Chunked, no length announced: cut off once past the limit, while the client is still sending.
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const chunks: Buffer[] = [
    Buffer.from(
      'POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Transfer-Encoding: chunked\r\n\r\n',
    ),
  ];
  for (let i = 0; i < 64; i++)
    chunks.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'));
  const chunked = await raw(Buffer.concat(chunks));
  t.is(chunked.status, 413);
  t.regex(chunked.body, /Request entity too large: limit is 3145728/);

  t.is((await c.api('GET', '/api/v1/namespaces/default/configmaps/x')).status, 200);
});

test('a truncated or malformed body is 400, and nothing else is disturbed', async (t) => {
  const truncated = await post(
    '/api/v1/namespaces/default/configmaps',
    'application/json',
    '{"metadata":{"name":"t',
  );
  t.is(truncated.status, 400);
  t.regex(truncated.json.message, /json parse error/);
  const badChunk = await raw(
    'POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n',
  );
  t.is(badChunk.status, 400);
  t.regex(badChunk.body, /malformed HTTP request/);
  // A client that announces 100 bytes, sends 10 and hangs up: its request is dropped, no one else's.
  const hungUp = await raw(
    'POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      'Content-Length: 100\r\n\r\n{"metadata',
    300,
  );
  t.is(hungUp.status, undefined);
  const list = await c.api('GET', '/api/v1/namespaces/default/configmaps');
  t.is(list.status, 200);
  t.false(list.json.items.some((i: { metadata: { name: string } }) => i.metadata.name === 't'));
});

test('a malformed percent-escape anywhere in the target is 400 naming the segment or the parameter', async (t) => {
  const cases: [string, RegExp][] = [
    ['/api/v1/namespaces/default/pods/%ff', /malformed percent-encoding in "%ff"/],
    ['/api/v1/namespaces/%e0%a4/pods', /malformed percent-encoding in "%e0%a4"/],
    ['/api/v1/watch/namespaces/default/pods%zz', /malformed percent-encoding in "pods%zz"/],
    ['/api/v1/namespaces/default/pods/x/%ff', /malformed percent-encoding in "%ff"/],
    ['/openapi/v3/api%', /malformed percent-encoding in "api%"/],
    [
      '/api/v1/namespaces/default/pods?labelSelector=%ff',
      /^labelSelector: Invalid value: "%ff": malformed percent-encoding$/,
    ],
    ['/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3D%zz', /^fieldSelector: Invalid value/],
    ['/api/v1/namespaces/default/pods?limit=%', /^limit: Invalid value: "%"/],
    ['/api/v1/namespaces/default/pods?watch=%c0', /^watch: Invalid value/],
    ['/api/v1/namespaces/default/pods?resourceVersion=1%', /^resourceVersion: Invalid value/],
    ['/healthz?%ff=1', /parameter name with a malformed percent-encoding: "%ff"/],
  ];
  for (const [path, message] of cases) {
    const r = await c.api('GET', path);
    t.is(r.status, 400, path);
    t.is(r.json.reason, 'BadRequest', path);
    t.regex(r.json.message, message, path);
  }
  // Well-formed escapes are decoded as before.
  const ok = await c.api('GET', '/api/v1/namespaces/default/configmaps?labelSelector=a%20notin%20(b)');
  t.is(ok.status, 200, ok.text);
});

test('an overlong URL is 414 and overlong headers 431, each with a message', async (t) => {
  const url = await c.api('GET', `/api/v1/namespaces/default/pods?labelSelector=${'a'.repeat(70 * 1024)}`);
  t.is(url.status, 414);
  t.is(url.json.kind, 'Status');
  t.regex(url.json.message, /the request URL is \d+ bytes long; the limit is 65536/);
  const header = await raw(
    `GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(200 * 1024)}\r\n\r\n`,
  );
  t.is(header.status, 431);
  t.regex(header.body, /request header fields too large/);
  // Headers of 70 KiB (a long token, many impersonation headers) are still served.
  const big = await c.api('GET', '/api/v1/namespaces/default/configmaps/x', undefined, {
    'x-big': 'a'.repeat(70 * 1024),
  });
  t.is(big.status, 200);
});

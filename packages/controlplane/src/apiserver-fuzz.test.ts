import { connect, createSecureContext, type TLSSocket } from 'node:tls';
import test from 'ava';
import {
  breaksTheRules,
  describeStatuses,
  type FuzzCase,
  fuzzCaseCount,
  httpFuzzCases,
  type RawAnswer,
  runFuzz,
  sendRaw,
} from '@nodelet/kernel/testing';
import { startApiServerProcess } from './test-apiserver-process.js';

/**
 * Beyond the fuzzer's rules (no 5xx, a 4xx says something): a 4xx in JSON is a Status with a message, as
 * clients read it; the HTTP layer's own refusals (431, a malformed request) are plain text that says why.
 */
function judge(c: FuzzCase, answer: RawAnswer): string | undefined {
  const broken = breaksTheRules(c, answer);
  if (broken || c.head || answer.status === undefined || answer.status < 400) return broken;
  if (!/\r\ncontent-type: *application\/json/i.test(answer.head)) return undefined;
  try {
    const status = JSON.parse(answer.body) as { kind?: string; message?: string };
    if (status.kind === 'Status' && status.message) return undefined;
  } catch {
    // Reported below.
  }
  return `${c.name}: ${answer.status} is not a Status with a message: ${answer.body.slice(0, 200)}`;
}

const raw = (head: string, body = '') =>
  Buffer.concat([
    Buffer.from(`${head}\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`, 'latin1'),
    Buffer.from(body),
  ]);
const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
/** A body to default/<resource> nested past the limit: 400, whatever the format. */
const tooDeep = (
  name: string,
  method: string,
  resource: string,
  type: string,
  body: string,
): [string, Buffer, number, RegExp] => [
  name,
  raw(`${method} /api/v1/namespaces/default/${resource} HTTP/1.1\r\nContent-Type: ${type}`, body),
  400,
  /nested deeper than 500 levels/,
];

// Requests that answered 5xx, killed the server or were silently misread before; replayed first, with
// what they get now.
const corpus: [string, Buffer, number, RegExp][] = [
  ['malformed escape in the path', raw('GET //%healthz HTTP/1.1'), 400, /malformed percent-encoding/],
  [
    'resourceVersion past 2^64',
    raw('GET /api/v1/namespaces/default/pods?resourceVersion=99999999999999999999999 HTTP/1.1'),
    400,
    /resourceVersion: Invalid value/,
  ],
  [
    'a bad chunk',
    Buffer.from(
      'POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n',
    ),
    400,
    /malformed HTTP request/,
  ],
  // A YAML flow sequence 200,000 deep aborted the process (the yaml parser ran out of stack in V8's
  // regexp compiler); JSON 10,000 deep overflowed the schema check, the merge and strategic patches (500).
  tooDeep(
    'YAML nested 200,000 deep (apply)',
    'PATCH',
    'configmaps/x?fieldManager=m',
    'application/apply-patch+yaml',
    '['.repeat(200_000) + ']'.repeat(200_000),
  ),
  tooDeep(
    'YAML nested 1,000 deep',
    'POST',
    'configmaps',
    'application/yaml',
    `data: ${'['.repeat(1000)}${']'.repeat(1000)}`,
  ),
  tooDeep(
    'an unknown field 9,990 deep',
    'POST',
    'configmaps',
    'application/json',
    `{"metadata":{"name":"y"},"x":${deep(9_990)}}`,
  ),
  tooDeep(
    'a merge patch 9,990 deep',
    'PATCH',
    'configmaps/x',
    'application/merge-patch+json',
    `{"x":${deep(9_990)}}`,
  ),
  tooDeep(
    'a strategic merge patch 9,990 deep',
    'PATCH',
    'configmaps/x',
    'application/strategic-merge-patch+json',
    `{"x":${deep(9_990)}}`,
  ),
  // SQLite refused the number it became: 500 "datatype mismatch".
  [
    'limit past 2^53',
    raw('GET /api/v1/namespaces/default/configmaps?limit=99999999999999999999999 HTTP/1.1'),
    400,
    /limit: Invalid value: .*integer out of range/,
  ],
  // Listed every pod: URLSearchParams turned %ff into U+FFFD.
  [
    'a malformed escape in labelSelector',
    raw('GET /api/v1/namespaces/default/pods?labelSelector=%ff HTTP/1.1'),
    400,
    /labelSelector: Invalid value: .*%ff.*malformed percent-encoding/,
  ],
  // The stand-in kubelet answered 431 with an empty body, relayed as it was.
  [
    'a 70 KiB header to a proxied path',
    raw(`GET /api/v1/nodes/n1/proxy/pods HTTP/1.1\r\nX-Fuzz: ${'a'.repeat(70 * 1024)}`),
    431,
    /too large/,
  ],
];

// Everything the API server reads from a request, mutated: paths (a kubelet's behind some), query values,
// headers, bodies of every kind, and slow clients. The process never dies, never answers 5xx, every 4xx
// says what was wrong, and its memory stays bounded.
const CASES = fuzzCaseCount(20_000);

test(`${CASES.toLocaleString('en')} generated requests: the API server never dies, never answers 5xx, every 4xx is a Status with a message, memory stays bounded`, async (t) => {
  t.timeout(600_000); // about 75 s on an idle 2-core machine; generous for a loaded one
  // Slow clients are let go quickly here (as they would be after 32 s), so a request cut short gets its
  // 408 within the fuzzer's patience instead of no answer at all.
  const server = await startApiServerProcess({
    slowClients: { headersMs: 500, requestMs: 1000, checkIntervalMs: 100 },
  });
  t.teardown(() => server.stop());
  // One secure context for every connection: parsing the CA and the key again for each of 20,000
  // connections costs the client more than the requests do.
  const secureContext = createSecureContext({ ca: server.ca, cert: server.cert, key: server.key });
  let session: Buffer | undefined;
  const open = (): TLSSocket => {
    const socket = connect({
      host: '127.0.0.1',
      port: server.port,
      secureContext,
      session,
      servername: 'localhost',
    });
    socket.once('session', (s: Buffer) => (session = s));
    return socket;
  };
  const send = (bytes: Buffer, c?: FuzzCase) =>
    sendRaw(open(), bytes, 3000, {
      halfClose: false,
      headOnlyOnSuccess: true,
      ...(c?.pauseMs ? { pauseMs: c.pauseMs } : {}),
    });

  for (const [name, bytes, status, message] of corpus) {
    const answer = await send(bytes);
    t.is(answer.status, status, name);
    t.regex(answer.body, message, name);
  }
  const rssBefore = await server.rssAfterGc();
  const started = Date.now();
  const { statuses, failures } = await runFuzz(
    httpFuzzCases(CASES, {
      seed: 21,
      paths: [
        '/api/v1/namespaces/default/pods/p/log?container=c&follow=true',
        '/api/v1/nodes/n1/proxy/pods',
        '/api/v1/nodes/n1/proxy/containerLogs/default/p/c',
        '/api/v1/namespaces/default/pods',
        '/api/v1/namespaces/default/configmaps/x',
        '/api/v1/namespaces/default/configmaps?labelSelector=a%3Db&fieldSelector=metadata.name%3Dx',
        '/apis/apps/v1/namespaces/default/deployments?watch=true&timeoutSeconds=1',
        '/api/v1/watch/namespaces/default/configmaps?resourceVersion=1&timeoutSeconds=1',
        '/healthz',
      ],
      upgradePaths: [
        '/api/v1/namespaces/default/pods/p/exec?command=sh&stdin=true&stdout=true&tty=true',
        '/api/v1/namespaces/default/pods/p/attach?container=c&stdout=true',
        '/api/v1/namespaces/default/pods/p/portforward?ports=80',
      ],
      bodyTargets: [
        'POST /api/v1/namespaces/default/configmaps',
        'POST /api/v1/namespaces/default/pods',
        'PUT /api/v1/namespaces/default/configmaps/x',
        'PATCH /api/v1/namespaces/default/configmaps/x',
        'PATCH /api/v1/namespaces/default/configmaps/x?fieldManager=fuzz',
        'DELETE /api/v1/namespaces/default/configmaps/nope',
        'POST /api/v1/namespaces/default/serviceaccounts/default/token',
        'POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      ],
      params: [
        'container',
        'follow',
        'previous',
        'tailLines',
        'limitBytes',
        'sinceSeconds',
        'sinceTime',
        'timestamps',
        'command',
        'stdin',
        'tty',
        'ports',
        'labelSelector',
        'fieldSelector',
        'limit',
        'continue',
        'watch',
        'resourceVersion',
        'resourceVersionMatch',
        'timeoutSeconds',
        'fieldValidation',
        'dryRun',
        'fieldManager',
        'timeout',
      ],
    }),
    send,
    { concurrency: 64, judge },
  );
  const rssAfter = await server.rssAfterGc();
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MiB`;
  t.log(describeStatuses(statuses));
  t.log(
    `${((Date.now() - started) / 1000).toFixed(0)} s; RSS before ${mib(rssBefore)}, after ${mib(rssAfter)}`,
  );
  t.deepEqual(failures.slice(0, 20), [], `${failures.length} bad answers`);
  t.true(server.alive(), server.stderr());
  t.true(rssAfter <= 2 * rssBefore, `RSS grew from ${mib(rssBefore)} to ${mib(rssAfter)}`);
  t.is((await send(raw('GET /healthz HTTP/1.1'))).status, 200);
});

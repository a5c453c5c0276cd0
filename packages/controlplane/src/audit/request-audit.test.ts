import test from 'ava';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { VirtualClock } from '@nodelet/kernel';
import type { RequestAttributes } from '../authorization/attributes.js';
import { microTime, type AuditEvent } from './event.js';
import type { AuditPolicy } from './policy.js';
import { Auditor } from './request-audit.js';

// The events one request gives, by level and stage, on a plain HTTP server standing in for the API
// server's handlers: the shape of upstream's audit.k8s.io/v1 Event.

const user = { name: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'] };

function attrsOf(req: IncomingMessage): RequestAttributes {
  const url = new URL(req.url!, 'http://localhost');
  const m = /^\/api\/v1\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/.exec(url.pathname);
  const watch = url.searchParams.get('watch') === '1';
  const verb = { GET: m?.[3] ? 'get' : watch ? 'watch' : 'list', POST: 'create', PUT: 'update' }[
    req.method!
  ]!;
  return {
    user,
    verb: m ? verb : req.method!.toLowerCase(),
    resourceRequest: !!m,
    path: url.pathname,
    apiGroup: '',
    apiVersion: m ? 'v1' : '',
    resource: m?.[2] ?? '',
    subresource: m?.[4] ?? '',
    namespace: m?.[1] ?? '',
    name: m?.[3] ?? '',
  };
}

const policy: AuditPolicy = {
  rules: [
    { level: 'None', nonResourceURLs: ['/healthz*'] },
    { level: 'RequestResponse', resources: [{ resources: ['configmaps'] }], omitManagedFields: true },
    { level: 'Request', resources: [{ resources: ['services'] }] },
    { level: 'Metadata' },
  ],
};

async function withServer(
  handler: (req: IncomingMessage, res: ServerResponse, body: Buffer, clock: VirtualClock) => void,
  run: (port: number, events: AuditEvent[], clock: VirtualClock) => Promise<void>,
): Promise<void> {
  const events: AuditEvent[] = [];
  const clock = new VirtualClock();
  const bodies = new WeakMap<IncomingMessage, Buffer>();
  const auditor = new Auditor({
    policy,
    sink: { write: (e) => events.push(e) },
    clock,
    bodyOf: (r) => bodies.get(r),
  });
  const server = createServer((req, res) => {
    const audit = auditor.begin(req, res, attrsOf(req));
    audit?.authorized('allow', 'RBAC: allowed by ClusterRoleBinding "dev"');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.set(req, Buffer.concat(chunks));
      // The handler takes 3 ms of (virtual) time.
      void clock.advance(3).then(() => handler(req, res, Buffer.concat(chunks), clock));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await run((server.address() as AddressInfo).port, events, clock);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function call(port: number, method: string, path: string, body?: unknown) {
  return new Promise<{ status: number; text: string; auditId: string }>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, headers: { 'user-agent': 'kubectl/v1.34.0' } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode!, text, auditId: String(res.headers['audit-id']) }),
        );
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Waits (bounded polling) for the ResponseComplete event, which follows the server's 'close'. */
async function settled(events: AuditEvent[], count: number): Promise<void> {
  for (let i = 0; i < 500 && events.length < count; i++) await new Promise((r) => setTimeout(r, 10));
  if (events.length < count) throw new Error(`${events.length} audit events, want ${count}`);
}

const json = (res: ServerResponse, code: number, body: unknown) =>
  res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));

test('Metadata: RequestReceived then ResponseComplete, no objects, upstream field names', async (t) => {
  await withServer(
    (_req, res) => json(res, 200, { kind: 'Secret', data: { password: 'c2VjcmV0' } }),
    async (port, events, clock) => {
      const start = clock.now();
      const r = await call(port, 'GET', '/api/v1/namespaces/default/secrets/db');
      await settled(events, 2);
      t.deepEqual(
        events.map((e) => e.stage),
        ['RequestReceived', 'ResponseComplete'],
      );
      const [received, complete] = events as [AuditEvent, AuditEvent];
      t.deepEqual(complete, {
        kind: 'Event',
        apiVersion: 'audit.k8s.io/v1',
        level: 'Metadata',
        auditID: r.auditId,
        stage: 'ResponseComplete',
        requestURI: '/api/v1/namespaces/default/secrets/db',
        verb: 'get',
        user: { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'] },
        sourceIPs: ['127.0.0.1'],
        userAgent: 'kubectl/v1.34.0',
        objectRef: { resource: 'secrets', namespace: 'default', name: 'db', apiVersion: 'v1' },
        responseStatus: { metadata: {}, code: 200 },
        requestReceivedTimestamp: microTime(start),
        stageTimestamp: microTime(start + 3),
        annotations: {
          'authorization.k8s.io/decision': 'allow',
          'authorization.k8s.io/reason': 'RBAC: allowed by ClusterRoleBinding "dev"',
        },
      });
      t.regex(complete.stageTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      // In upstream's field order, as kube-apiserver writes its lines.
      t.deepEqual(Object.keys(complete), [
        'kind',
        'apiVersion',
        'level',
        'auditID',
        'stage',
        'requestURI',
        'verb',
        'user',
        'sourceIPs',
        'userAgent',
        'objectRef',
        'responseStatus',
        'requestReceivedTimestamp',
        'stageTimestamp',
        'annotations',
      ]);
      t.is(received.auditID, complete.auditID);
      t.is(received.responseStatus, undefined);
      t.false(JSON.stringify(events).includes('c2VjcmV0'));
    },
  );
});

test('an error keeps its Status fields in responseStatus at Metadata', async (t) => {
  await withServer(
    (_req, res) =>
      json(res, 404, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'secrets "x" not found',
        reason: 'NotFound',
        details: { name: 'x', kind: 'secrets' },
        code: 404,
      }),
    async (port, events) => {
      await call(port, 'GET', '/api/v1/namespaces/default/secrets/x');
      await settled(events, 2);
      t.deepEqual(events[1]!.responseStatus, {
        metadata: {},
        status: 'Failure',
        message: 'secrets "x" not found',
        reason: 'NotFound',
        details: { name: 'x', kind: 'secrets' },
        code: 404,
      });
      t.is(events[1]!.responseObject, undefined);
    },
  );
});

test('Request carries the request object; RequestResponse both, without managedFields when omitted', async (t) => {
  const cm = {
    kind: 'ConfigMap',
    metadata: { name: 'c', managedFields: [{ manager: 'kubectl' }] },
    data: { k: 'v' },
  };
  await withServer(
    (_req, res, body) => json(res, 201, JSON.parse(body.toString())),
    async (port, events) => {
      await call(port, 'POST', '/api/v1/namespaces/default/configmaps', cm);
      await call(port, 'POST', '/api/v1/namespaces/default/services', {
        kind: 'Service',
        metadata: { name: 's' },
      });
      await settled(events, 4);
      const [cmDone, svcDone] = events.filter((e) => e.stage === 'ResponseComplete') as [
        AuditEvent,
        AuditEvent,
      ];
      const stripped = { kind: 'ConfigMap', metadata: { name: 'c' }, data: { k: 'v' } };
      t.is(cmDone.level, 'RequestResponse');
      t.deepEqual(cmDone.requestObject, stripped);
      t.deepEqual(cmDone.responseObject, stripped);
      t.is(cmDone.verb, 'create');
      t.is(svcDone.level, 'Request');
      t.deepEqual(svcDone.requestObject, { kind: 'Service', metadata: { name: 's' } });
      t.is(svcDone.responseObject, undefined);
    },
  );
});

test('a watch logs ResponseStarted when its headers go out and ResponseComplete when it ends; None logs nothing', async (t) => {
  await withServer(
    (req, res) => {
      if (req.url!.startsWith('/healthz')) return void res.writeHead(200).end('ok');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      res.end('{"type":"ADDED","object":{}}\n');
    },
    async (port, events) => {
      await call(port, 'GET', '/healthz/ping');
      await call(port, 'GET', '/api/v1/namespaces/default/pods?watch=1');
      await settled(events, 3);
      t.deepEqual(
        events.map((e) => [e.stage, e.verb, e.responseStatus?.code]),
        [
          ['RequestReceived', 'watch', undefined],
          ['ResponseStarted', 'watch', 200],
          ['ResponseComplete', 'watch', 200],
        ],
      );
      t.is(events[2]!.responseObject, undefined);
    },
  );
});

test('an Audit-ID sent by the client is kept', async (t) => {
  await withServer(
    (_req, res) => json(res, 200, {}),
    async (port, events) => {
      await new Promise<void>((resolve) => {
        request({ host: '127.0.0.1', port, path: '/version', headers: { 'audit-id': 'given-id' } }, (res) => {
          t.is(res.headers['audit-id'], 'given-id');
          res.resume().on('end', resolve);
        }).end();
      });
      await settled(events, 2);
      t.deepEqual(
        events.map((e) => [e.auditID, e.objectRef]),
        [
          ['given-id', undefined],
          ['given-id', undefined],
        ],
      );
    },
  );
});

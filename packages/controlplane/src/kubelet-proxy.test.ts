import { request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import test from 'ava';
import WebSocket from 'ws';
import { startKubeletStub, type KubeletStub } from './test-kubelet-stub.js';
import { startCluster, waitFor, type TestCluster } from './test-helpers.js';

/**
 * The API server reaches kubelets for pods/log, nodes/proxy and the upgraded exec/attach/portforward
 * streams, with its kubelet client certificate, at the node's preferred address and kubelet port.
 */
let c: TestCluster;
let kubelet: KubeletStub;

// Every request is audited at Metadata: exec and port-forward are upgrades the audit log follows too.
let auditDir: string;
const auditLog = () => join(auditDir, 'audit.log');

test.before(async () => {
  auditDir = await mkdtemp(join(tmpdir(), 'nodelet-kubelet-proxy-audit-'));
  const policyFile = join(auditDir, 'policy.yaml');
  await writeFile(policyFile, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n');
  c = await startCluster({ audit: { path: auditLog(), policyFile } });
  kubelet = await startKubeletStub(join(c.dataDir, 'pki'));
  const node = await c.api('POST', '/api/v1/nodes', { metadata: { name: 'node-1' } });
  if (node.status !== 201) throw new Error(`node not created: ${node.text}`);
  const status = await c.api(
    'PATCH',
    '/api/v1/nodes/node-1/status',
    {
      status: {
        // ExternalIP would be wrong: InternalIP comes first in the preferred order.
        addresses: [
          { type: 'ExternalIP', address: '192.0.2.1' },
          { type: 'InternalIP', address: '127.0.0.1' },
        ],
        daemonEndpoints: { kubeletEndpoint: { Port: kubelet.port } },
      },
    },
    { 'content-type': 'application/merge-patch+json' },
  );
  if (status.status !== 200) throw new Error(`node status not set: ${status.text}`);
  for (const [name, nodeName] of [
    ['web', 'node-1'],
    ['pending', undefined],
  ] as const) {
    const pod = await c.api('POST', '/api/v1/namespaces/default/pods', {
      metadata: { name },
      spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'app', image: 'busybox' }] },
    });
    if (pod.status !== 201) throw new Error(`pod not created: ${pod.text}`);
  }
});

test.after.always(async () => {
  await kubelet?.close();
  await c?.destroy();
  await rm(auditDir, { recursive: true, force: true });
});

test.serial('pods/log reaches the kubelet with the API server client certificate', async (t) => {
  const res = await c.api('GET', '/api/v1/namespaces/default/pods/web/log?tailLines=5&timestamps=true');
  t.is(res.status, 200, res.text);
  t.is(res.text, 'log of default/web/app\n');
  t.true(kubelet.requests.includes('GET /containerLogs/default/web/app?timestamps=true&tailLines=5'));
});

test.serial('pods/log?follow=true streams as the kubelet writes', async (t) => {
  const { cert, key } = c.cp.adminCredentials;
  const chunks: string[] = [];
  const done = new Promise<IncomingMessage>((resolve, reject) => {
    const req = httpsRequest(
      new URL('/api/v1/namespaces/default/pods/web/log?follow=true', c.cp.url),
      { ca: c.cp.caCert, cert, key },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => chunks.push(d));
        res.on('end', () => resolve(res));
      },
    );
    req.on('error', reject);
    req.end();
  });
  await kubelet.followed;
  kubelet.push('line 2\n', true);
  const res = await done;
  t.is(res.statusCode, 200);
  t.is(chunks.join(''), 'log of default/web/app\nline 2\n');
});

test.serial('nodes/proxy carries the path and query to the kubelet', async (t) => {
  const res = await c.api('GET', '/api/v1/nodes/node-1/proxy/healthz?verbose=1');
  t.is(res.status, 200, res.text);
  t.is(res.text, 'ok');
  t.true(kubelet.requests.includes('GET /healthz?verbose=1'));
  const missing = await c.api('GET', '/api/v1/nodes/node-1/proxy/nothing');
  t.is(missing.status, 404);
});

test.serial('pods/exec over WebSocket is carried both ways with the negotiated subprotocol', async (t) => {
  const { cert, key } = c.cp.adminCredentials;
  const url = `${c.cp.url.replace('https', 'wss')}/api/v1/namespaces/default/pods/web/exec?command=sh&stdin=true&stdout=true`;
  const socket = new WebSocket(url, ['v5.channel.k8s.io', 'v4.channel.k8s.io'], {
    ca: c.cp.caCert,
    cert,
    key,
  });
  const messages: string[] = [];
  const waiters: (() => void)[] = [];
  socket.on('message', (data) => {
    messages.push(data.toString());
    waiters.shift()?.();
  });
  const got = (n: number) =>
    new Promise<void>((resolve) => (messages.length >= n ? resolve() : waiters.push(resolve)));
  const first = got(1);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  t.is(socket.protocol, 'v5.channel.k8s.io');
  await first;
  const second = got(2);
  socket.send('ping');
  await second;
  // The kubelet's query, as upstream's API server writes it.
  t.deepEqual(messages, ['hello from /exec/default/web/app?command=sh&input=1&output=1', 'ping']);
  socket.close();
  // The audit log: received, started with the kubelet's 101, complete when the connection ends.
  const stages = await waitFor(async () => {
    const lines = (await readFile(auditLog(), 'utf8'))
      .split('\n')
      .filter((l) => l.includes('/pods/web/exec?'))
      .map((l) => JSON.parse(l) as { stage: string; responseStatus?: { code: number }; objectRef: object });
    return lines.length === 3 ? lines : undefined;
  }, 'the exec request audited to its end');
  t.deepEqual(
    stages.map((l) => [l.stage, l.responseStatus?.code]),
    [
      ['RequestReceived', undefined],
      ['ResponseStarted', 101],
      ['ResponseComplete', 101],
    ],
  );
  t.deepEqual(stages[0]!.objectRef, {
    resource: 'pods',
    namespace: 'default',
    name: 'web',
    apiVersion: 'v1',
    subresource: 'exec',
  });
});

test.serial('pods/portforward over another upgrade (SPDY) keeps X-Stream-Protocol-Version', async (t) => {
  const { cert, key } = c.cp.adminCredentials;
  const { res, socket } = await new Promise<{ res: IncomingMessage; socket: Duplex }>((resolve, reject) => {
    const req = httpsRequest(new URL('/api/v1/namespaces/default/pods/web/portforward', c.cp.url), {
      method: 'POST',
      ca: c.cp.caCert,
      cert,
      key,
      headers: {
        connection: 'Upgrade',
        upgrade: 'SPDY/3.1',
        'x-stream-protocol-version': 'portforward.k8s.io',
      },
    });
    req.on('upgrade', (r, s) => resolve({ res: r, socket: s }));
    req.on('response', (r) => reject(new Error(`no upgrade: ${r.statusCode}`)));
    req.on('error', reject);
    req.end();
  });
  t.is(res.statusCode, 101);
  t.is(res.headers['x-stream-protocol-version'], 'portforward.k8s.io');
  const echoed = new Promise<string>((resolve) => socket.once('data', (d: Buffer) => resolve(d.toString())));
  socket.write('raw bytes');
  t.is(await echoed, 'raw bytes');
  socket.destroy();
  t.true(kubelet.requests.includes('UPGRADE /portForward/default/web'));
});

test.serial('bad log parameters and unscheduled pods are 400 naming the problem', async (t) => {
  const cases: [string, RegExp][] = [
    ['web/log?tailLines=abc', /tailLines/],
    ['web/log?tailLines=-1', /tailLines/],
    ['web/log?limitBytes=0', /limitBytes/],
    ['web/log?sinceTime=yesterday', /sinceTime/],
    ['web/log?sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z', /sinceSeconds/],
    ['web/log?follow=maybe', /follow/],
    ['web/log?container=nope', /container nope is not valid/],
    ['pending/log', /pod pending does not have a host assigned/],
    ['web/exec?command=sh', /Upgrade request required/],
  ];
  for (const [path, message] of cases) {
    const res = await c.api('GET', `/api/v1/namespaces/default/pods/${path}`);
    t.is(res.status, 400, path);
    t.regex(res.json?.message ?? '', message, path);
  }
});

test.serial('an unreachable kubelet is 503 with the address it tried', async (t) => {
  await c.api('POST', '/api/v1/nodes', { metadata: { name: 'gone' } });
  await c.api(
    'PATCH',
    '/api/v1/nodes/gone/status',
    {
      status: {
        addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
        daemonEndpoints: { kubeletEndpoint: { Port: 1 } },
      },
    },
    { 'content-type': 'application/merge-patch+json' },
  );
  const res = await c.api('GET', '/api/v1/nodes/gone/proxy/healthz');
  t.is(res.status, 503);
  t.regex(res.json?.message ?? '', /127\.0\.0\.1:1/);
  const none = await c.api('GET', '/api/v1/nodes/nowhere/proxy/healthz');
  t.is(none.status, 404);
});

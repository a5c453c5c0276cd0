import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import test from 'ava';
import { describeStatuses, httpFuzzCases, runFuzz, sendRaw } from '@nodelet/kernel/testing';
import { startCluster } from './test-helpers.js';
import { startKubeletStub } from './test-kubelet-stub.js';

// The API server's paths that lead to a kubelet (logs, exec, attach, port-forward, node proxy) and a few of
// its own, mutated: the process never dies, never answers 5xx, and every 4xx says what was wrong.
test('10,000 random and mutated requests: the API server never dies, never answers 5xx, every 4xx has a message', async (t) => {
  const cluster = await startCluster();
  // Node n1's kubelet is a stand-in that checks the API server's client certificate; pod p runs there,
  // so the proxied paths reach a kubelet, not only the API server's own checks.
  const kubelet = await startKubeletStub(join(cluster.dataDir, 'pki'));
  t.teardown(async () => {
    await kubelet.close();
    await cluster.destroy();
  });
  await cluster.api('POST', '/api/v1/nodes', { metadata: { name: 'n1' } });
  const patched = await cluster.api(
    'PATCH',
    '/api/v1/nodes/n1/status',
    {
      status: {
        addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
        daemonEndpoints: { kubeletEndpoint: { Port: kubelet.port } },
      },
    },
    { 'content-type': 'application/merge-patch+json' },
  );
  t.is(patched.status, 200, patched.text);
  const pod = await cluster.api('POST', '/api/v1/namespaces/default/pods', {
    metadata: { name: 'p' },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox' }] },
  });
  t.is(pod.status, 201, pod.text);
  const { cert, key } = cluster.cp.adminCredentials;
  const port = Number(new URL(cluster.cp.url).port);
  let session: Buffer | undefined;
  const open = (): TLSSocket => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      ca: cluster.cp.caCert,
      cert,
      key,
      session,
      servername: 'localhost',
    });
    socket.once('session', (s: Buffer) => (session = s));
    return socket;
  };
  const send = (bytes: Buffer) => sendRaw(open(), bytes, 500, { halfClose: false });

  // Requests the fuzzer found answered 5xx or with a closed connection; replayed first, with what they get now.
  const corpus: [string, number, RegExp][] = [
    ['GET //%healthz HTTP/1.1\r\nHost: x\r\n\r\n', 400, /malformed percent-encoding/],
    [
      'GET /api/v1/namespaces/default/pods?resourceVersion=99999999999999999999999 HTTP/1.1\r\nHost: x\r\n\r\n',
      400,
      /resourceVersion: Invalid value/,
    ],
    [
      'POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n',
      400,
      /malformed HTTP request/,
    ],
  ];
  for (const [raw, status, message] of corpus) {
    const answer = await send(Buffer.from(raw, 'latin1'));
    t.is(answer.status, status, raw);
    t.regex(answer.body, message, raw);
  }

  const { statuses, failures } = await runFuzz(
    httpFuzzCases(10_000, {
      seed: 21,
      paths: [
        '/api/v1/namespaces/default/pods/p/log?container=c&follow=true',
        '/api/v1/nodes/n1/proxy/pods',
        '/api/v1/nodes/n1/proxy/containerLogs/default/p/c',
        '/api/v1/namespaces/default/pods',
        '/api/v1/namespaces/default/configmaps/x',
        '/apis/apps/v1/namespaces/default/deployments?watch=true&timeoutSeconds=1',
        '/healthz',
      ],
      upgradePaths: [
        '/api/v1/namespaces/default/pods/p/exec?command=sh&stdin=true&stdout=true&tty=true',
        '/api/v1/namespaces/default/pods/p/attach?container=c&stdout=true',
        '/api/v1/namespaces/default/pods/p/portforward?ports=80',
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
        'timeoutSeconds',
      ],
    }),
    send,
  );
  t.log(describeStatuses(statuses));
  t.deepEqual(failures.slice(0, 20), [], `${failures.length} bad answers`);
  t.is((await cluster.api('GET', '/healthz')).status, 200);
});

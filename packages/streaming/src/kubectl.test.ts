// The real kubectl against a minimal API server whose pods/exec is served by handleExecUpgrade (the
// path the kubelet's /exec takes once the API server has proxied the upgrade). kubectl ≥ 1.30 speaks
// WebSocket v5 first. Without kubectl: skipped with one line, or failed when CI=true.
import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scriptedHandler } from './test-exec-handler.js';
import { handleExecUpgrade, handlePortForwardUpgrade } from './upgrade.js';
import { spawn } from 'node:child_process';
import type { Duplex } from 'node:stream';

const kubectl = await new Promise<boolean>((resolve) =>
  execFile('kubectl', ['version', '--client'], (err) => resolve(!err)),
);

const POD = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default', uid: 'u-1' },
  spec: { containers: [{ name: 'app', image: 'busybox' }] },
  status: { phase: 'Running', containerStatuses: [{ name: 'app', ready: true, state: { running: {} } }] },
};

/** Answers any request on a forwarded connection with a page naming the port. */
const pageServer = {
  forward(port: number, connection: Duplex): Promise<void> {
    return new Promise((resolve) => {
      connection.once('data', () => {
        const body = `page on port ${port}\n`;
        connection.end(
          `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        );
      });
      connection.on('close', () => resolve());
      connection.on('error', () => resolve());
    });
  },
};

const JSON_ROUTES: Record<string, unknown> = {
  '/api': { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] },
  '/apis': { kind: 'APIGroupList', apiVersion: 'v1', groups: [] },
  '/api/v1': {
    kind: 'APIResourceList',
    groupVersion: 'v1',
    resources: [
      {
        name: 'pods',
        singularName: 'pod',
        namespaced: true,
        kind: 'Pod',
        verbs: ['get', 'list'],
        shortNames: ['po'],
      },
      {
        name: 'pods/exec',
        singularName: '',
        namespaced: true,
        kind: 'PodExecOptions',
        verbs: ['create', 'get'],
      },
    ],
  },
  '/api/v1/namespaces/default/pods/web': POD,
};

async function apiServer() {
  const upgrades: string[] = [];
  const server = http.createServer((req, res) => {
    const body = JSON_ROUTES[new URL(req.url ?? '/', 'http://x').pathname];
    if (body === undefined) {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'NotFound',
          code: 404,
        }),
      );
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
  });
  server.on('upgrade', (req, socket, head) => {
    upgrades.push(String(req.headers.upgrade).toLowerCase());
    if (req.url?.startsWith('/api/v1/namespaces/default/pods/web/exec?'))
      handleExecUpgrade(req, socket, head, scriptedHandler);
    else if (req.url?.startsWith('/api/v1/namespaces/default/pods/web/portforward')) {
      upgrades.push(`portforward ${String(req.headers['sec-websocket-protocol'] ?? req.headers.upgrade)}`);
      handlePortForwardUpgrade(req, socket, head, pageServer);
    } else socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const dir = await mkdtemp(join(tmpdir(), 'kubectl-exec-'));
  const kubeconfig = join(dir, 'config');
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'c', cluster: { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` } },
      ],
      users: [{ name: 'u', user: {} }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u', namespace: 'default' } }],
      'current-context': 'x',
    }),
  );
  return { server, kubeconfig, cacheDir: join(dir, 'cache'), upgrades };
}

function run(args: string[], env: NodeJS.ProcessEnv, input?: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      'kubectl',
      args,
      { env: { ...process.env, ...env }, timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
    child.stdin?.end(input ?? '');
  });
}

if (!kubectl) {
  if (process.env.CI === 'true')
    test('kubectl is required in CI (CI=true)', (t) => t.fail('kubectl not found on PATH'));
  else test.skip('kubectl not found on PATH; skipping the kubectl exec test', () => undefined);
} else {
  test('kubectl exec: stdout, stdin, stderr and the exit code, over WebSocket v5 and over SPDY', async (t) => {
    const { server, kubeconfig, cacheDir, upgrades } = await apiServer();
    t.teardown(() => server.close());
    const base = ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir];
    for (const [transport, env] of [
      ['websocket', {}],
      ['spdy', { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' }],
    ] as const) {
      const echo = await run([...base, 'exec', 'web', '-c', 'app', '--', 'echo', 'hi'], env);
      t.deepEqual(
        { code: echo.code, stdout: echo.stdout },
        { code: 0, stdout: 'hi\n' },
        `${transport}: ${echo.stderr}`,
      );
      const failed = await run([...base, 'exec', 'web', '--', 'fail', '3'], env);
      t.is(failed.code, 3, `${transport}: ${failed.stderr}`);
      t.regex(failed.stderr, /oops/);
      const cat = await run([...base, 'exec', '-i', 'web', '--', 'cat'], env, 'typed\n');
      t.is(cat.stdout, 'typed\n', `${transport}: ${cat.stderr}`);
      t.deepEqual(upgrades.splice(0), Array(3).fill(transport === 'spdy' ? 'spdy/3.1' : 'websocket'));
    }
  });

  test('kubectl port-forward: an HTTP GET through the forwarded 127.0.0.1 port returns the pod page', async (t) => {
    const { server, kubeconfig, cacheDir, upgrades } = await apiServer();
    t.teardown(() => server.close());
    const child = spawn(
      'kubectl',
      ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, 'port-forward', 'pod/web', ':8080'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    t.teardown(() => child.kill());
    let output = '';
    const localPort = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`kubectl port-forward did not start: ${output}`)),
        20_000,
      );
      const onData = (d: Buffer) => {
        output += d.toString();
        const m = /Forwarding from 127\.0\.0\.1:(\d+) -> 8080/.exec(output);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.on('exit', (code) => reject(new Error(`kubectl port-forward exited ${code}: ${output}`)));
    });
    const page = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: localPort, path: '/' }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve(body));
        })
        .on('error', reject);
    });
    t.is(page, 'page on port 8080\n');
    // kubectl 1.31+ tunnels SPDY in WebSocket first, falling back to SPDY only if that upgrade fails.
    t.deepEqual(upgrades, ['websocket', 'portforward SPDY/3.1+portforward.k8s.io']);
  });
}

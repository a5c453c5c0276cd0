import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import test from 'ava';
import { systemEnv } from '@nodelet/proxy';
import { netnsSupport } from '@nodelet/proxy/testing';
import { NodeletUp, requireKubectl, run } from '../e2e-containerd/nodelet-up.js';
import { TestChild } from '../e2e-containerd/test-child.js';
import { freePort, MAIN, pollUntil } from '../test-helpers.js';
import { TestNetns } from './cluster.js';

/**
 * The userspace proxy with `nodelet up`, no root needed: a Service's port answers on the proxy's listen
 * address (127.0.0.1) and carries the connection to the Service's endpoint; with no endpoint left the
 * port refuses connections. Then the same through `nodelet proxy --kubeconfig`, the standalone proxy
 * watching the cluster of `nodelet up --proxy-mode none`.
 *
 * The endpoint is an HTTP server of the test on 127.0.0.1, in an EndpointSlice written by hand: every
 * packet stays on loopback. As root everything runs inside a network namespace of the test's own (the
 * proxy would otherwise clean the host's rules of the other modes when it starts).
 */
const isRoot = process.getuid?.() === 0;
const kubectl = requireKubectl(test);
const netns = isRoot ? await netnsSupport() : { ok: true, reason: '' };
if (!netns.ok) {
  if (process.env.CI === 'true')
    test('the userspace proxy tests need ip netns as root in CI', (t) => t.fail(netns.reason));
  else
    test.skip(`ip netns does not work here (${netns.reason}); skipping the userspace proxy tests`, () =>
      undefined);
}

/** An HTTP server answering every request with its text. */
const SERVER = `
const http = require('node:http');
const [port, text] = process.argv.slice(1);
http.createServer((q, r) => r.end(text + '\\n')).listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\\n'));
`;

/** One GET, printed as JSON: {status, body} or {error: code}. */
const CLIENT = `
const http = require('node:http');
const [host, port] = process.argv.slice(1);
const req = http.get({ host, port: Number(port), path: '/', agent: false, timeout: 3000 }, (res) => {
  let body = '';
  res.on('data', (d) => (body += d));
  res.on('end', () => process.stdout.write(JSON.stringify({ status: res.statusCode, body })));
});
req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
req.on('error', (e) => process.stdout.write(JSON.stringify({ error: e.code || e.message })));
`;

if (kubectl && netns.ok) {
  const ctx: { ns?: TestNetns; dataDir?: string; ups: NodeletUp[]; children: TestChild[] } = {
    ups: [],
    children: [],
  };

  test.before(async () => {
    if (isRoot) ctx.ns = await TestNetns.create();
    ctx.dataDir = NodeletUp.newDataDir().dataDir;
  });

  test.after.always(async () => {
    for (const c of ctx.children) await c.stop(5_000);
    for (const up of ctx.ups) await up.stop();
    if (ctx.dataDir) rmSync(ctx.dataDir, { recursive: true, force: true });
    await ctx.ns?.destroy();
  });

  /** Starts a node script (on the host or in the namespace), waiting for it to print `ready`. */
  async function node(args: string[], ready: string): Promise<{ child: TestChild; output: () => string }> {
    const child: ChildProcess = ctx.ns
      ? spawn('ip', ['netns', 'exec', ctx.ns.name, process.execPath, ...args], { env: systemEnv() })
      : spawn(process.execPath, args, { env: systemEnv() });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const proc = new TestChild(child);
    ctx.children.push(proc);
    await pollUntil(
      `${args[0]} to start`,
      async () => {
        if (proc.exited) throw new Error(`exited: ${out}`);
        return out.includes(ready) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50, describe: () => out },
    );
    return { child: proc, output: () => out };
  }

  async function get(port: number): Promise<{ status?: number; body?: string; error?: string }> {
    const r = await run(ctx.ns?.name, process.execPath, ['-e', CLIENT, '127.0.0.1', String(port)]);
    return JSON.parse(r.stdout || '{}');
  }

  /** The Service `echo` (no selector) on `port`, and its endpoint 127.0.0.1:`target` by hand. */
  const echo = (port: number, target: number) => `apiVersion: v1
kind: Service
metadata: {name: echo}
spec:
  ports: [{name: http, port: ${port}, targetPort: ${target}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: echo-1, labels: {kubernetes.io/service-name: echo}}
addressType: IPv4
endpoints: [{addresses: ["127.0.0.1"], conditions: {ready: true}}]
ports: [{name: http, port: ${target}, protocol: TCP}]
`;

  const state: { port?: number } = {};

  test.serial(
    'nodelet up --proxy-mode userspace: the Service port answers on 127.0.0.1 with its endpoint; without endpoints it refuses',
    async (t) => {
      const target = await freePort();
      await node(['-e', SERVER, String(target), 'hello from the endpoint'], 'ready');
      const up = await NodeletUp.start(['--proxy-mode', 'userspace', '--hostname-override', 'userspace-1'], {
        dataDir: ctx.dataDir!,
        netns: ctx.ns?.name,
      });
      ctx.ups.push(up);
      t.regex(
        up.stdout(),
        /^proxy: userspace mode, node userspace-1, healthz http:\/\/127\.0\.0\.1:\d+\/healthz$/m,
      );
      state.port = await freePort();
      await up.kubectlOk(['apply', '-f', '-'], echo(state.port, target));
      const answer = await pollUntil(
        'the Service port to answer',
        async () => {
          const r = await get(state.port!);
          return r.body ? r : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 100, describe: () => up.stderr().slice(-3000) },
      );
      t.deepEqual(answer, { status: 200, body: 'hello from the endpoint\n' });

      await up.kubectlOk(['delete', 'endpointslice', 'echo-1']);
      const refused = await pollUntil(
        'the port to refuse connections',
        async () => {
          const r = await get(state.port!);
          return r.error ? r : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 100 },
      );
      t.deepEqual(refused, { error: 'ECONNREFUSED' });
      t.is((await up.stop()).code, 0);
    },
  );

  test.serial(
    'nodelet proxy --kubeconfig: the standalone proxy watches the cluster of nodelet up --proxy-mode none',
    async (t) => {
      if (!state.port) return t.fail('needs the Service of the previous test');
      const up = await NodeletUp.start(['--proxy-mode', 'none', '--hostname-override', 'userspace-1'], {
        dataDir: ctx.dataDir!,
        netns: ctx.ns?.name,
      });
      ctx.ups.push(up);
      t.regex(up.stdout(), /^proxy: none$/m);
      const target = Number(
        (await up.kubectlOk(['get', 'service', 'echo', '-o', 'jsonpath={.spec.ports[0].targetPort}'])).trim(),
      );
      await up.kubectlOk(['apply', '-f', '-'], echo(state.port, target));
      const proxy = await node(
        [
          MAIN,
          'proxy',
          '--kubeconfig',
          up.kubeconfig,
          '--mode',
          'userspace',
          '--hostname-override',
          'userspace-1',
          '--healthz-bind-address',
          '127.0.0.1:0',
          '--metrics-bind-address',
          '127.0.0.1:0',
        ],
        'nodelet proxy running',
      );
      const answer = await pollUntil(
        'the Service port to answer',
        async () => {
          const r = await get(state.port!);
          return r.body ? r : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 100, describe: proxy.output },
      );
      t.deepEqual(answer, { status: 200, body: 'hello from the endpoint\n' });
      t.is((await proxy.child.stop(10_000)).code, 0, proxy.output());
    },
  );
}

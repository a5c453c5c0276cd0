import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLogger, MemorySink, RealClock } from '@nodelet/kernel';
import { KubeletServerCapability } from '@nodelet/kubelet';
import { buildKernel, parseKubeletArgs } from './kubelet-command.js';
import { resolveKubeletSetup } from './kubelet-setup.js';
import { pollUntil } from './test-helpers.js';

// A kubelet joined to the embedded control plane serves its API as a cluster's kubelet does: the
// cluster CA's certificates and the API server's TokenReviews authenticate, its SubjectAccessReviews
// authorize. The control plane is loaded at run time (the CLI does not depend on it for this).
const specifier = '@nodelet/controlplane';
const controlPlane = await import(specifier).catch(() => undefined);
const cpTest = controlPlane?.ControlPlane ? test : test.skip;

function get(port: number, path: string, o: { cert?: string; key?: string; token?: string } = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    request(
      {
        host: '127.0.0.1',
        port,
        path,
        agent: false,
        rejectUnauthorized: false,
        ...(o.cert ? { cert: o.cert, key: o.key } : {}),
        headers: o.token ? { authorization: `Bearer ${o.token}` } : {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    )
      .on('error', reject)
      .end();
  });
}

cpTest(
  'the kubelet API of a joined kubelet: 401, the admin certificate 200, a bootstrap token and a view user 403 from the control plane',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'nodelet-kubelet-api-'));
    const sink = new MemorySink();
    const logger = createLogger({ sink: sink.sink });
    const cp = new controlPlane.ControlPlane({
      dataDir: join(dir, 'cp'),
      clock: new RealClock(),
      logger,
      port: 0,
    });
    await cp.start();
    t.teardown(async () => {
      await cp.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    writeFileSync(join(dir, 'ca.crt'), cp.caCert);
    const { flags } = parseKubeletArgs([
      '--kubeconfig',
      await cp.nodeKubeconfig('api-1'),
      '--hostname-override=api-1',
      `--root-dir=${join(dir, 'root')}`,
      '--read-only-port=0',
      '--port=0',
      `--client-ca-file=${join(dir, 'ca.crt')}`,
      '--authentication-token-webhook=true',
      '--anonymous-auth=false',
      '--authorization-mode=Webhook',
    ]);
    const setup = resolveKubeletSetup(flags, {
      cwd: dir,
      hostname: 'api-1',
      isRoot: false,
      homeDir: dir,
      ipv4: ['127.0.0.1'],
      logger,
    });
    setup.kubelet.podLogsDir = join(dir, 'pods');
    const kernel = await buildKernel(setup, logger);
    await kernel.start();
    // Another part's endpoint (streaming registers exec like this) replaces the placeholder.
    kernel.get(KubeletServerCapability).routes.addRoute({
      path: '/exec/',
      methods: ['GET', 'POST'],
      handler: (_req, res) => void res.writeHead(200).end('exec here'),
    });
    t.teardown(() => kernel.stop());
    const port = kernel.get(KubeletServerCapability).securePort()!;

    t.deepEqual(await get(port, '/pods'), { status: 401, body: 'Unauthorized' });
    // Until the kubelet has its API connection (client-node loads in about a second) reviews cannot be
    // asked: 500 Authorization error, as upstream's kubelet has no server before its client.
    const admin = await pollUntil(
      'the kubelet to authorize with the control plane',
      async () => {
        const r = await get(port, '/pods', cp.adminCredentials);
        return r.status === 200 ? r : undefined;
      },
      {
        timeoutMs: 30_000,
        intervalMs: 100,
        describe: () => JSON.stringify(sink.find('Review failed').map((r) => r.fields)),
      },
    );
    t.is(JSON.parse(admin.body).kind, 'PodList');
    t.deepEqual(await get(port, '/exec/default/web/main', cp.adminCredentials), {
      status: 200,
      body: 'exec here',
    });
    const configz = JSON.parse((await get(port, '/configz', cp.adminCredentials)).body).kubeletconfig;
    t.like(configz, {
      port: 0,
      readOnlyPort: 0,
      authentication: {
        x509: { clientCAFile: join(dir, 'ca.crt') },
        webhook: { enabled: true, cacheTTL: '2m0s' },
        anonymous: { enabled: false },
      },
      authorization: {
        mode: 'Webhook',
        webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' },
      },
    });
    // A bootstrap token authenticates (TokenReview) as system:bootstrap:<id>, which may not read nodes/proxy.
    const token = /token: (\S+)/.exec(readFileSync(cp.bootstrapKubeconfigPath, 'utf8'))![1]!;
    const [id] = token.split('.');
    t.deepEqual(await get(port, '/pods', { token }), {
      status: 403,
      body: `Forbidden (user=system:bootstrap:${id}, verb=get, resource=nodes, subresource(s)=[pods proxy])\n`,
    });
    // User certificates: RBAC decides. A `view` user may not reach the kubelet (no nodes/proxy); a user
    // bound to system:kubelet-api-admin may.
    const userCert = async (name: string, clusterRole: string) => {
      const text = readFileSync(await cp.userKubeconfig(name), 'utf8');
      cp.bindUser(name, clusterRole);
      const field = (f: string) =>
        Buffer.from(new RegExp(`${f}: (\\S+)`).exec(text)![1]!, 'base64').toString();
      return { cert: field('client-certificate-data'), key: field('client-key-data') };
    };
    t.deepEqual(await get(port, '/pods', await userCert('alice', 'view')), {
      status: 403,
      body: 'Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])\n',
    });
    const operator = await get(port, '/pods', await userCert('bob', 'system:kubelet-api-admin'));
    t.is(operator.status, 200, operator.body);
    t.deepEqual(await get(port, '/healthz', { token: 'abcdef.0123456789abcdef' }), {
      status: 401,
      body: 'Unauthorized',
    });
  },
);

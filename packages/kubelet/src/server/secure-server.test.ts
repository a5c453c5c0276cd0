import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import test, { type ExecutionContext } from 'ava';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { Kubelet } from '../kubelet.js';
import { TestSource } from '../test-harness.js';
import { defaultAuthentication } from './authn.js';
import { defaultAuthorization } from './authz.js';
import { type KubeletServerConfig, startKubeletServers } from './kubelet-server.js';
import type { ReviewClient, SubjectAccessReview, TokenReview } from './review-client.js';
import { selfSignedCertificate } from './serving-cert.js';
import { httpsGet } from './test-https.js';
import { testCa, testClientCert } from './test-pki.js';

/** A stub API server: tokens `good-*` are users named after them; SARs answered by `allow`. */
class StubReviews implements ReviewClient {
  tokenReviews: TokenReview[] = [];
  accessReviews: SubjectAccessReview[] = [];
  constructor(private readonly allow: (r: SubjectAccessReview['spec']) => boolean) {}
  async createTokenReview(review: TokenReview): Promise<TokenReview> {
    this.tokenReviews.push(review);
    const token = review.spec.token ?? '';
    return token.startsWith('good-')
      ? { ...review, status: { authenticated: true, user: { username: token.slice(5), groups: ['tokens'] } } }
      : { ...review, status: { authenticated: false, error: 'token unknown' } };
  }
  async createSubjectAccessReview(review: SubjectAccessReview): Promise<SubjectAccessReview> {
    this.accessReviews.push(review);
    return { ...review, status: { allowed: this.allow(review.spec) } };
  }
}

async function setup(
  t: ExecutionContext,
  configure: (c: KubeletServerConfig) => void,
  allow = (_: SubjectAccessReview['spec']) => true,
) {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const runtime = new FakeRuntime({ clock, logger });
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-secure-'));
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus: new EventBus(clock, logger), clock, logger },
    {
      nodeName: 'node1',
      hostIP: '127.0.0.1',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      sources: [new TestSource()],
    },
  );
  await kubelet.start();
  const ca = await testCa();
  writeFileSync(join(dir, 'ca.crt'), ca.cert);
  const config: KubeletServerConfig = {
    address: '127.0.0.1',
    port: 0,
    readOnlyPort: 0,
    certDir: join(dir, 'pki'),
    authentication: { ...defaultAuthentication(), x509: { clientCAFile: join(dir, 'ca.crt') } },
    authorization: defaultAuthorization(),
  };
  configure(config);
  const reviews = new StubReviews(allow);
  const servers = await startKubeletServers(kubelet, config, logger, { reviews: () => reviews });
  t.teardown(async () => {
    await servers.close();
    await kubelet.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { port: servers.securePort!, ca, reviews, clock, servers, dir };
}

test('without credentials 401 Unauthorized; a client certificate of the CA is its CN and O', async (t) => {
  const { port, ca, reviews } = await setup(t, () => {});
  t.like(await httpsGet(port, '/pods'), { status: 401, body: 'Unauthorized' });
  const alice = await testClientCert(ca, 'alice', ['devs', 'ops']);
  const ok = await httpsGet(port, '/pods', alice);
  t.is(ok.status, 200);
  t.is(JSON.parse(ok.body).kind, 'PodList');
  t.deepEqual(reviews.accessReviews[0]!.spec, {
    resourceAttributes: { verb: 'get', version: 'v1', resource: 'nodes', subresource: 'pods', name: 'node1' },
    user: 'alice',
    groups: ['devs', 'ops', 'system:authenticated'],
  });
  // A certificate of another CA is not a user.
  const other = await testClientCert(await testCa('other-ca'), 'mallory');
  t.like(await httpsGet(port, '/pods', other), { status: 401, body: 'Unauthorized' });
});

test('a user the SubjectAccessReview denies gets 403 with upstream body; answers are cached', async (t) => {
  const { port, ca, reviews, clock } = await setup(
    t,
    () => {},
    (spec) => spec.user !== 'bob',
  );
  const bob = await testClientCert(ca, 'bob');
  const denied = await httpsGet(port, '/pods', bob);
  t.is(denied.status, 403);
  t.is(denied.body, 'Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])\n');
  t.is(
    (await httpsGet(port, '/containerLogs/default/x/y', bob)).body,
    'Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[proxy])\n',
  );
  t.is(
    (await httpsGet(port, '/logs/', { ...bob, method: 'DELETE' })).body,
    'Forbidden (user=bob, verb=delete, resource=nodes, subresource(s)=[log])\n',
  );
  t.is(reviews.accessReviews.length, 3, 'pods, proxy, log: the second proxy answer came from the cache');
  // Denials are cached 30 s, then asked again.
  await httpsGet(port, '/pods', bob);
  t.is(reviews.accessReviews.length, 3);
  await clock.advance(31_000);
  await httpsGet(port, '/pods', bob);
  t.is(reviews.accessReviews.length, 5);
});

test('a bearer token is reviewed once per cache TTL; an unknown one is 401', async (t) => {
  const { port, reviews, clock } = await setup(t, () => {});
  t.is((await httpsGet(port, '/pods', { token: 'good-tina' })).status, 200);
  t.is((await httpsGet(port, '/pods', { token: 'good-tina' })).status, 200);
  t.is(reviews.tokenReviews.length, 1, 'cached');
  t.deepEqual(reviews.tokenReviews[0], {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    spec: { token: 'good-tina' },
  });
  t.is(reviews.accessReviews.at(-1)!.spec.user, 'tina');
  t.deepEqual(reviews.accessReviews.at(-1)!.spec.groups, ['tokens', 'system:authenticated']);
  await clock.advance(121_000);
  await httpsGet(port, '/pods', { token: 'good-tina' });
  t.is(reviews.tokenReviews.length, 2, 'reviewed again after 2 min');
  t.like(await httpsGet(port, '/pods', { token: 'bad' }), { status: 401, body: 'Unauthorized' });
});

test('anonymous: off → 401; on → system:anonymous, and an invalid token is still 401', async (t) => {
  const off = await setup(t, () => {});
  t.is((await httpsGet(off.port, '/healthz')).status, 401);
  const on = await setup(
    t,
    (c) => (c.authentication.anonymous.enabled = true),
    (spec) => spec.user !== 'system:anonymous' || spec.resourceAttributes?.subresource === 'healthz',
  );
  t.like(await httpsGet(on.port, '/healthz'), { status: 200, body: 'ok' });
  t.deepEqual(on.reviews.accessReviews[0]!.spec.groups, ['system:unauthenticated']);
  t.is(
    (await httpsGet(on.port, '/pods')).body,
    'Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[pods proxy])\n',
  );
  t.is((await httpsGet(on.port, '/healthz', { token: 'bad' })).status, 401);
  // Without the token webhook a bearer token is no credential at all: anonymous.
  const noWebhook = await setup(t, (c) => {
    c.authentication.anonymous.enabled = true;
    c.authentication.webhook.enabled = false;
  });
  t.is((await httpsGet(noWebhook.port, '/healthz', { token: 'good-tina' })).status, 200);
  t.is(noWebhook.reviews.tokenReviews.length, 0);
  t.is(noWebhook.reviews.accessReviews[0]!.spec!.user, 'system:anonymous');
});

test('AlwaysAllow lets any authenticated user in without a review', async (t) => {
  const { port, ca, reviews } = await setup(t, (c) => (c.authorization.mode = 'AlwaysAllow'));
  t.is((await httpsGet(port, '/configz', await testClientCert(ca, 'x'))).status, 200);
  t.is(reviews.accessReviews.length, 0);
});

function upgrade(port: number, path: string, cert?: { cert: string; key: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      agent: false,
      rejectUnauthorized: false,
      ...(cert ?? {}),
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

test('upgrade requests (exec, attach, portForward) pass authentication and authorization first', async (t) => {
  const { port, ca, reviews, servers } = await setup(
    t,
    () => {},
    (spec) => spec.user !== 'bob',
  );
  t.is(await upgrade(port, '/exec/default/web/main?command=sh'), 401);
  t.is(await upgrade(port, '/exec/default/web/main?command=sh', await testClientCert(ca, 'bob')), 403);
  const alice = await testClientCert(ca, 'alice');
  t.is(await upgrade(port, '/exec/default/web/main?command=sh', alice), 501, 'the placeholder');
  t.is(reviews.accessReviews.at(-1)!.spec.resourceAttributes?.subresource, 'proxy');
  servers.routes.addUpgradeRoute('/exec/', (_req, socket) => {
    socket.end('HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n');
  });
  t.is(await upgrade(port, '/exec/default/web/main', alice), 101);
  servers.routes.addUpgradeRoute('/attach/', () => {
    throw new Error('boom');
  });
  t.is(await upgrade(port, '/attach/default/web/main', alice), 500, 'a throwing handler is a 500');
  t.is((await httpsGet(port, '/healthz', alice)).status, 200, 'and the server goes on');
});

function peerCommonName(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cn = socket.getPeerCertificate().subject.CN;
      socket.end();
      resolve(String(cn));
    });
    socket.on('error', reject);
  });
}

test('the self-signed serving certificate is CN <hostname>@<time>; setServingCertificate swaps it for new connections', async (t) => {
  const { port, servers } = await setup(t, () => {});
  t.regex(await peerCommonName(port), /^node1@\d+$/);
  const next = await selfSignedCertificate('rotated.example', ['127.0.0.1'], Date.now());
  servers.secure!.setServingCertificate(next.certPem, next.keyPem);
  t.regex(await peerCommonName(port), /^rotated\.example@\d+$/);
  t.throws(() => servers.secure!.setServingCertificate('not a cert', 'nor a key'), {
    message: /not installed/,
  });
  t.regex(await peerCommonName(port), /^rotated\.example@\d+$/, 'a bad pair leaves the current one');
});

test('a handler that throws is a 500 with its message; bad escapes are 400 after authentication', async (t) => {
  const { port, ca, servers } = await setup(t, (c) => (c.authorization.mode = 'AlwaysAllow'));
  const alice = await testClientCert(ca, 'alice');
  servers.routes.addRoute({
    path: '/boom',
    handler: () => {
      throw new Error('kaboom');
    },
  });
  t.like(await httpsGet(port, '/boom', alice), { status: 500, body: 'kaboom\n' });
  t.is((await httpsGet(port, '/containerLogs/%ff/x/y')).status, 401);
  t.like(await httpsGet(port, '/containerLogs/%ff/x/y', alice), {
    status: 400,
    body: 'malformed percent-escape in the path "/containerLogs/%ff/x/y"\n',
  });
  t.is((await httpsGet(port, '/pods', { ...alice, method: 'POST' })).status, 405);
  t.is((await httpsGet(port, '/runningpods/', alice)).status, 200);
  t.deepEqual(JSON.parse((await httpsGet(port, '/configz', alice)).body), { kubeletconfig: {} });
});

test('tlsMinVersion and tlsCipherSuites reach the TLS layer', async (t) => {
  const { port } = await setup(t, (c) => {
    c.tlsMinVersion = 'TLSv1.3';
  });
  const handshake = (o: { maxVersion?: 'TLSv1.2' | 'TLSv1.3' }) =>
    new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...o }, () => {
        const version = socket.getProtocol() ?? '';
        socket.end();
        resolve(version);
      });
      socket.on('error', (err) => resolve(`error: ${err.message}`));
    });
  t.is(await handshake({}), 'TLSv1.3');
  t.regex(await handshake({ maxVersion: 'TLSv1.2' }), /^error: /);
});

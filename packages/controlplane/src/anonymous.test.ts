import test from 'ava';
import { apiRequest, startCluster, type TestCluster } from './test-helpers.js';

// A request without credentials: the health and version paths answer it, as upstream's anonymous
// authenticator (limited to those paths) and the system:public-info-viewer binding do; anything else is 401.

let c: TestCluster;
test.before(async () => {
  c = await startCluster();
});
test.after.always(() => c?.destroy());

const anonymous = (method: string, path: string) => apiRequest(c.cp, {}, method, path);

test('without credentials /healthz, /livez, /readyz and /version answer 200', async (t) => {
  for (const path of ['/healthz', '/livez', '/readyz', '/version']) {
    const r = await anonymous('GET', path);
    t.is(r.status, 200, `${path}: ${r.text}`);
  }
  t.is((await anonymous('GET', '/version')).json.major, '1');
});

test('without credentials every other path is 401 Unauthorized, saying what authenticates', async (t) => {
  for (const path of ['/api', '/apis', '/api/v1/namespaces', '/healthzz', '/openapi/v2', '/version2']) {
    const r = await anonymous('GET', path);
    t.is(r.status, 401, `${path}: ${r.text}`);
    t.is(r.json.reason, 'Unauthorized');
    t.regex(r.json.message, /a client certificate signed by the cluster CA/);
  }
});

test('an anonymous path with a bad bearer token is 401: a credential that fails is not anonymous', async (t) => {
  const r = await apiRequest(c.cp, { headers: { authorization: 'Bearer nope' } }, 'GET', '/healthz');
  t.is(r.status, 401);
});

test('anonymous is off when no path is given for it', async (t) => {
  const off = await startCluster({ anonymousPaths: [] });
  t.teardown(() => off.destroy());
  const r = await apiRequest(off.cp, {}, 'GET', '/healthz');
  t.is(r.status, 401);
});

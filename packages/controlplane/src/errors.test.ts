import test from 'ava';
import { startCluster, type TestCluster, kubectlTests } from './test-helpers.js';

const kubectlTest = kubectlTests(test);

// Bad input gets upstream's Status codes and reasons with messages that name the field; nothing is
// stored; the server keeps serving.

let c: TestCluster;

test.before(async () => {
  c = await startCluster({ controllers: { scheduler: false, endpointSlices: false } });
});

test.after.always(async () => {
  await c?.destroy();
});

const pod = (
  name: string | undefined,
  spec: unknown = { containers: [{ name: 'c', image: 'busybox' }] },
) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: name === undefined ? {} : { name },
  spec,
});

async function podCount(): Promise<number> {
  return (await c.api('GET', '/api/v1/pods')).json.items.length;
}

kubectlTest('a pod without a name is Invalid (422) and names metadata.name', async (t) => {
  const r = await c.api('POST', '/api/v1/namespaces/default/pods', pod(undefined));
  t.is(r.status, 422);
  t.is(r.json.kind, 'Status');
  t.is(r.json.reason, 'Invalid');
  t.is(r.json.details.kind, 'Pod');
  t.deepEqual(r.json.details.causes, [
    {
      reason: 'FieldValueRequired',
      message: 'Required value: name or generateName is required',
      field: 'metadata.name',
    },
  ]);
  const kubectl = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod(undefined)) });
  t.is(kubectl.code, 1);
  t.regex(
    kubectl.stderr,
    /The Pod "" is invalid: metadata\.name: Required value: name or generateName is required/,
  );
});

kubectlTest('a pod with 0 containers is Invalid (422) and names spec.containers', async (t) => {
  const r = await c.api('POST', '/api/v1/namespaces/default/pods', pod('empty', { containers: [] }));
  t.is(r.status, 422);
  t.is(r.json.message, 'Pod "empty" is invalid: spec.containers: Required value');
  t.deepEqual(r.json.details.causes, [
    { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.containers' },
  ]);
  const kubectl = await c.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify(pod('empty', { containers: [] })),
  });
  t.is(kubectl.code, 1);
  t.regex(kubectl.stderr, /The Pod "empty" is invalid: spec\.containers: Required value/);
});

kubectlTest('a value of the wrong type is a BadRequest (400) naming the field', async (t) => {
  const r = await c.api('POST', '/api/v1/namespaces/default/pods', pod('typed', { containers: 'nginx' }));
  t.is(r.status, 400);
  t.is(r.json.reason, 'BadRequest');
  t.regex(
    r.json.message,
    /^Pod in version "v1" cannot be handled as a Pod: spec\.containers: Invalid value: "nginx": must be a list/,
  );
  const port = await c.api(
    'POST',
    '/api/v1/namespaces/default/pods',
    pod('port', { containers: [{ name: 'c', image: 'x', ports: [{ containerPort: '80' }] }] }),
  );
  t.is(port.status, 400);
  t.regex(
    port.json.message,
    /spec\.containers\[0\]\.ports\[0\]\.containerPort: Invalid value: "80": must be an integer/,
  );
  const kubectl = await c.kubectl(['apply', '-f', '-'], {
    input: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: typed\nspec:\n  containers: nginx\n',
  });
  t.is(kubectl.code, 1);
  t.regex(kubectl.stderr, /spec\.containers/);
});

kubectlTest(
  'an unknown field is refused with fieldValidation=Strict (kubectl default) and reported with Warn',
  async (t) => {
    const body = pod('strict', { containers: [{ name: 'c', image: 'x', imagePullPolcy: 'Always' }] });
    const strict = await c.api('POST', '/api/v1/namespaces/default/pods?fieldValidation=Strict', body);
    t.is(strict.status, 400);
    t.is(strict.json.message, 'strict decoding error: unknown field "spec.containers[0].imagePullPolcy"');
    const kubectl = await c.kubectl(['apply', '-f', '-'], { input: JSON.stringify(body) });
    t.is(kubectl.code, 1);
    t.regex(kubectl.stderr, /unknown field "spec\.containers\[0\]\.imagePullPolcy"/);
    const warn = await c.api('POST', '/api/v1/namespaces/default/pods', body);
    t.is(warn.status, 201);
    t.is(warn.headers.warning, '299 - "unknown field \\"spec.containers[0].imagePullPolcy\\""');
    t.false('imagePullPolcy' in warn.json.spec.containers[0]);
    t.is((await c.api('DELETE', '/api/v1/namespaces/default/pods/strict')).status, 200);
  },
);

kubectlTest(
  'an unknown kind is refused: by kubectl from discovery, by the server for the body',
  async (t) => {
    const kubectl = await c.kubectl(['apply', '-f', '-'], {
      input: 'apiVersion: v1\nkind: Frobnicator\nmetadata:\n  name: x\n',
    });
    t.is(kubectl.code, 1);
    t.regex(kubectl.stderr, /no matches for kind "Frobnicator" in version "v1"/);
    const r = await c.api('POST', '/api/v1/namespaces/default/pods', { ...pod('x'), kind: 'Frobnicator' });
    t.is(r.status, 400);
    t.is(r.json.message, 'no kind "Frobnicator" is registered for version "v1"');
    const other = await c.api('POST', '/api/v1/namespaces/default/pods', { ...pod('x'), kind: 'Service' });
    t.is(other.status, 400);
    t.regex(other.json.message, /^Service in version "v1" cannot be handled as a Pod/);
    const missing = await c.api('GET', '/api/v1/namespaces/default/frobnicators');
    t.is(missing.status, 404);
    t.is(missing.json.reason, 'NotFound');
  },
);

kubectlTest('malformed JSON and YAML are BadRequest (400)', async (t) => {
  const json = await c.api(
    'POST',
    '/api/v1/namespaces/default/pods',
    '{"apiVersion": "v1", "kind": "Pod", "metadata": {',
  );
  t.is(json.status, 400);
  t.is(json.json.reason, 'BadRequest');
  t.regex(json.json.message, /json parse error/);
  const yaml = await c.api('POST', '/api/v1/namespaces/default/pods', 'kind: Pod\nmetadata: [\n  name: x', {
    'content-type': 'application/yaml',
  });
  t.is(yaml.status, 400);
  t.regex(yaml.json.message, /error converting YAML to JSON/);
  const kubectl = await c.kubectl(['apply', '-f', '-'], {
    input: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels: [oops\n',
  });
  t.is(kubectl.code, 1);
  t.regex(kubectl.stderr, /error/i);
});

test.serial('a 10 MiB body is RequestEntityTooLarge (413)', async (t) => {
  const big = pod('big');
  (big as any).metadata.annotations = { blob: 'x'.repeat(10 * 1024 * 1024) };
  const r = await c.api('POST', '/api/v1/namespaces/default/pods', big);
  t.is(r.status, 413);
  t.is(r.json.reason, 'RequestEntityTooLarge');
  t.is(r.json.message, 'Request entity too large: limit is 3145728');
});

test.serial('a YAML body is accepted (application/yaml)', async (t) => {
  const r = await c.api(
    'POST',
    '/api/v1/namespaces/default/configmaps',
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: "1"\n',
    {
      'content-type': 'application/yaml',
    },
  );
  t.is(r.status, 201, r.text);
  t.is(r.json.data.a, '1');
});

test.serial('nothing invalid was stored and the server keeps serving', async (t) => {
  t.is(await podCount(), 0);
  const health = await c.api('GET', '/healthz');
  t.is(health.status, 200);
  t.is(health.text, 'ok');
  const ok = await c.api('POST', '/api/v1/namespaces/default/pods', pod('good'));
  t.is(ok.status, 201);
  t.is(await podCount(), 1);
});

test.serial(
  'AlreadyExists, NotFound, Conflict and UID preconditions have upstream codes and messages',
  async (t) => {
    const again = await c.api('POST', '/api/v1/namespaces/default/pods', pod('good'));
    t.is(again.status, 409);
    t.is(again.json.reason, 'AlreadyExists');
    t.is(again.json.message, 'pods "good" already exists');
    const missing = await c.api('GET', '/api/v1/namespaces/default/pods/nope');
    t.is(missing.status, 404);
    t.deepEqual(missing.json.details, { name: 'nope', kind: 'pods' });
    t.is(missing.json.message, 'pods "nope" not found');
    const current = (await c.api('GET', '/api/v1/namespaces/default/pods/good')).json;
    const stale = { ...current, metadata: { ...current.metadata, resourceVersion: '1', labels: { a: 'b' } } };
    const conflict = await c.api('PUT', '/api/v1/namespaces/default/pods/good', stale);
    t.is(conflict.status, 409);
    t.is(conflict.json.reason, 'Conflict');
    t.is(
      conflict.json.message,
      'Operation cannot be fulfilled on pods "good": the object has been modified; please apply your changes to the latest version and try again',
    );
    const fresh = { ...current, metadata: { ...current.metadata, labels: { a: 'b' } } };
    const updated = await c.api('PUT', '/api/v1/namespaces/default/pods/good', fresh);
    t.is(updated.status, 200);
    t.true(Number(updated.json.metadata.resourceVersion) > Number(current.metadata.resourceVersion));
    const wrongUid = await c.api('DELETE', '/api/v1/namespaces/default/pods/good', {
      preconditions: { uid: 'not-the-uid' },
    });
    t.is(wrongUid.status, 409);
    t.regex(
      wrongUid.json.message,
      /Precondition failed: UID in precondition: not-the-uid, UID in object meta: /,
    );
    const missingNs = await c.api('POST', '/api/v1/namespaces/nowhere/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'x' },
    });
    t.is(missingNs.status, 404);
    t.is(missingNs.json.message, 'namespaces "nowhere" not found');
    const changed = await c.api('PUT', '/api/v1/namespaces/default/pods/good', {
      ...updated.json,
      spec: { ...updated.json.spec, restartPolicy: 'Never' },
    });
    t.is(changed.status, 422);
    t.regex(changed.json.message, /spec: Forbidden: pod updates may not change fields other than/);
  },
);

test.serial('selectors and resourceVersion parameters are checked', async (t) => {
  const field = await c.api('GET', '/api/v1/pods?fieldSelector=spec.color%3Dred');
  t.is(field.status, 400);
  t.regex(field.json.message, /"spec.color" is not a known field selector/);
  const label = await c.api('GET', '/api/v1/pods?labelSelector=a%20in%20(');
  t.is(label.status, 400);
  const future = await c.api('GET', '/api/v1/pods?resourceVersion=999999999&resourceVersionMatch=Exact');
  t.is(future.status, 504);
  t.is(future.json.details.causes[0].reason, 'ResourceVersionTooLarge');
});

test.serial('services: a ClusterIP or node port another service holds is refused (422)', async (t) => {
  const svc = (name: string, spec: object) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name },
    spec: { ports: [{ port: 80 }], ...spec },
  });
  const a = await c.api(
    'POST',
    '/api/v1/namespaces/default/services',
    svc('a', { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] }),
  );
  t.is(a.status, 201, a.text);
  const ip = a.json.spec.clusterIP;
  t.regex(ip, /^10\.96\.\d+\.\d+$/);
  t.deepEqual(a.json.spec.clusterIPs, [ip]);
  const sameIp = await c.api('POST', '/api/v1/namespaces/default/services', svc('b', { clusterIP: ip }));
  t.is(sameIp.status, 422);
  t.is(sameIp.json.details.causes[0].field, 'spec.clusterIPs');
  t.regex(sameIp.json.message, /failed to allocate IP .*: provided IP is already allocated/);
  const samePort = await c.api(
    'POST',
    '/api/v1/namespaces/default/services',
    svc('c', { type: 'NodePort', ports: [{ port: 81, nodePort: 30080 }] }),
  );
  t.is(samePort.status, 422);
  t.is(
    samePort.json.message,
    'Service "c" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated',
  );
  const outside = await c.api(
    'POST',
    '/api/v1/namespaces/default/services',
    svc('d', { type: 'NodePort', ports: [{ port: 81, nodePort: 80 }] }),
  );
  t.is(outside.status, 422);
  t.regex(outside.json.message, /The range of valid ports is 30000-32767/);
  const badIp = await c.api(
    'POST',
    '/api/v1/namespaces/default/services',
    svc('e', { clusterIP: '192.168.0.1' }),
  );
  t.is(badIp.status, 422);
  t.regex(badIp.json.message, /The range of valid IPs is 10\.96\.0\.0\/12/);
  // Deleting the service frees its address and port.
  t.is((await c.api('DELETE', '/api/v1/namespaces/default/services/a')).status, 200);
  const reuse = await c.api(
    'POST',
    '/api/v1/namespaces/default/services',
    svc('f', { clusterIP: ip, type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] }),
  );
  t.is(reuse.status, 201, reuse.text);
});

test.serial(
  'system namespaces cannot be deleted; a deleted namespace terminates and goes with its content',
  async (t) => {
    const sys = await c.api('DELETE', '/api/v1/namespaces/kube-system');
    t.is(sys.status, 403);
    t.is(sys.json.reason, 'Forbidden');
    t.is(
      (
        await c.api('POST', '/api/v1/namespaces', {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: 'scratch' },
        })
      ).status,
      201,
    );
    t.is(
      (
        await c.api('POST', '/api/v1/namespaces/scratch/configmaps', {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'x' },
        })
      ).status,
      201,
    );
    const del = await c.api('DELETE', '/api/v1/namespaces/scratch');
    t.is(del.status, 200);
    t.is(del.json.status.phase, 'Terminating');
    for (let i = 0; i < 400; i++) {
      if ((await c.api('GET', '/api/v1/namespaces/scratch')).status === 404) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    t.is((await c.api('GET', '/api/v1/namespaces/scratch')).status, 404);
    t.is((await c.api('GET', '/api/v1/namespaces/scratch/configmaps/x')).status, 404);
  },
);

test.serial('a request without a client certificate is Unauthorized (401)', async (t) => {
  const { request } = await import('node:https');
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(new URL('/api/v1/pods', c.cp.url), { ca: c.cp.caCert }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
  t.is(status, 401);
});

test('a body nested 100,000 deep and a path with a malformed escape are 400s, not internal errors', async (t) => {
  const deep = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
  const nested = await c.api('POST', '/api/v1/namespaces/default/configmaps', deep);
  t.is(nested.status, 400);
  t.is(nested.json.reason, 'BadRequest');
  t.regex(nested.json.message, /nested deeper than 500 levels/);
  const token = await c.api('POST', '/api/v1/namespaces/default/serviceaccounts/default/token', deep);
  t.is(token.status, 400);
  const escaped = await c.api('GET', '/api/v1/namespaces/%ZZ/configmaps');
  t.is(escaped.status, 400);
  t.regex(escaped.json.message, /malformed percent-encoding in "%ZZ"/);
  t.is((await c.api('GET', '/version')).status, 200, 'the server keeps serving');
});

kubectlTest(
  'a pod with dnsPolicy None and no dnsConfig, or a nameserver that is no IP, is Invalid naming the field',
  async (t) => {
    const containers = [{ name: 'c', image: 'busybox' }];
    const none = await c.api(
      'POST',
      '/api/v1/namespaces/default/pods',
      pod('dns-none', { containers, dnsPolicy: 'None' }),
    );
    t.is(none.status, 422);
    t.deepEqual(none.json.details.causes, [
      {
        reason: 'FieldValueRequired',
        message: 'Required value: must provide `dnsConfig` when `dnsPolicy` is None',
        field: 'spec.dnsConfig',
      },
    ]);
    const kubectl = await c.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify(pod('dns-ip', { containers, dnsConfig: { nameservers: ['dns.local'] } })),
    });
    t.is(kubectl.code, 1);
    t.regex(
      kubectl.stderr,
      /The Pod "dns-ip" is invalid: spec\.dnsConfig\.nameservers\[0\]: Invalid value: "dns\.local": must be a valid IP address/,
    );
    t.is((await c.api('GET', '/api/v1/namespaces/default/pods/dns-none')).status, 404, 'nothing is stored');
  },
);

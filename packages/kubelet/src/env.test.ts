import test from 'ava';
import type { ConfigMap, Container, Pod, Secret, Service } from '@nodelet/api';
import { ObjectNotFoundError, type PodObjects } from '@nodelet/volume';
import { EnvError, expandCommand, makeEnvironmentVariables } from './env.js';
import { StandalonePodObjects } from './objects/standalone.js';

// Environment precedence against upstream's TestMakeEnvironmentVariables (pkg/kubelet/kubelet_pods_test.go):
// the same Services, pods, ConfigMaps and Secrets, and the same expected variables (compared sorted, as
// upstream does). As there, the fake API answers every ConfigMap (Secret) read with the case's one, or
// NotFound when the case has none.

const svc = (name: string, namespace: string, clusterIP: string, port: number): Service => ({
  metadata: { name, namespace },
  spec: { clusterIP, ports: [{ protocol: 'TCP', port }] },
});

const services: Service[] = [
  svc('kubernetes', 'default', '1.2.3.1', 8081),
  svc('test', 'test1', '1.2.3.3', 8083),
  svc('kubernetes', 'test2', '1.2.3.4', 8084),
  svc('test', 'test2', '1.2.3.5', 8085),
  svc('test', 'test2', 'None', 8085),
  svc('test', 'test2', '', 8085),
  svc('not-special', 'default', '1.2.3.8', 8088),
  svc('not-special', 'default', 'None', 8088),
  svc('not-special', 'default', '', 8088),
];

/** The variables of one Service, as upstream's expectations spell them out. */
const links = (prefix: string, ip: string, port: number): [string, string][] => [
  [`${prefix}_SERVICE_HOST`, ip],
  [`${prefix}_SERVICE_PORT`, String(port)],
  [`${prefix}_PORT`, `tcp://${ip}:${port}`],
  [`${prefix}_PORT_${port}_TCP`, `tcp://${ip}:${port}`],
  [`${prefix}_PORT_${port}_TCP_PROTO`, 'tcp'],
  [`${prefix}_PORT_${port}_TCP_PORT`, String(port)],
  [`${prefix}_PORT_${port}_TCP_ADDR`, ip],
];
const master = links('KUBERNETES', '1.2.3.1', 8081);

interface Case {
  name: string;
  ns: string;
  enableServiceLinks: boolean;
  container: Partial<Container>;
  /** No service lister: a kubelet without an API server. */
  nilLister?: boolean;
  configMap?: ConfigMap;
  secret?: Secret;
  podIPs?: string[];
  expected?: [string, string][];
  error?: RegExp;
  event?: string;
}

const field = (fieldPath: string) => ({ valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } });
const b64 = (s: string) => Buffer.from(s).toString('base64');
const testLiteralEnv = [
  { name: 'TEST_LITERAL', value: 'test-test-test' },
  { name: 'EXPANSION_TEST', value: '$(REPLACE_ME)' },
  { name: 'DUPE_TEST', value: 'ENV_VAR' },
];
const expansionEnv = [
  { name: 'TEST_LITERAL', value: 'test-test-test' },
  { name: 'POD_NAME', ...field('metadata.name') },
  { name: 'OUT_OF_ORDER_TEST', value: '$(OUT_OF_ORDER_TARGET)' },
  { name: 'OUT_OF_ORDER_TARGET', value: 'FOO' },
  { name: 'EMPTY_VAR' },
  { name: 'EMPTY_TEST', value: 'foo-$(EMPTY_VAR)' },
  { name: 'POD_NAME_TEST2', value: 'test2-$(POD_NAME)' },
  { name: 'POD_NAME_TEST3', value: '$(POD_NAME_TEST2)-3' },
  { name: 'LITERAL_TEST', value: 'literal-$(TEST_LITERAL)' },
];
const expansionExpected: [string, string][] = [
  ['TEST_LITERAL', 'test-test-test'],
  ['POD_NAME', 'dapi-test-pod-name'],
  ['POD_NAME_TEST2', 'test2-dapi-test-pod-name'],
  ['POD_NAME_TEST3', 'test2-dapi-test-pod-name-3'],
  ['LITERAL_TEST', 'literal-test-test-test'],
  ['OUT_OF_ORDER_TEST', '$(OUT_OF_ORDER_TARGET)'],
  ['OUT_OF_ORDER_TARGET', 'FOO'],
  ['TEST_UNDEFINED', '$(UNDEFINED_VAR)'],
  ['EMPTY_VAR', ''],
  ['EMPTY_TEST', 'foo-'],
];
const configMap = (data: Record<string, string>): ConfigMap => ({
  metadata: { namespace: 'test1', name: 'test-configmap' },
  data,
});
const secret = (data: Record<string, string>): Secret => ({
  metadata: { namespace: 'test1', name: 'test-secret' },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
});
const cmRef = (prefix?: string, optional?: boolean, name = 'test-config-map') => ({
  ...(prefix ? { prefix } : {}),
  configMapRef: { name, ...(optional ? { optional } : {}) },
});
const secretRef = (prefix?: string, optional?: boolean, name = 'test-secret') => ({
  ...(prefix ? { prefix } : {}),
  secretRef: { name, ...(optional ? { optional } : {}) },
});
const test1Service = links('TEST', '1.2.3.3', 8083);

/** Upstream's envFrom cases: the object twice, plain and with a prefix, under env that overrides it. */
function sourced(name: string, kind: 'configmap' | 'secret', prefix: string, serviceLinks: boolean): Case {
  const value = kind === 'configmap' ? 'FROM_CONFIG_MAP' : 'FROM_SECRET';
  const dupe = kind === 'configmap' ? 'CONFIG_MAP' : 'SECRET';
  const ref = kind === 'configmap' ? cmRef : secretRef;
  const data = { REPLACE_ME: value, DUPE_TEST: dupe };
  return {
    name,
    ns: 'test1',
    enableServiceLinks: serviceLinks,
    container: { envFrom: [ref(), ref(prefix)], env: testLiteralEnv },
    ...(kind === 'configmap' ? { configMap: configMap(data) } : { secret: secret(data) }),
    expected: [
      ['TEST_LITERAL', 'test-test-test'],
      ...(serviceLinks ? test1Service : []),
      ['REPLACE_ME', value],
      ['EXPANSION_TEST', value],
      ['DUPE_TEST', 'ENV_VAR'],
      [`${prefix}REPLACE_ME`, value],
      [`${prefix}DUPE_TEST`, dupe],
      ...master,
    ],
  };
}

const cases: Case[] = [
  {
    name: 'api server = Y, kubelet = Y',
    ns: 'test1',
    enableServiceLinks: false,
    container: {
      env: [{ name: 'FOO', value: 'BAR' }, ...test1Service.map(([name, value]) => ({ name, value }))],
    },
    expected: [['FOO', 'BAR'], ...test1Service, ...master],
  },
  {
    name: 'api server = Y, kubelet = N',
    ns: 'test1',
    enableServiceLinks: false,
    nilLister: true,
    container: {
      env: [{ name: 'FOO', value: 'BAR' }, ...test1Service.map(([name, value]) => ({ name, value }))],
    },
    expected: [['FOO', 'BAR'], ...test1Service],
  },
  {
    name: 'api server = N; kubelet = Y',
    ns: 'test1',
    enableServiceLinks: false,
    container: { env: [{ name: 'FOO', value: 'BAZ' }] },
    expected: [['FOO', 'BAZ'], ...master],
  },
  {
    name: 'api server = N; kubelet = Y; service env vars',
    ns: 'test1',
    enableServiceLinks: true,
    container: { env: [{ name: 'FOO', value: 'BAZ' }] },
    expected: [['FOO', 'BAZ'], ...test1Service, ...master],
  },
  {
    name: 'master service in pod ns',
    ns: 'test2',
    enableServiceLinks: false,
    container: { env: [{ name: 'FOO', value: 'ZAP' }] },
    expected: [['FOO', 'ZAP'], ...master],
  },
  {
    name: 'master service in pod ns, service env vars',
    ns: 'test2',
    enableServiceLinks: true,
    container: { env: [{ name: 'FOO', value: 'ZAP' }] },
    expected: [['FOO', 'ZAP'], ...links('TEST', '1.2.3.5', 8085), ...links('KUBERNETES', '1.2.3.4', 8084)],
  },
  {
    name: 'pod in master service ns',
    ns: 'default',
    enableServiceLinks: false,
    container: {},
    expected: master,
  },
  {
    name: 'pod in master service ns, service env vars',
    ns: 'default',
    enableServiceLinks: true,
    container: {},
    expected: [...links('NOT_SPECIAL', '1.2.3.8', 8088), ...master],
  },
  {
    name: 'downward api pod',
    ns: 'downward-api',
    enableServiceLinks: false,
    nilLister: true,
    podIPs: ['1.2.3.4', 'fd00::6'],
    container: {
      env: [
        { name: 'POD_NAME', ...field('metadata.name') },
        { name: 'POD_NAMESPACE', ...field('metadata.namespace') },
        { name: 'POD_NODE_NAME', ...field('spec.nodeName') },
        { name: 'POD_SERVICE_ACCOUNT_NAME', ...field('spec.serviceAccountName') },
        { name: 'POD_IP', ...field('status.podIP') },
        { name: 'POD_IPS', ...field('status.podIPs') },
        { name: 'HOST_IP', ...field('status.hostIP') },
        { name: 'HOST_IPS', ...field('status.hostIPs') },
      ],
    },
    expected: [
      ['POD_NAME', 'dapi-test-pod-name'],
      ['POD_NAMESPACE', 'downward-api'],
      ['POD_NODE_NAME', 'node-name'],
      ['POD_SERVICE_ACCOUNT_NAME', 'special'],
      ['POD_IP', '1.2.3.4'],
      ['POD_IPS', '1.2.3.4,fd00::6'],
      ['HOST_IP', '127.0.0.1'],
      ['HOST_IPS', '127.0.0.1,::1'],
    ],
  },
  {
    name: 'env expansion',
    ns: 'test1',
    enableServiceLinks: false,
    container: { env: [...expansionEnv, { name: 'TEST_UNDEFINED', value: '$(UNDEFINED_VAR)' }] },
    expected: [...expansionExpected, ...master],
  },
  {
    name: 'env expansion, service env vars',
    ns: 'test1',
    enableServiceLinks: true,
    container: {
      env: [
        ...expansionEnv,
        { name: 'SERVICE_VAR_TEST', value: '$(TEST_SERVICE_HOST):$(TEST_SERVICE_PORT)' },
        { name: 'TEST_UNDEFINED', value: '$(UNDEFINED_VAR)' },
      ],
    },
    expected: [...expansionExpected, ['SERVICE_VAR_TEST', '1.2.3.3:8083'], ...test1Service, ...master],
  },
  {
    name: 'configmapkeyref_missing_optional',
    ns: 'test',
    enableServiceLinks: false,
    container: {
      env: [
        {
          name: 'POD_NAME',
          valueFrom: { configMapKeyRef: { name: 'missing-config-map', key: 'key', optional: true } },
        },
      ],
    },
    expected: master,
  },
  {
    name: 'configmapkeyref_missing_key_optional',
    ns: 'test',
    enableServiceLinks: false,
    nilLister: true,
    configMap: configMap({ a: 'b' }),
    container: {
      env: [
        {
          name: 'POD_NAME',
          valueFrom: { configMapKeyRef: { name: 'test-config-map', key: 'key', optional: true } },
        },
      ],
    },
    expected: [],
  },
  {
    name: 'secretkeyref_missing_optional',
    ns: 'test',
    enableServiceLinks: false,
    container: {
      env: [
        {
          name: 'POD_NAME',
          valueFrom: { secretKeyRef: { name: 'missing-secret', key: 'key', optional: true } },
        },
      ],
    },
    expected: master,
  },
  {
    name: 'secretkeyref_missing_key_optional',
    ns: 'test',
    enableServiceLinks: false,
    nilLister: true,
    secret: secret({ a: 'b' }),
    container: {
      env: [
        {
          name: 'POD_NAME',
          valueFrom: { secretKeyRef: { name: 'test-secret', key: 'key', optional: true } },
        },
      ],
    },
    expected: [],
  },
  sourced('configmap', 'configmap', 'p_', false),
  sourced('configmap allow prefix to start with a digital', 'configmap', '1_', false),
  sourced('configmap, service env vars', 'configmap', 'p_', true),
  {
    name: 'configmap_missing',
    ns: 'test1',
    enableServiceLinks: false,
    container: { envFrom: [cmRef()] },
    error: /^configmap "test-config-map" not found$/,
  },
  {
    name: 'configmap_missing_optional',
    ns: 'test',
    enableServiceLinks: false,
    container: { envFrom: [cmRef(undefined, true, 'missing-config-map')] },
    expected: master,
  },
  {
    name: 'configmap_invalid_keys_valid',
    ns: 'test',
    enableServiceLinks: false,
    container: { envFrom: [cmRef('p_')] },
    configMap: configMap({ '1234': 'abc' }),
    expected: [['p_1234', 'abc'], ...master],
  },
  {
    // Upstream's older case, with keys invalid under today's rule (printable ASCII but '=').
    name: 'configmap_invalid_keys',
    ns: 'test1',
    enableServiceLinks: false,
    container: { envFrom: [cmRef()] },
    configMap: configMap({ 'a=b': 'abc', 'tab\tkey': 'abc', key: 'value' }),
    expected: [['key', 'value'], ...master],
    event:
      'Warning InvalidEnvironmentVariableNames Keys [a=b, tab\tkey] from the EnvFrom configMap test1/test-config-map were skipped since they are considered invalid environment variable names.',
  },
  sourced('secret', 'secret', 'p_', false),
  sourced('secret, service env vars', 'secret', 'p_', true),
  {
    name: 'secret_missing',
    ns: 'test1',
    enableServiceLinks: false,
    container: { envFrom: [secretRef()] },
    error: /^secret "test-secret" not found$/,
  },
  {
    name: 'secret_missing_optional',
    ns: 'test',
    enableServiceLinks: false,
    container: { envFrom: [secretRef(undefined, true, 'missing-secret')] },
    expected: master,
  },
  {
    name: 'secret_invalid_keys_valid',
    ns: 'test',
    enableServiceLinks: false,
    container: { envFrom: [secretRef('p_')] },
    secret: secret({ '1234.name': 'abc' }),
    expected: [['p_1234.name', 'abc'], ...master],
  },
];

/** Upstream's fake client: every read answers the case's object, or NotFound. */
function objectsOf(c: { configMap?: ConfigMap; secret?: Secret }): PodObjects {
  return {
    getConfigMap: async (ns, name) => {
      if (!c.configMap) throw new ObjectNotFoundError('configmap', ns, name);
      return c.configMap;
    },
    getSecret: async (ns, name) => {
      if (!c.secret) throw new ObjectNotFoundError('secret', ns, name);
      return c.secret;
    },
    getServiceAccountToken: () => Promise.reject(new Error('not in these tests')),
  };
}

function podOf(ns: string, enableServiceLinks: boolean, container: Partial<Container>): Pod {
  return {
    metadata: { namespace: ns, name: 'dapi-test-pod-name', uid: 'uid-1', annotations: {} },
    spec: {
      serviceAccountName: 'special',
      nodeName: 'node-name',
      enableServiceLinks,
      containers: [{ name: 'main', ...container }],
    },
  };
}

async function envOf(c: Case, events: string[] = []) {
  const pod = podOf(c.ns, c.enableServiceLinks, c.container);
  return makeEnvironmentVariables(pod, pod.spec!.containers[0]!, {
    objects: objectsOf(c),
    services: c.nilLister ? undefined : async () => services,
    facts: {
      nodeName: 'node-name',
      hostIPs: ['127.0.0.1', '::1'],
      podIPs: c.podIPs ?? [],
      allocatable: { cpu: '4', memory: '8Gi' },
    },
    warn: (reason, message) => events.push(`Warning ${reason} ${message}`),
  });
}

const sorted = (env: [string, string][]) => [...env].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

for (const c of cases) {
  test(`upstream TestMakeEnvironmentVariables: ${c.name}`, async (t) => {
    const events: string[] = [];
    if (c.error) {
      await t.throwsAsync(envOf(c, events), { message: c.error });
      return;
    }
    t.deepEqual(sorted(await envOf(c, events)), sorted(c.expected!));
    t.deepEqual(events, c.event ? [c.event] : []);
  });
}

test('order: envFrom first, then env in declaration order (replacing in place), then service variables', async (t) => {
  const env = await envOf({
    name: 'order',
    ns: 'test1',
    enableServiceLinks: false,
    container: {
      envFrom: [cmRef()],
      env: [
        { name: 'Z', value: '1' },
        { name: 'B', value: 'env' },
      ],
    },
    configMap: configMap({ A: 'cm', B: 'cm' }),
  });
  t.deepEqual(
    env.map(([k]) => k),
    ['A', 'B', 'Z', ...master.map(([k]) => k)],
  );
  t.is(env.find(([k]) => k === 'B')![1], 'env');
});

test('configMapKeyRef and secretKeyRef: the value, a missing key with upstream message, Secret data decoded', async (t) => {
  const found = await envOf({
    name: 'keys',
    ns: 'test1',
    enableServiceLinks: false,
    nilLister: true,
    configMap: configMap({ how: 'very' }),
    secret: secret({ password: 'p@ss w0rd\n' }),
    container: {
      env: [
        { name: 'HOW', valueFrom: { configMapKeyRef: { name: 'special-config', key: 'how' } } },
        { name: 'PASS', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
      ],
    },
  });
  t.deepEqual(found, [
    ['HOW', 'very'],
    ['PASS', 'p@ss w0rd\n'],
  ]);
  const missing = (valueFrom: object) =>
    envOf({
      name: 'missing key',
      ns: 'test1',
      enableServiceLinks: false,
      nilLister: true,
      configMap: configMap({ how: 'very' }),
      secret: secret({ password: 'x' }),
      container: { env: [{ name: 'X', valueFrom }] },
    });
  await t.throwsAsync(missing({ configMapKeyRef: { name: 'special-config', key: 'type' } }), {
    message: "couldn't find key type in ConfigMap test1/special-config",
  });
  await t.throwsAsync(missing({ secretKeyRef: { name: 'creds', key: 'user' } }), {
    message: "couldn't find key user in Secret test1/creds",
  });
});

test('resourceFieldRef: the container by default, another by containerName, limits default to allocatable', async (t) => {
  const pod = podOf('default', false, {
    resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { memory: '128Mi' } },
    env: [
      { name: 'CPU_REQUEST', valueFrom: { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } } },
      { name: 'MEM_LIMIT', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
      { name: 'CPU_LIMIT', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
      {
        name: 'SIDECAR_MEM',
        valueFrom: { resourceFieldRef: { containerName: 'sidecar', resource: 'requests.memory' } },
      },
    ],
  });
  pod.spec!.containers.push({ name: 'sidecar', resources: { requests: { memory: '1Ki' } } });
  const env = await makeEnvironmentVariables(pod, pod.spec!.containers[0]!, {
    objects: new StandalonePodObjects(),
    facts: { nodeName: 'n', hostIPs: [], podIPs: [], allocatable: { cpu: '4', memory: '8Gi' } },
  });
  t.deepEqual(env, [
    ['CPU_REQUEST', '250'],
    ['MEM_LIMIT', '128'],
    ['CPU_LIMIT', '4'],
    ['SIDECAR_MEM', '1024'],
  ]);
});

test('bad input: an unknown fieldPath, another API version, a 2 MiB value: errors naming container, variable, field', async (t) => {
  const bad = (env: NonNullable<Container['env']>, c: Partial<Case> = {}) =>
    envOf({ name: 'bad', ns: 'test1', enableServiceLinks: false, nilLister: true, container: { env }, ...c });
  await t.throwsAsync(bad([{ name: 'X', ...field('status.phase') }]), {
    instanceOf: EnvError,
    message:
      /^container "main": env "X": valueFrom\.fieldRef: fieldPath "status\.phase" is not supported in an env var \(supported: metadata\.name, /,
  });
  await t.throwsAsync(
    bad([{ name: 'X', valueFrom: { fieldRef: { apiVersion: 'v2', fieldPath: 'metadata.name' } } }]),
    {
      message: 'container "main": env "X": valueFrom.fieldRef: unsupported pod version: v2',
    },
  );
  await t.throwsAsync(bad([{ name: 'X', valueFrom: { resourceFieldRef: { resource: 'limits.gpu' } } }]), {
    message:
      /^container "main": env "X": valueFrom\.resourceFieldRef: resourceFieldRef: resource "limits\.gpu" is not supported/,
  });
  const big = 'x'.repeat(2 * 1024 * 1024);
  await t.throwsAsync(bad([{ name: 'BIG', value: big }]), {
    message:
      'container "main": env "BIG" (env[0]): the variable is 2097157 bytes, more than the 131072 bytes Linux passes to a process for one variable',
  });
  await t.throwsAsync(bad([], { container: { envFrom: [cmRef()] }, configMap: configMap({ HUGE: big }) }), {
    message:
      /^container "main": env "HUGE" \(envFrom configMap test1\/test-config-map key "HUGE"\): the variable is 2097158 bytes/,
  });
});

test('standalone: a reference to a ConfigMap or Secret fails with upstream\'s "no kubeClient" words, optional or not', async (t) => {
  const pod = podOf('default', true, {
    env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k', optional: true } } }],
  });
  await t.throwsAsync(
    makeEnvironmentVariables(pod, pod.spec!.containers[0]!, {
      objects: new StandalonePodObjects(),
      facts: { nodeName: 'n', hostIPs: [], podIPs: [], allocatable: {} },
    }),
    { message: /^couldn't get configMap default\/cfg, no kubeClient defined/ },
  );
});

test('command and args expand from the final environment, service variables included', (t) => {
  t.deepEqual(
    expandCommand(
      ['sh', '-c', 'echo $(A) $(KUBERNETES_SERVICE_HOST) $$(A) $(NOPE)'],
      [
        ['A', '1'],
        ['KUBERNETES_SERVICE_HOST', '10.96.0.1'],
      ],
    ),
    ['sh', '-c', 'echo 1 10.96.0.1 $(A) $(NOPE)'],
  );
});

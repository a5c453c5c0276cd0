import type { ConfigMap, Container, Secret, Service } from '@nodelet/api';

// Environment precedence against upstream's TestMakeEnvironmentVariables (pkg/kubelet/kubelet_pods_test.go):
// the same Services, pods, ConfigMaps and Secrets, and the same expected variables (compared sorted, as
// upstream does). As there, the fake API answers every ConfigMap (Secret) read with the case's one, or
// NotFound when the case has none.

export const svc = (name: string, namespace: string, clusterIP: string, port: number): Service => ({
  metadata: { name, namespace },
  spec: { clusterIP, ports: [{ protocol: 'TCP', port }] },
});

export const services: Service[] = [
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
export const links = (prefix: string, ip: string, port: number): [string, string][] => [
  [`${prefix}_SERVICE_HOST`, ip],
  [`${prefix}_SERVICE_PORT`, String(port)],
  [`${prefix}_PORT`, `tcp://${ip}:${port}`],
  [`${prefix}_PORT_${port}_TCP`, `tcp://${ip}:${port}`],
  [`${prefix}_PORT_${port}_TCP_PROTO`, 'tcp'],
  [`${prefix}_PORT_${port}_TCP_PORT`, String(port)],
  [`${prefix}_PORT_${port}_TCP_ADDR`, ip],
];
export const master = links('KUBERNETES', '1.2.3.1', 8081);

export interface Case {
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

export const field = (fieldPath: string) => ({ valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } });
export const b64 = (s: string) => Buffer.from(s).toString('base64');
export const testLiteralEnv = [
  { name: 'TEST_LITERAL', value: 'test-test-test' },
  { name: 'EXPANSION_TEST', value: '$(REPLACE_ME)' },
  { name: 'DUPE_TEST', value: 'ENV_VAR' },
];
export const expansionEnv = [
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
export const expansionExpected: [string, string][] = [
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
export const configMap = (data: Record<string, string>): ConfigMap => ({
  metadata: { namespace: 'test1', name: 'test-configmap' },
  data,
});
export const secret = (data: Record<string, string>): Secret => ({
  metadata: { namespace: 'test1', name: 'test-secret' },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
});
export const cmRef = (prefix?: string, optional?: boolean, name = 'test-config-map') => ({
  ...(prefix ? { prefix } : {}),
  configMapRef: { name, ...(optional ? { optional } : {}) },
});
export const secretRef = (prefix?: string, optional?: boolean, name = 'test-secret') => ({
  ...(prefix ? { prefix } : {}),
  secretRef: { name, ...(optional ? { optional } : {}) },
});
export const test1Service = links('TEST', '1.2.3.3', 8083);

/** Upstream's envFrom cases: the object twice, plain and with a prefix, under env that overrides it. */
export function sourced(
  name: string,
  kind: 'configmap' | 'secret',
  prefix: string,
  serviceLinks: boolean,
): Case {
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

export const cases: Case[] = [
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

import test from 'ava';
import type { ConfigMap, Container, Pod, Secret } from '@nodelet/api';
import { ObjectNotFoundError, type PodObjects } from '@nodelet/volume';
import { EnvError, expandCommand, makeEnvironmentVariables } from './env.js';
import { StandalonePodObjects } from './objects/standalone.js';
import { Case, cases, cmRef, configMap, field, master, secret, services } from './test-env-cases.js';

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

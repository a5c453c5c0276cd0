import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { apiPod, startCluster, type ClusterHarness } from './test-harness.js';

// A kubelet on the fake runtime joined to the in-memory API server, under virtual time: the ConfigMaps,
// Secrets and Services its pods reference reach their environment, and a pod waiting for a missing
// one starts once it is there, without being recreated.

const CM = '/api/v1/namespaces/default/configmaps';
const SECRETS = '/api/v1/namespaces/default/secrets';
const SERVICES = '/api/v1/namespaces/default/services';

const apiStatus = (h: ClusterHarness, name: string) => h.api.pods.get(`default/${name}`)?.status;
const waitingOf = (h: ClusterHarness, name: string) =>
  apiStatus(h, name)?.containerStatuses?.[0]?.state?.waiting;

/** The environment the runtime created the pod's (newest) container with. */
async function containerEnv(h: ClusterHarness, podName: string): Promise<Record<string, string>> {
  const { containers } = await h.runtime.listContainers({});
  const mine = containers
    .filter((c) => c.labels['io.kubernetes.pod.name'] === podName)
    .sort((a, b) => Number(b.createdAt - a.createdAt));
  return Object.fromEntries(h.runtime.containerConfig(mine[0]!.id).envs.map((e) => [e.key, e.value]));
}

function withEnv(name: string, env: NonNullable<Pod['spec']>['containers'][number]['env'], extra = {}): Pod {
  return apiPod(name, {
    containers: [{ name: 'main', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent', env, ...extra }],
  });
}

test('a missing ConfigMap key: CreateContainerConfigError with upstream message; fixed, the pod starts, not recreated', async (t) => {
  const h = await startCluster();
  t.teardown(() => h.kubelet.stop());
  await h.clock.advance(1_000);
  h.api.put(CM, { metadata: { name: 'special-config' }, data: { 'special.type': 'charm' } });
  await h.api.createPod(
    withEnv('dapi', [
      {
        name: 'SPECIAL_LEVEL_KEY',
        valueFrom: { configMapKeyRef: { name: 'special-config', key: 'special.how' } },
      },
    ]),
  );
  await h.clock.advanceUntil(() => waitingOf(h, 'dapi')?.reason === 'CreateContainerConfigError', {
    stepMs: 100,
    maxMs: 5_000,
  });
  t.is(waitingOf(h, 'dapi')!.message, "couldn't find key special.how in ConfigMap default/special-config");
  t.is(apiStatus(h, 'dapi')!.phase, 'Pending');
  const uid = h.api.pods.get('default/dapi')!.metadata!.uid;
  await h.clock.advance(2_000);
  t.true(
    [...h.api.events.values()].some(
      (e) =>
        e.reason === 'Failed' &&
        e.message === "Error: couldn't find key special.how in ConfigMap default/special-config",
    ),
    'a Failed event with the reason',
  );

  const fixedAt = h.clock.elapsed();
  h.api.put(CM, { metadata: { name: 'special-config' }, data: { 'special.how': 'very' } });
  const took = await h.clock.advanceUntil(() => apiStatus(h, 'dapi')?.phase === 'Running', {
    stepMs: 100,
    maxMs: 15_000,
  });
  t.true(took <= 10_100, `started ${h.clock.elapsed() - fixedAt} ms after the fix (the 10 s retry)`);
  t.is(h.api.pods.get('default/dapi')!.metadata!.uid, uid, 'the same pod');
  t.is(h.api.callsOf('delete', 'pod/default/dapi').length, 0, 'never deleted');
  t.is(h.runtime.counts().sandboxes, 1, 'its sandbox was kept');
  t.is((await containerEnv(h, 'dapi')).SPECIAL_LEVEL_KEY, 'very');
});

test('a missing ConfigMap: upstream "not found"; optional references run without it; a Secret key is decoded', async (t) => {
  const h = await startCluster();
  t.teardown(() => h.kubelet.stop());
  await h.clock.advance(1_000);
  h.api.put(SECRETS, {
    metadata: { name: 'creds' },
    data: { password: Buffer.from('s3cret').toString('base64') },
  });
  await h.api.createPod(withEnv('needs', [], { envFrom: [{ configMapRef: { name: 'absent' } }] }));
  await h.api.createPod(
    withEnv(
      'tolerant',
      [
        { name: 'OPT', valueFrom: { configMapKeyRef: { name: 'absent', key: 'k', optional: true } } },
        { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
      ],
      { envFrom: [{ prefix: 'CFG_', configMapRef: { name: 'absent', optional: true } }] },
    ),
  );
  await h.clock.advanceUntil(
    () =>
      waitingOf(h, 'needs')?.reason === 'CreateContainerConfigError' &&
      apiStatus(h, 'tolerant')?.phase === 'Running',
    { stepMs: 100, maxMs: 5_000 },
  );
  t.is(waitingOf(h, 'needs')!.message, 'configmap "absent" not found');
  const env = await containerEnv(h, 'tolerant');
  t.is(env.PASSWORD, 's3cret');
  t.false('OPT' in env);
});

test('service variables: the kubernetes Service and, with links, the namespace; envFrom invalid keys reported', async (t) => {
  const h = await startCluster();
  t.teardown(() => h.kubelet.stop());
  h.api.put(SERVICES, {
    metadata: { name: 'kubernetes' },
    spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
  });
  h.api.put(SERVICES, {
    metadata: { name: 'redis-primary' },
    spec: { clusterIP: '10.96.0.7', ports: [{ port: 6379 }] },
  });
  h.api.put(CM, { metadata: { name: 'cfg' }, data: { GOOD: 'yes', 'BAD=KEY': 'no' } });
  await h.clock.advance(1_000);
  await h.api.createPod(
    withEnv(
      'linked',
      [{ name: 'ADDR', value: '$(REDIS_PRIMARY_SERVICE_HOST):$(REDIS_PRIMARY_SERVICE_PORT)' }],
      {
        envFrom: [{ configMapRef: { name: 'cfg' } }],
        command: ['sh', '-c', 'echo $(GOOD)'],
      },
    ),
  );
  await h.api.createPod({
    ...withEnv('unlinked', []),
    spec: { ...withEnv('unlinked', []).spec!, enableServiceLinks: false },
  });
  await h.clock.advanceUntil(
    () => apiStatus(h, 'linked')?.phase === 'Running' && apiStatus(h, 'unlinked')?.phase === 'Running',
    {
      stepMs: 100,
      maxMs: 5_000,
    },
  );
  const linked = await containerEnv(h, 'linked');
  t.like(linked, {
    GOOD: 'yes',
    ADDR: '10.96.0.7:6379',
    KUBERNETES_SERVICE_HOST: '10.96.0.1',
    KUBERNETES_SERVICE_PORT: '443',
    KUBERNETES_SERVICE_PORT_HTTPS: '443',
    KUBERNETES_PORT: 'tcp://10.96.0.1:443',
    KUBERNETES_PORT_443_TCP: 'tcp://10.96.0.1:443',
    KUBERNETES_PORT_443_TCP_PROTO: 'tcp',
    KUBERNETES_PORT_443_TCP_PORT: '443',
    KUBERNETES_PORT_443_TCP_ADDR: '10.96.0.1',
    REDIS_PRIMARY_PORT_6379_TCP_ADDR: '10.96.0.7',
  });
  t.false('BAD=KEY' in linked);
  const { containers } = await h.runtime.listContainers({});
  const id = containers.find((c) => c.labels['io.kubernetes.pod.name'] === 'linked')!.id;
  t.deepEqual(h.runtime.containerConfig(id).command, ['sh', '-c', 'echo yes']);
  const unlinked = await containerEnv(h, 'unlinked');
  t.is(unlinked.KUBERNETES_SERVICE_HOST, '10.96.0.1');
  t.false('REDIS_PRIMARY_SERVICE_HOST' in unlinked);
  await h.clock.advance(2_000);
  t.true(
    [...h.api.events.values()].some(
      (e) =>
        e.type === 'Warning' &&
        e.reason === 'InvalidEnvironmentVariableNames' &&
        e.message ===
          'Keys [BAD=KEY] from the EnvFrom configMap default/cfg were skipped since they are considered invalid environment variable names.',
    ),
  );
});

test('a deleted pod releases its references: the watches of its objects stop', async (t) => {
  const h = await startCluster();
  t.teardown(() => h.kubelet.stop());
  await h.clock.advance(1_000);
  h.api.put(CM, { metadata: { name: 'cfg' }, data: { k: 'v' } });
  await h.api.createPod(
    withEnv('web', [{ name: 'K', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } }], {}),
  );
  await h.clock.advanceUntil(() => apiStatus(h, 'web')?.phase === 'Running', { stepMs: 100, maxMs: 5_000 });
  t.deepEqual(h.api.watchedSelectors(CM), ['metadata.name=cfg']);
  await h.api.deletePod('default', 'web', { gracePeriodSeconds: 0 });
  await h.clock.advanceUntil(() => h.api.watchedSelectors(CM).length === 0, { stepMs: 100, maxMs: 5_000 });
  t.pass();
});

test('bad input: an unknown fieldPath, a 2 MiB value: the container waits with a message naming it; other pods run', async (t) => {
  const h = await startCluster();
  t.teardown(() => h.kubelet.stop());
  await h.clock.advance(1_000);
  h.api.put(CM, { metadata: { name: 'huge' }, data: { BLOB: 'x'.repeat(2 * 1024 * 1024) } });
  await h.api.createPod(
    withEnv('phase', [{ name: 'PHASE', valueFrom: { fieldRef: { fieldPath: 'status.phase' } } }]),
  );
  await h.api.createPod(withEnv('blob', [], { envFrom: [{ configMapRef: { name: 'huge' } }] }));
  await h.api.createPod(
    withEnv('fine', [{ name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }]),
  );
  await h.clock.advanceUntil(
    () =>
      apiStatus(h, 'fine')?.phase === 'Running' &&
      waitingOf(h, 'phase')?.reason === 'CreateContainerConfigError' &&
      waitingOf(h, 'blob')?.reason === 'CreateContainerConfigError',
    { stepMs: 100, maxMs: 5_000 },
  );
  t.regex(
    waitingOf(h, 'phase')!.message!,
    /^container "main": env "PHASE": valueFrom\.fieldRef: fieldPath "status\.phase" is not supported in an env var/,
  );
  t.regex(
    waitingOf(h, 'blob')!.message!,
    /^container "main": env "BLOB" \(envFrom configMap default\/huge key "BLOB"\): the variable is 2097158 bytes, more than/,
  );
  t.is((await containerEnv(h, 'fine')).NAME, 'fine');
});

test('volumes read through the API-backed objects under virtual time: a configMap file and a kube-api-access token', async (t) => {
  // The objects' first list runs on the clock; the volume set-up must not wait for it inside tracked I/O.
  const h = await startCluster();
  t.teardown(() => h.kubelet.stop());
  await h.clock.advance(1_000);
  h.api.put('/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'default', uid: 'sa-1' } });
  h.api.put(CM, { metadata: { name: 'game' }, data: { 'game.properties': 'lives=3' } });
  h.api.put(CM, { metadata: { name: 'kube-root-ca.crt' }, data: { 'ca.crt': 'PEM' } });
  const pod = apiPod('vol', {
    serviceAccountName: 'default',
    containers: [{ name: 'main', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent' }],
    volumes: [
      { name: 'config', configMap: { name: 'game' } },
      {
        name: 'kube-api-access-abcde',
        projected: {
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            {
              downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] },
            },
          ],
        },
      },
    ],
  });
  await h.api.createPod(pod);
  await h.clock.advanceUntil(() => apiStatus(h, 'vol')?.phase === 'Running', { stepMs: 100, maxMs: 15_000 });
  const uid = h.api.pods.get('default/vol')!.metadata!.uid!;
  const volumes = join(h.kubelet.options.rootDir, 'pods', uid, 'volumes');
  const config = join(volumes, 'kubernetes.io~configmap', 'config', 'game.properties');
  t.is(readFileSync(config, 'utf8'), 'lives=3');
  const access = join(volumes, 'kubernetes.io~projected', 'kube-api-access-abcde');
  t.is(readFileSync(join(access, 'namespace'), 'utf8'), 'default');
  t.is(readFileSync(join(access, 'ca.crt'), 'utf8'), 'PEM');
  t.true(readFileSync(join(access, 'token'), 'utf8').length > 0, 'a token was written');

  h.api.put(CM, { metadata: { name: 'game' }, data: { 'game.properties': 'lives=5' } });
  await h.clock.advanceUntil(() => readFileSync(config, 'utf8') === 'lives=5', {
    stepMs: 1_000,
    maxMs: 90_000,
  });
  t.pass('the change reached the file within the sync period');
});

import test from 'ava';
import type { Pod } from '@nodelet/api';
import { FakeKubeApi } from '@nodelet/client/testing';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { ObjectNotFoundError } from '@nodelet/volume';
import { ApiPodObjects } from './api-objects.js';

// The API-backed object cache on the in-memory API server and virtual time: which watches exist is
// read from the fake (each by its field selector), every wait is virtual.

const CM = '/api/v1/namespaces/default/configmaps';
const SECRETS = '/api/v1/namespaces/default/secrets';
const SERVICES = '/api/v1/namespaces/default/services';

function setup() {
  const clock = new VirtualClock();
  const api = new FakeKubeApi();
  api.now = () => clock.now();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const objects = new ApiPodObjects({ api: () => api, clock, logger });
  return { clock, api, objects, logs };
}

let uids = 0;
function pod(spec: Partial<NonNullable<Pod['spec']>>, uid = `uid-${++uids}`, namespace = 'default'): Pod {
  return { metadata: { name: `p-${uid}`, namespace, uid }, spec: { containers: [], ...spec } };
}

const envFromConfigMap = (name: string) => ({
  containers: [{ name: 'c', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name, key: 'k' } } }] }],
});

test('only the objects registered pods reference are watched, each by name, while one does', async (t) => {
  const { clock, api, objects } = setup();
  for (const name of ['cfg-a', 'cfg-b', 'cfg-c', 'unrelated']) api.put(CM, { metadata: { name }, data: {} });
  const first = pod({
    containers: [
      { name: 'c', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg-a', key: 'k' } } }] },
    ],
    volumes: [
      { name: 'v', projected: { sources: [{ configMap: { name: 'cfg-b' } }, { secret: { name: 's1' } }] } },
    ],
    imagePullSecrets: [{ name: 'pull' }],
  });
  objects.registerPod(first);
  const second = pod(envFromConfigMap('cfg-a'));
  objects.registerPod(second);
  await clock.advance(0);
  t.deepEqual(api.watchedSelectors(CM), ['metadata.name=cfg-a', 'metadata.name=cfg-b']);
  t.deepEqual(api.watchedSelectors(SECRETS), ['metadata.name=pull', 'metadata.name=s1']);
  t.is(api.callsOf('list', 'configmaps').length, 2, 'cfg-a is listed once for both pods');

  // A new version of the first pod that names cfg-c instead of cfg-b.
  objects.registerPod({
    ...first,
    spec: { ...first.spec!, volumes: [{ name: 'v', configMap: { name: 'cfg-c' } }] },
  });
  await clock.advance(0);
  t.deepEqual(api.watchedSelectors(CM), ['metadata.name=cfg-a', 'metadata.name=cfg-c']);
  t.deepEqual(api.watchedSelectors(SECRETS), ['metadata.name=pull']);

  objects.unregisterPod(first);
  await clock.advance(0);
  t.deepEqual(api.watchedSelectors(CM), ['metadata.name=cfg-a'], 'the second pod still references cfg-a');
  t.deepEqual(api.watchedSelectors(SECRETS), []);
  objects.unregisterPod(second);
  await clock.advance(0);
  t.deepEqual(api.watchedSelectors(CM), []);
  t.is(api.callsOf('list', 'configmaps').length, 3, 'cfg-a was never listed again while referenced');
  objects.stop();
});

test('reads: an update is seen, a deleted object is not found, a missing one neither (upstream message)', async (t) => {
  const { clock, api, objects } = setup();
  api.put(CM, { metadata: { name: 'cfg' }, data: { k: 'v1' } });
  objects.registerPod(
    pod({ ...envFromConfigMap('cfg'), volumes: [{ name: 'v', secret: { secretName: 'gone' } }] }),
  );
  await clock.advance(0); // the watches' first lists (the informers run on the clock)
  t.deepEqual((await objects.getConfigMap('default', 'cfg')).data, { k: 'v1' });
  api.put(CM, { metadata: { name: 'cfg' }, data: { k: 'v2' } });
  await clock.advance(0);
  t.deepEqual((await objects.getConfigMap('default', 'cfg')).data, { k: 'v2' });
  t.is(api.callsOf('get').length, 0, 'answered from the watch, never a GET');
  api.remove(CM, 'default/cfg');
  await clock.advance(0);
  const err = await t.throwsAsync(objects.getConfigMap('default', 'cfg'), {
    instanceOf: ObjectNotFoundError,
  });
  t.is(err!.message, 'configmap "cfg" not found');
  await t.throwsAsync(objects.getSecret('default', 'gone'), { message: 'secret "gone" not found' });
  // Created afterwards: the watch brings it.
  api.put(SECRETS, { metadata: { name: 'gone' }, data: { a: 'Yg==' } });
  await clock.advance(0);
  t.deepEqual((await objects.getSecret('default', 'gone')).data, { a: 'Yg==' });
  await t.throwsAsync(objects.getConfigMap('default', 'not-referenced'), {
    message: 'object "default"/"not-referenced" not registered',
  });
  objects.stop();
});

test('an immutable object stops being watched once it is seen immutable; its value stays readable', async (t) => {
  const { clock, api, objects, logs } = setup();
  api.put(CM, { metadata: { name: 'frozen' }, data: { k: 'v' }, immutable: true });
  api.put(CM, { metadata: { name: 'mutable' }, data: { k: 'v' } });
  objects.registerPod(
    pod({ ...envFromConfigMap('frozen'), volumes: [{ name: 'v', configMap: { name: 'mutable' } }] }),
  );
  await clock.advance(0);
  t.deepEqual(api.watchedSelectors(CM), ['metadata.name=frozen', 'metadata.name=mutable']);
  t.deepEqual((await objects.getConfigMap('default', 'frozen')).data, { k: 'v' });
  await objects.getConfigMap('default', 'mutable');
  t.deepEqual(api.watchedSelectors(CM), ['metadata.name=mutable']);
  t.true(logs.lines().some((l) => l.includes('Stopped watching for changes - object is immutable')));
  await clock.advance(60 * 60_000);
  t.deepEqual((await objects.getConfigMap('default', 'frozen')).data, { k: 'v' });
  t.is(api.callsOf('list', 'configmaps').length, 2, 'never listed again');
  objects.stop();
});

test('a read waits for the first list, at most 1 s; with the API away it fails as upstream, then recovers', async (t) => {
  const { clock, api, objects } = setup();
  api.put(CM, { metadata: { name: 'cfg' }, data: { k: 'v' } });
  api.down = true;
  objects.registerPod(pod(envFromConfigMap('cfg')));
  const read = objects.getConfigMap('default', 'cfg');
  read.catch(() => undefined);
  const started = clock.elapsed();
  await clock.advance(1_000);
  const err = await t.throwsAsync(read);
  t.regex(
    err!.message,
    /^failed to sync configmaps cache: timed out waiting for the condition \(list configmaps: the API server is unreachable\)$/,
  );
  t.is(clock.elapsed() - started, 1_000);
  api.down = false;
  await clock.advance(5_000); // the list's backoff
  t.deepEqual((await objects.getConfigMap('default', 'cfg')).data, { k: 'v' });
  objects.stop();
});

test('a watch nobody read for 5 min is stopped; the next read starts it again and lists afresh', async (t) => {
  const { clock, api, objects } = setup();
  api.put(CM, { metadata: { name: 'cfg' }, data: { k: 'v1' } });
  objects.registerPod(pod(envFromConfigMap('cfg')));
  await clock.advance(0);
  await objects.getConfigMap('default', 'cfg');
  await clock.advance(4 * 60_000);
  t.deepEqual(api.watchedSelectors(CM), ['metadata.name=cfg'], 'read 4 min ago: still watched');
  await clock.advance(2 * 60_000);
  t.deepEqual(api.watchedSelectors(CM), [], 'idle for more than 5 min');
  api.put(CM, { metadata: { name: 'cfg' }, data: { k: 'v2' } });
  const again = objects.getConfigMap('default', 'cfg');
  await clock.advance(0);
  t.deepEqual((await again).data, { k: 'v2' });
  t.deepEqual(api.watchedSelectors(CM), ['metadata.name=cfg']);
  t.is(api.callsOf('list', 'configmaps').length, 2);
  objects.stop();
});

test('services: default always, the pod namespace with service links; an API pod waits for the list', async (t) => {
  const { clock, api, objects } = setup();
  api.put(SERVICES, {
    metadata: { name: 'kubernetes' },
    spec: { clusterIP: '10.96.0.1', ports: [{ port: 443 }] },
  });
  api.put('/api/v1/namespaces/team/services', { metadata: { name: 'db' }, spec: { clusterIP: '10.96.0.9' } });
  const linked = pod({}, 'linked', 'team');
  const unlinked = pod({ enableServiceLinks: false }, 'unlinked', 'other');
  objects.registerPod(linked);
  objects.registerPod(unlinked);
  await clock.advance(0);
  const names = async (p: Pod) =>
    (await objects.servicesFor(p)).map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`);
  t.deepEqual(await names(linked), ['default/kubernetes', 'team/db']);
  t.deepEqual(await names(unlinked), ['default/kubernetes']);
  t.is(api.openWatches('/api/v1/services'), 2, 'default and team, not other');
  objects.unregisterPod(linked);
  await clock.advance(0);
  t.is(api.openWatches('/api/v1/namespaces/team/services'), 0);
  t.is(api.openWatches(SERVICES), 1);
  objects.stop();
});

test('services: an API pod fails with upstream words when they cannot be listed; a static pod goes on', async (t) => {
  const { clock, api, objects } = setup();
  api.down = true;
  const apiPod = pod({});
  const staticPod: Pod = {
    ...pod({}),
    metadata: { ...pod({}).metadata, annotations: { 'kubernetes.io/config.source': 'file' } },
  };
  objects.registerPod(apiPod);
  objects.registerPod(staticPod);
  const waiting = objects.servicesFor(apiPod);
  waiting.catch(() => undefined);
  await clock.advance(1_000);
  await t.throwsAsync(waiting, {
    message: 'services have not yet been read at least once, cannot construct envvars',
  });
  t.deepEqual(await objects.servicesFor(staticPod), []);
  objects.stop();
});

test('pods registered before the API connection: reads say so, then start their watches once it exists', async (t) => {
  const clock = new VirtualClock();
  const api = new FakeKubeApi();
  let connected = false;
  const logger = createLogger({ sink: new MemorySink().sink });
  const objects = new ApiPodObjects({ api: () => (connected ? api : undefined), clock, logger });
  api.put(CM, { metadata: { name: 'cfg' }, data: { k: 'v' } });
  api.put(SERVICES, {
    metadata: { name: 'kubernetes' },
    spec: { clusterIP: '10.96.0.1', ports: [{ port: 443 }] },
  });
  const staticPod: Pod = {
    ...pod(envFromConfigMap('cfg')),
    metadata: {
      name: 'static',
      namespace: 'default',
      uid: 'static-uid',
      annotations: { 'kubernetes.io/config.source': 'file' },
    },
  };
  objects.registerPod(staticPod);
  await clock.advance(0);
  await t.throwsAsync(objects.getConfigMap('default', 'cfg'), {
    message: "couldn't get configmap default/cfg: the kubelet is not connected to the API server yet",
  });
  t.deepEqual(await objects.servicesFor(staticPod), []);
  connected = true;
  const read = objects.getConfigMap('default', 'cfg');
  t.deepEqual(await objects.servicesFor(staticPod), [], 'a static pod does not wait');
  await clock.advance(0);
  t.deepEqual((await read).data, { k: 'v' });
  t.is((await objects.servicesFor(staticPod)).length, 1, 'the Services are watched now');
  objects.stop();
});

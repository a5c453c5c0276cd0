import test from 'ava';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import { namespaces } from '../resources/namespaces.js';
import { pods } from '../resources/pods.js';
import { replicaSets } from '../resources/replica-sets.js';
import { RevisionStore } from '../storage/revision-store.js';
import { waitFor } from '../test-helpers.js';
import { GarbageCollector } from './garbage-collector.js';
import { ReplicaSetController } from './replicaset-controller.js';

// Cascading deletion of what a ReplicaSet owns, on an in-memory store and a virtual clock.

function setup() {
  const clock = new VirtualClock();
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock,
    types: [namespaces, pods, replicaSets],
  });
  registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const logger = createLogger({ sink: new MemorySink().sink });
  const rsc = new ReplicaSetController(registry, clock, logger);
  const gc = new GarbageCollector(registry, clock, logger);
  return { registry, rsc, gc };
}

const rs = (name: string) => ({
  apiVersion: 'apps/v1',
  kind: 'ReplicaSet',
  metadata: { name },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    },
  },
});

const podNames = (registry: Registry) =>
  registry.store.listAll('pods', 'default').map((s) => s.object.metadata.name!);

test('deleting a ReplicaSet deletes its pods (background)', async (t) => {
  const { registry, rsc, gc } = setup();
  registry.create(replicaSets, 'default', rs('web'));
  rsc.sync('default/web');
  t.is(podNames(registry).length, 2);
  gc.start();
  t.teardown(() => gc.stop());
  registry.delete(replicaSets, 'default', 'web', { propagationPolicy: 'Background' });
  await waitFor(() => (podNames(registry).length === 0 ? true : undefined), 'pods collected');
  t.pass();
});

test('Orphan: the ReplicaSet goes, its pods stay without the reference', async (t) => {
  const { registry, rsc, gc } = setup();
  registry.create(replicaSets, 'default', rs('web'));
  rsc.sync('default/web');
  gc.start();
  t.teardown(() => gc.stop());
  const marked = registry.delete(replicaSets, 'default', 'web', { propagationPolicy: 'Orphan' });
  t.false(marked.deleted, 'held by the orphan finalizer');
  await waitFor(
    () => (registry.store.get('replicasets', 'default', 'web') ? undefined : true),
    'the ReplicaSet removed',
  );
  const left = registry.store.listAll('pods', 'default').map((s) => s.object);
  t.is(left.length, 2);
  for (const p of left) t.falsy(p.metadata.ownerReferences);
});

test('a dependent with another live owner only loses the dangling reference', (t) => {
  const { registry, gc } = setup();
  const { object: a } = registry.create(replicaSets, 'default', rs('a'));
  const { object: b } = registry.create(replicaSets, 'default', rs('b'));
  const ref = (o: typeof a) => ({
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    name: o.metadata.name,
    uid: o.metadata.uid,
  });
  registry.create(pods, 'default', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'shared', ownerReferences: [ref(a), ref(b)] },
    spec: { containers: [{ name: 'c', image: 'nginx' }] },
  });
  registry.delete(replicaSets, 'default', 'a');
  gc.sync('dependent/pods/default/shared');
  t.deepEqual(registry.store.get('pods', 'default', 'shared')!.object.metadata.ownerReferences, [ref(b)]);
  registry.delete(replicaSets, 'default', 'b');
  gc.sync('dependent/pods/default/shared');
  t.is(registry.store.get('pods', 'default', 'shared'), undefined);
});

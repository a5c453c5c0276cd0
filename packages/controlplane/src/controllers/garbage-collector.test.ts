import test from 'ava';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import { deployments } from '../resources/deployments.js';
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
    types: [namespaces, pods, replicaSets, deployments],
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

test('Foreground: the ReplicaSet stays, marked, until its pods are gone, then goes', async (t) => {
  const { registry, rsc, gc } = setup();
  registry.create(replicaSets, 'default', rs('web'));
  rsc.sync('default/web');
  // Bound to a node, a pod's deletion is graceful: it stays until its kubelet removes it.
  for (const name of podNames(registry)) {
    registry.store.update('pods', 'default', name, (p) => ({ ...p, spec: { ...p.spec, nodeName: 'n1' } }));
  }
  gc.start();
  t.teardown(() => gc.stop());
  const marked = registry.delete(replicaSets, 'default', 'web', { propagationPolicy: 'Foreground' });
  t.false(marked.deleted);
  t.deepEqual(marked.body.metadata?.finalizers, ['foregroundDeletion']);
  t.truthy(marked.body.metadata?.deletionTimestamp);
  // The pods are deleted first, gracefully: terminating, they still block their owner.
  const terminating = await waitFor(() => {
    const all = registry.store.listAll('pods', 'default').map((s) => s.object);
    return all.length === 2 && all.every((p) => p.metadata.deletionTimestamp) ? all : undefined;
  }, 'both pods marked for deletion');
  t.truthy(
    registry.store.get('replicasets', 'default', 'web'),
    'the owner waits for its blocking dependents',
  );
  // The kubelet's last word: each pod removed.
  for (const p of terminating) registry.forceRemove('pods', 'default', p.metadata.name!);
  await waitFor(
    () => (registry.store.get('replicasets', 'default', 'web') ? undefined : true),
    'the ReplicaSet removed once its pods are gone',
  );
  t.is(podNames(registry).length, 0);
});

test('Foreground: a dependent without blockOwnerDeletion is deleted but does not hold its owner', async (t) => {
  const { registry, gc } = setup();
  const { object: owner } = registry.create(replicaSets, 'default', {
    ...rs('web'),
    spec: { ...rs('web').spec, replicas: 0 },
  });
  registry.create(pods, 'default', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'loose',
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: owner.metadata.uid }],
    },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'nginx' }] },
  });
  gc.start();
  t.teardown(() => gc.stop());
  registry.delete(replicaSets, 'default', 'web', { propagationPolicy: 'Foreground' });
  await waitFor(
    () => (registry.store.get('replicasets', 'default', 'web') ? undefined : true),
    'the ReplicaSet removed while its pod terminates',
  );
  t.truthy(registry.store.get('pods', 'default', 'loose')?.object.metadata.deletionTimestamp);
});

test('Foreground through two levels: pods, then the ReplicaSet, then the Deployment', async (t) => {
  const { registry, rsc, gc } = setup();
  const { object: d } = registry.create(deployments, 'default', {
    metadata: { name: 'web' },
    spec: { replicas: 2, selector: rs('web').spec.selector, template: rs('web').spec.template },
  });
  const owned = rs('web-1');
  registry.create(replicaSets, 'default', {
    ...owned,
    metadata: {
      name: 'web-1',
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name: 'web',
          uid: d.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
  });
  rsc.sync('default/web-1');
  for (const name of podNames(registry)) {
    registry.store.update('pods', 'default', name, (p) => ({ ...p, spec: { ...p.spec, nodeName: 'n1' } }));
  }
  const removed: string[] = [];
  for (const storage of ['pods', 'replicasets', 'deployments']) {
    registry.store.subscribe(storage, (e) => e.op === 'delete' && removed.push(storage));
  }
  gc.start();
  t.teardown(() => gc.stop());
  registry.delete(deployments, 'default', 'web', { propagationPolicy: 'Foreground' });
  const set = await waitFor(() => {
    const o = registry.store.get('replicasets', 'default', 'web-1')?.object;
    return o?.metadata.finalizers?.includes('foregroundDeletion') ? o : undefined;
  }, 'the ReplicaSet deleting in the foreground too');
  t.truthy(set.metadata.deletionTimestamp);
  const terminating = await waitFor(() => {
    const all = registry.store.listAll('pods', 'default').map((s) => s.object);
    return all.every((p) => p.metadata.deletionTimestamp) ? all : undefined;
  }, 'the pods marked for deletion');
  t.deepEqual(removed, [], 'nothing removed while the pods terminate');
  for (const p of terminating) registry.forceRemove('pods', 'default', p.metadata.name!);
  await waitFor(
    () => (registry.store.get('deployments', 'default', 'web') ? undefined : true),
    'the Deployment removed last',
  );
  t.deepEqual(removed, ['pods', 'pods', 'replicasets', 'deployments']);
});

import test from 'ava';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import type { KubeObject } from '../object.js';
import { namespaces } from '../resources/namespaces.js';
import { pods } from '../resources/pods.js';
import { replicaSets } from '../resources/replica-sets.js';
import { RevisionStore } from '../storage/revision-store.js';
import { rfc3339 } from '../object.js';
import { waitFor } from '../test-helpers.js';
import { ReplicaSetController } from './replicaset-controller.js';

// The ReplicaSet controller one sync at a time, on an in-memory store and a virtual clock.

function setup() {
  const clock = new VirtualClock();
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock,
    types: [namespaces, pods, replicaSets],
  });
  registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const controller = new ReplicaSetController(registry, clock, createLogger({ sink: new MemorySink().sink }));
  return { clock, registry, controller };
}

function rs(name: string, replicas: number, extra: Record<string, unknown> = {}): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name, tier: 'web' } },
        spec: { containers: [{ name: 'c', image: 'nginx' }] },
      },
      ...extra,
    },
  };
}

const podsOf = (registry: Registry) =>
  registry.store
    .listAll('pods', 'default')
    .map((s) => s.object)
    .filter((p) => !p.metadata.deletionTimestamp);

function setPod(registry: Registry, name: string, f: (p: KubeObject) => void): void {
  registry.store.update('pods', 'default', name, (p) => {
    f(p);
    return p;
  });
}

function makeReady(registry: Registry, name: string, node: string, at: number): void {
  setPod(registry, name, (p) => {
    p.spec.nodeName = node;
    p.status = {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: rfc3339(at) }],
    };
  });
}

test('creates the missing pods from the template, owned by the ReplicaSet, and reports status', (t) => {
  const { registry, controller } = setup();
  const { object: set } = registry.create(replicaSets, 'default', rs('web', 3));
  controller.sync('default/web');
  const created = podsOf(registry);
  t.is(created.length, 3);
  for (const p of created) {
    t.regex(p.metadata.name!, /^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    t.deepEqual(p.metadata.labels, { app: 'web', tier: 'web' });
    t.deepEqual(p.metadata.ownerReferences, [
      {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        name: 'web',
        uid: set.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    t.is(p.spec.restartPolicy, 'Always');
  }
  const status = registry.store.get('replicasets', 'default', 'web')!.object.status;
  t.deepEqual(status, { replicas: 3, fullyLabeledReplicas: 3, observedGeneration: 1 });
  const rev = registry.store.revision;
  controller.sync('default/web');
  t.is(registry.store.revision, rev, 'in sync: no writes');
});

test('scales down unscheduled, then pending, then not-ready pods before ready ones', (t) => {
  const { clock, registry, controller } = setup();
  registry.create(replicaSets, 'default', rs('web', 4));
  controller.sync('default/web');
  const [a, b, c, d] = podsOf(registry).map((p) => p.metadata.name!) as [string, string, string, string];
  makeReady(registry, a, 'node-1', clock.now());
  makeReady(registry, b, 'node-1', clock.now());
  setPod(registry, c, (p) => {
    p.spec.nodeName = 'node-1';
    p.status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] };
  });
  // d stays unscheduled and Pending.
  registry.update(replicaSets, 'default', 'web', {
    ...registry.store.get('replicasets', 'default', 'web')!.object,
    spec: { ...registry.store.get('replicasets', 'default', 'web')!.object.spec, replicas: 2 },
  });
  controller.sync('default/web');
  const left = registry.store.listAll('pods', 'default').map((s) => s.object);
  t.falsy(
    left.find((p) => p.metadata.name === d),
    'the unscheduled pod went at once',
  );
  t.truthy(left.find((p) => p.metadata.name === c)?.metadata.deletionTimestamp, 'the not-ready one is going');
  t.deepEqual(
    podsOf(registry)
      .map((p) => p.metadata.name)
      .sort(),
    [a, b].sort(),
  );
  const set = registry.store.get('replicasets', 'default', 'web')!.object;
  t.like(set.status, { replicas: 2, readyReplicas: 2, availableReplicas: 2, observedGeneration: 2 });
});

test('adopts matching orphans, releases pods whose labels stopped matching, leaves others alone', (t) => {
  const { registry, controller } = setup();
  const orphan = (name: string, labels: Record<string, string>, extra: Record<string, unknown> = {}) =>
    registry.create(pods, 'default', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels, ...extra },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    });
  orphan('stray', { app: 'web' });
  orphan(
    'foreign',
    { app: 'web' },
    {
      ownerReferences: [{ apiVersion: 'v1', kind: 'Other', name: 'o', uid: 'u-1', controller: true }],
    },
  );
  orphan('unrelated', { app: 'db' });
  registry.create(replicaSets, 'default', rs('web', 2));
  controller.sync('default/web');
  const owned = podsOf(registry).filter((p) =>
    p.metadata.ownerReferences?.some((r: any) => r.kind === 'ReplicaSet'),
  );
  t.is(owned.length, 2, 'the stray pod adopted, one created');
  t.truthy(owned.find((p) => p.metadata.name === 'stray'));
  t.is(registry.store.get('pods', 'default', 'foreign')!.object.metadata.ownerReferences?.[0]?.kind, 'Other');
  t.falsy(registry.store.get('pods', 'default', 'unrelated')!.object.metadata.ownerReferences);
  // Relabelled out of the selector: released, and replaced.
  setPod(registry, 'stray', (p) => (p.metadata.labels = { app: 'moved' }));
  controller.sync('default/web');
  t.falsy(registry.store.get('pods', 'default', 'stray')!.object.metadata.ownerReferences);
  t.is(registry.store.get('replicasets', 'default', 'web')!.object.status.replicas, 2);
  t.is(podsOf(registry).length, 5);
});

test('running: a deleted pod is replaced; available after minReadySeconds on the clock', async (t) => {
  const { clock, registry, controller } = setup();
  registry.create(replicaSets, 'default', rs('web', 2, { minReadySeconds: 10 }));
  controller.start();
  t.teardown(() => controller.stop());
  await waitFor(() => (podsOf(registry).length === 2 ? true : undefined), 'two pods');
  for (const p of podsOf(registry)) makeReady(registry, p.metadata.name!, 'node-1', clock.now());
  const status = () => registry.store.get('replicasets', 'default', 'web')!.object.status;
  await waitFor(() => (status().readyReplicas === 2 ? true : undefined), 'two ready');
  t.is(status().availableReplicas, undefined, 'not yet available');
  await clock.advance(10_000);
  await waitFor(() => (status().availableReplicas === 2 ? true : undefined), 'two available');
  const victim = podsOf(registry)[0]!.metadata.name!;
  registry.delete(pods, 'default', victim);
  await waitFor(
    () => (podsOf(registry).filter((p) => p.metadata.name !== victim).length === 2 ? true : undefined),
    'a replacement',
  );
  t.pass();
});

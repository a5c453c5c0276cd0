import test from 'ava';
import type { Registry } from '../apiserver/registry.js';
import { statefulSets } from '../resources/stateful-sets.js';
import { StatefulSetController } from './stateful-set-controller.js';
import { finishDeletions, livePods, makeReady, workloadRegistry } from './workload-test-support.js';

// The StatefulSet controller one sync at a time, on an in-memory store and a virtual clock; the test plays
// the scheduler and the kubelet (binding pods, marking them Ready, removing deleted ones).

function setup() {
  const { clock, registry, logger } = workloadRegistry([statefulSets]);
  const controller = new StatefulSetController(registry, clock, logger);
  return { clock, registry, controller };
}

function web(replicas: number, extra: Record<string, unknown> = {}): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'web' },
    spec: {
      replicas,
      serviceName: 'nginx',
      selector: { matchLabels: { app: 'nginx' } },
      template: {
        metadata: { labels: { app: 'nginx' } },
        spec: { containers: [{ name: 'nginx', image: 'nginx:1.26' }] },
      },
      ...extra,
    },
  };
}

const names = (registry: Registry) =>
  livePods(registry)
    .map((p) => p.metadata.name!)
    .sort();

/** The kubelet: pods that are not yet running start and become Ready. */
function runAll(registry: Registry, now: number): void {
  for (const p of livePods(registry))
    if (p.status?.phase !== 'Running') makeReady(registry, p.metadata.name!, 'node-1', now);
}

/** Syncs `rounds` times, the kubelet starting what was made after each. */
function settle(registry: Registry, controller: StatefulSetController, now: number, rounds: number): void {
  for (let i = 0; i < rounds; i++) {
    controller.sync('default/web');
    runAll(registry, now);
  }
}

const sts = (registry: Registry) => registry.store.get('statefulsets', 'default', 'web')!.object;

function update(registry: Registry, f: (spec: any) => void): void {
  const obj = structuredClone(sts(registry));
  f(obj.spec);
  registry.update(statefulSets, 'default', 'web', obj);
}

test('OrderedReady: web-0, web-1, web-2 one at a time, each after the one before is Ready', (t) => {
  const { clock, registry, controller } = setup();
  registry.create(statefulSets, 'default', web(3));
  controller.sync('default/web');
  t.deepEqual(names(registry), ['web-0']);
  controller.sync('default/web');
  t.deepEqual(names(registry), ['web-0'], 'web-1 waits for web-0 to be Ready');
  const pod = livePods(registry)[0]!;
  t.like(pod.metadata.labels, {
    app: 'nginx',
    'statefulset.kubernetes.io/pod-name': 'web-0',
    'apps.kubernetes.io/pod-index': '0',
  });
  t.is(pod.spec.hostname, 'web-0');
  t.is(pod.spec.subdomain, 'nginx');
  t.like(pod.metadata.ownerReferences?.[0], { kind: 'StatefulSet', name: 'web', controller: true });
  const revision = registry.store.listAll('controllerrevisions', 'default')[0]!.object;
  t.is(pod.metadata.labels?.['controller-revision-hash'], revision.metadata.name);

  makeReady(registry, 'web-0', 'node-1', clock.now());
  controller.sync('default/web');
  t.deepEqual(names(registry), ['web-0', 'web-1']);
  makeReady(registry, 'web-1', 'node-1', clock.now());
  controller.sync('default/web');
  t.deepEqual(names(registry), ['web-0', 'web-1', 'web-2']);
  makeReady(registry, 'web-2', 'node-1', clock.now());
  controller.sync('default/web');
  t.like(sts(registry).status, {
    replicas: 3,
    readyReplicas: 3,
    availableReplicas: 3,
    currentReplicas: 3,
    updatedReplicas: 3,
    currentRevision: revision.metadata.name,
    updateRevision: revision.metadata.name,
    observedGeneration: 1,
  });
});

test('OrderedReady scales down from the highest ordinal, one at a time', (t) => {
  const { clock, registry, controller } = setup();
  registry.create(statefulSets, 'default', web(3));
  settle(registry, controller, clock.now(), 3);
  t.deepEqual(names(registry), ['web-0', 'web-1', 'web-2']);
  update(registry, (spec) => (spec.replicas = 1));
  controller.sync('default/web');
  t.deepEqual(names(registry), ['web-0', 'web-1'], 'web-2 goes first');
  controller.sync('default/web');
  t.deepEqual(names(registry), ['web-0', 'web-1'], 'web-1 waits for web-2 to be gone');
  finishDeletions(registry);
  controller.sync('default/web');
  t.deepEqual(names(registry), ['web-0']);
  finishDeletions(registry);
  controller.sync('default/web');
  t.like(sts(registry).status, { replicas: 1, readyReplicas: 1 });
});

test('Parallel makes and removes every pod at once', (t) => {
  const { registry, controller } = setup();
  registry.create(statefulSets, 'default', web(3, { podManagementPolicy: 'Parallel' }));
  controller.sync('default/web');
  t.deepEqual(names(registry), ['web-0', 'web-1', 'web-2']);
  update(registry, (spec) => (spec.replicas = 0));
  controller.sync('default/web');
  t.deepEqual(names(registry), []);
});

test('spec.ordinals.start numbers the pods from it', (t) => {
  const { registry, controller } = setup();
  registry.create(
    statefulSets,
    'default',
    web(2, { podManagementPolicy: 'Parallel', ordinals: { start: 5 } }),
  );
  controller.sync('default/web');
  t.deepEqual(names(registry), ['web-5', 'web-6']);
  const index = registry.store.get('pods', 'default', 'web-6')!.object.metadata.labels?.[
    'apps.kubernetes.io/pod-index'
  ];
  t.is(index, '6');
});

test('a rolling update with partition 1 replaces web-2 then web-1, highest first, and keeps web-0', (t) => {
  const { clock, registry, controller } = setup();
  registry.create(statefulSets, 'default', web(3));
  settle(registry, controller, clock.now(), 4);
  const before = sts(registry).status.currentRevision;
  update(registry, (spec) => {
    spec.template.spec.containers[0].image = 'nginx:1.27';
    spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { partition: 1 } };
  });
  const order: string[] = [];
  for (let i = 0; i < 8; i++) {
    controller.sync('default/web');
    for (const s of registry.store.listAll('pods', 'default'))
      if (s.object.metadata.deletionTimestamp) order.push(s.object.metadata.name!);
    finishDeletions(registry);
    controller.sync('default/web');
    runAll(registry, clock.now());
  }
  t.deepEqual(order, ['web-2', 'web-1']);
  const image = (n: string) => registry.store.get('pods', 'default', n)!.object.spec.containers[0].image;
  t.deepEqual(['web-0', 'web-1', 'web-2'].map(image), ['nginx:1.26', 'nginx:1.27', 'nginx:1.27']);
  const status = sts(registry).status;
  t.is(status.currentRevision, before, 'web-0 still runs the current revision');
  t.not(status.updateRevision, before);
  t.like(status, { replicas: 3, updatedReplicas: 2, currentReplicas: 1 });
  // A deleted pod below the partition comes back at the current revision.
  registry.delete(registry.byStorage('pods'), 'default', 'web-0');
  finishDeletions(registry);
  controller.sync('default/web');
  t.is(image('web-0'), 'nginx:1.26');
});

test('a deleted pod comes back with its name and identity', (t) => {
  const { clock, registry, controller } = setup();
  registry.create(statefulSets, 'default', web(2));
  settle(registry, controller, clock.now(), 3);
  const uid = registry.store.get('pods', 'default', 'web-1')!.object.metadata.uid;
  registry.delete(registry.byStorage('pods'), 'default', 'web-1');
  controller.sync('default/web');
  t.deepEqual(names(registry), ['web-0'], 'not while the old web-1 terminates');
  finishDeletions(registry);
  controller.sync('default/web');
  const again = registry.store.get('pods', 'default', 'web-1')!.object;
  t.not(again.metadata.uid, uid);
  t.is(again.metadata.labels?.['statefulset.kubernetes.io/pod-name'], 'web-1');
  // Identity labels taken off are put back.
  registry.store.update('pods', 'default', 'web-1', (p) => {
    delete p.metadata.labels!['apps.kubernetes.io/pod-index'];
    return p;
  });
  controller.sync('default/web');
  t.is(
    registry.store.get('pods', 'default', 'web-1')!.object.metadata.labels?.['apps.kubernetes.io/pod-index'],
    '1',
  );
});

test('validation: volumeClaimTemplates refused by name; only some spec fields may change', (t) => {
  const { registry } = setup();
  const withClaims = web(1, {
    volumeClaimTemplates: [{ metadata: { name: 'www' }, spec: { accessModes: ['ReadWriteOnce'] } }],
  });
  const err = t.throws(() => registry.create(statefulSets, 'default', withClaims));
  t.regex(err!.message, /spec\.volumeClaimTemplates: Forbidden: persistent volumes are not supported/);
  const { object } = registry.create(statefulSets, 'default', web(1));
  t.like(object.spec, {
    podManagementPolicy: 'OrderedReady',
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
    revisionHistoryLimit: 10,
    persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
  });
  const changed = structuredClone(object);
  changed.spec.serviceName = 'other';
  t.regex(
    t.throws(() => registry.update(statefulSets, 'default', 'web', changed))!.message,
    /spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template'/,
  );
});

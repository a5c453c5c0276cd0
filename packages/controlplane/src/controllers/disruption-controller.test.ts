import test from 'ava';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import { rfc3339, type KubeObject } from '../object.js';
import { deployments } from '../resources/deployments.js';
import { namespaces } from '../resources/namespaces.js';
import { podDisruptionBudgets } from '../resources/pod-disruption-budgets.js';
import { pods } from '../resources/pods.js';
import { replicaSets } from '../resources/replica-sets.js';
import { RevisionStore } from '../storage/revision-store.js';
import { waitFor } from '../test-helpers.js';
import { DisruptionController } from './disruption-controller.js';

// The disruption controller one sync at a time, on an in-memory store and a virtual clock.

function setup() {
  const clock = new VirtualClock();
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock,
    types: [namespaces, pods, replicaSets, deployments, podDisruptionBudgets],
  });
  registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const controller = new DisruptionController(registry, clock, createLogger({ sink: new MemorySink().sink }));
  return { clock, registry, controller };
}

/** A ReplicaSet of `replicas` (its spec only: the test makes the pods) and, given one, its Deployment. */
function replicaSet(registry: Registry, replicas: number, deploymentReplicas?: number): KubeObject {
  const template = {
    metadata: { labels: { app: 'web' } },
    spec: { containers: [{ name: 'c', image: 'nginx' }] },
  };
  const selector = { matchLabels: { app: 'web' } };
  let ownerReferences: object[] | undefined;
  if (deploymentReplicas !== undefined) {
    const { object: d } = registry.create(deployments, 'default', {
      metadata: { name: 'web' },
      spec: { replicas: deploymentReplicas, selector, template },
    });
    ownerReferences = [
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: d.metadata.uid, controller: true },
    ];
  }
  return registry.create(replicaSets, 'default', {
    metadata: { name: 'web-1', ...(ownerReferences ? { ownerReferences } : {}) },
    spec: { replicas, selector, template },
  }).object;
}

/** A pod of `owner` (or unmanaged), Ready or not. */
function pod(registry: Registry, name: string, ready: boolean, owner?: KubeObject): void {
  const ownerReferences = owner
    ? [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: owner.metadata.name,
          uid: owner.metadata.uid,
          controller: true,
        },
      ]
    : undefined;
  registry.create(pods, 'default', {
    metadata: { name, labels: { app: 'web' }, ...(ownerReferences ? { ownerReferences } : {}) },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'nginx' }] },
  });
  registry.store.update('pods', 'default', name, (p) => {
    p.status = { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] };
    return p;
  });
}

/** A ReplicaSet of `n` (under a Deployment of `deploymentReplicas` if given) and `n` Ready pods a, b, c… */
function readyReplicaSet(registry: Registry, n: number, deploymentReplicas?: number): KubeObject {
  const rs = replicaSet(registry, n, deploymentReplicas);
  for (let i = 0; i < n; i++) pod(registry, String.fromCharCode(97 + i), true, rs);
  return rs;
}

function budget(registry: Registry, spec: Record<string, unknown>): void {
  registry.create(podDisruptionBudgets, 'default', {
    metadata: { name: 'web' },
    spec: { selector: { matchLabels: { app: 'web' } }, ...spec },
  });
}

const status = (registry: Registry) =>
  registry.store.get('poddisruptionbudgets', 'default', 'web')!.object.status;

/** [expectedPods, desiredHealthy, currentHealthy, disruptionsAllowed] of the budget's status. */
const counts = (registry: Registry) => {
  const s = status(registry);
  return [s.expectedPods, s.desiredHealthy, s.currentHealthy, s.disruptionsAllowed];
};

test('minAvailable 2 over three Ready pods: one disruption allowed, SufficientPods', (t) => {
  const { registry, controller } = setup();
  readyReplicaSet(registry, 3);
  budget(registry, { minAvailable: 2 });
  controller.sync('default/web');
  const s = status(registry);
  t.deepEqual(counts(registry), [3, 2, 3, 1]);
  t.is(s.observedGeneration, 1);
  t.like(s.conditions[0], {
    type: 'DisruptionAllowed',
    status: 'True',
    reason: 'SufficientPods',
    observedGeneration: 1,
  });
});

test('minAvailable 2 over two Ready pods: none allowed, InsufficientPods; a third Ready pod allows one', (t) => {
  const { registry, controller } = setup();
  const rs = readyReplicaSet(registry, 2);
  budget(registry, { minAvailable: 2 });
  controller.sync('default/web');
  t.deepEqual(counts(registry), [2, 2, 2, 0]);
  t.like(status(registry).conditions[0], { status: 'False', reason: 'InsufficientPods' });
  pod(registry, 'c', false, rs);
  controller.sync('default/web');
  t.is(status(registry).disruptionsAllowed, 0, 'a pod that is not Ready is not healthy');
  registry.store.update('pods', 'default', 'c', (p) => {
    p.status.conditions = [{ type: 'Ready', status: 'True' }];
    return p;
  });
  controller.sync('default/web');
  t.deepEqual(counts(registry), [3, 2, 3, 1]);
});

test('maxUnavailable 1 counts against the Deployment scale, not the pods that exist', (t) => {
  const { registry, controller } = setup();
  readyReplicaSet(registry, 2, 4);
  budget(registry, { maxUnavailable: 1 });
  controller.sync('default/web');
  t.deepEqual(counts(registry), [4, 3, 2, 0]);
});

test('percentages scale against the ReplicaSet and round up', (t) => {
  const { registry, controller } = setup();
  readyReplicaSet(registry, 3);
  budget(registry, { minAvailable: '50%' });
  controller.sync('default/web');
  // ceil(1.5) = 2 must stay healthy.
  t.deepEqual(counts(registry), [3, 2, 3, 1]);
  registry.store.update('poddisruptionbudgets', 'default', 'web', (p) => {
    p.spec = { selector: p.spec.selector, maxUnavailable: '34%' };
    p.metadata.generation = 2;
    return p;
  });
  controller.sync('default/web');
  // ceil(1.02) = 2 may be unavailable: 1 must stay.
  t.deepEqual(counts(registry), [3, 1, 3, 2]);
  t.is(status(registry).observedGeneration, 2);
});

test('a pod whose controller is gone fails safe: nothing allowed, reason SyncFailed', (t) => {
  const { registry, controller } = setup();
  readyReplicaSet(registry, 3);
  budget(registry, { minAvailable: '50%' });
  controller.sync('default/web');
  t.is(status(registry).disruptionsAllowed, 1);
  registry.store.delete('replicasets', 'default', 'web-1');
  controller.sync('default/web');
  t.is(status(registry).disruptionsAllowed, 0);
  t.like(status(registry).conditions[0], {
    status: 'False',
    reason: 'SyncFailed',
    message: 'found no controllers for pod "a"',
  });
});

test('an evicted pod is not healthy until two minutes pass without its deletion', async (t) => {
  const { clock, registry, controller } = setup();
  readyReplicaSet(registry, 3);
  budget(registry, { minAvailable: 1 });
  controller.sync('default/web');
  t.is(status(registry).disruptionsAllowed, 2);
  registry.store.update('poddisruptionbudgets', 'default', 'web', (p) => {
    p.status.disruptedPods = { a: rfc3339(clock.now()) };
    return p;
  });
  controller.sync('default/web');
  t.like(status(registry), {
    currentHealthy: 2,
    disruptionsAllowed: 1,
    disruptedPods: { a: rfc3339(clock.now()) },
  });
  controller.start();
  t.teardown(() => controller.stop());
  await clock.advance(2 * 60_000 + 1);
  await waitFor(() => (status(registry).currentHealthy === 3 ? true : undefined), 'the eviction forgotten');
  t.like(status(registry), { currentHealthy: 3, disruptionsAllowed: 2 });
  t.is(status(registry).disruptedPods, undefined);
});

test('a DisruptionTarget left on a pod that was never deleted is set to False after two minutes', async (t) => {
  const { clock, registry, controller } = setup();
  const rs = replicaSet(registry, 2);
  for (const name of ['kept', 'going']) {
    pod(registry, name, true, rs);
    registry.store.update('pods', 'default', name, (p) => {
      p.status.conditions.push({
        type: 'DisruptionTarget',
        status: 'True',
        reason: 'EvictionByEvictionAPI',
        message: 'Eviction API: evicting',
        lastTransitionTime: rfc3339(clock.now()),
      });
      if (name === 'going') p.metadata.deletionTimestamp = rfc3339(clock.now() + 30_000);
      return p;
    });
  }
  controller.start();
  t.teardown(() => controller.stop());
  const target = (name: string) =>
    registry.store
      .get('pods', 'default', name)!
      .object.status.conditions.find((c: { type: string }) => c.type === 'DisruptionTarget');
  await clock.advance(60_000);
  t.is(target('kept').status, 'True', 'not stale yet');
  await clock.advance(60_000);
  await waitFor(() => (target('kept').status === 'False' ? true : undefined), 'the stale condition cleared');
  t.is(target('kept').lastTransitionTime, rfc3339(clock.now()));
  t.is(target('going').status, 'True', 'a pod being deleted keeps it');
});

import test from 'ava';
import { VirtualClock } from '@nodelet/kernel';
import { rfc3339 } from '../object.js';
import { namespaces } from '../resources/namespaces.js';
import { podDisruptionBudgets } from '../resources/pod-disruption-budgets.js';
import { pods } from '../resources/pods.js';
import { RevisionStore } from '../storage/revision-store.js';
import { evictPod } from './eviction.js';
import { Registry } from './registry.js';
import { ApiError } from './status.js';

// pods/eviction against PodDisruptionBudgets whose status the test sets (no disruption controller).

function setup() {
  const clock = new VirtualClock();
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock,
    types: [namespaces, pods, podDisruptionBudgets],
  });
  registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return { clock, registry };
}

function pod(registry: Registry, name: string, phase: string, ready = phase === 'Running'): void {
  registry.create(pods, 'default', {
    metadata: { name, labels: { app: 'web' } },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'nginx' }] },
  });
  registry.store.update('pods', 'default', name, (p) => {
    p.status = { phase, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] };
    return p;
  });
}

function budget(registry: Registry, name: string, status: Record<string, unknown>, spec = {}): void {
  registry.create(podDisruptionBudgets, 'default', {
    metadata: { name },
    spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } }, ...spec },
  });
  registry.store.update('poddisruptionbudgets', 'default', name, (p) => {
    p.status = { observedGeneration: 1, ...status };
    return p;
  });
}

const eviction = (name: string, deleteOptions?: object) => ({
  apiVersion: 'policy/v1',
  kind: 'Eviction',
  metadata: { name, namespace: 'default' },
  ...(deleteOptions ? { deleteOptions } : {}),
});

const evict = (registry: Registry, name: string, deleteOptions?: object, dryRun = false) =>
  evictPod(registry, 'default', name, eviction(name, deleteOptions), { dryRun });

const stored = (registry: Registry, resource: string, name: string) =>
  registry.store.get(resource, 'default', name)?.object;

test('refused with 429 and the DisruptionBudget cause when the budget allows no disruption', (t) => {
  const { registry } = setup();
  pod(registry, 'a', 'Running');
  budget(registry, 'web', { disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2 });
  const err = t.throws(() => evict(registry, 'a'), { instanceOf: ApiError }) as ApiError;
  t.is(err.code, 429);
  t.is(err.reason, 'TooManyRequests');
  t.is(err.message, "Cannot evict pod as it would violate the pod's disruption budget.");
  t.deepEqual(err.details?.causes, [
    {
      reason: 'DisruptionBudget',
      message: 'The disruption budget web needs 2 healthy pods and has 2 currently',
    },
  ]);
  t.falsy(stored(registry, 'pods', 'a')!.metadata.deletionTimestamp, 'the pod is untouched');
});

test('allowed: the budget is decremented, the pod marked DisruptionTarget and deleted with its options', (t) => {
  const { clock, registry } = setup();
  pod(registry, 'a', 'Running');
  budget(registry, 'web', { disruptionsAllowed: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3 });
  const status = evict(registry, 'a', { gracePeriodSeconds: 5 });
  t.like(status, { kind: 'Status', status: 'Success', code: 201 });
  const pdb = stored(registry, 'poddisruptionbudgets', 'web')!;
  t.is(pdb.status.disruptionsAllowed, 0);
  t.deepEqual(pdb.status.disruptedPods, { a: rfc3339(clock.now()) });
  t.like(pdb.status.conditions[0], {
    type: 'DisruptionAllowed',
    status: 'False',
    reason: 'InsufficientPods',
  });
  const p = stored(registry, 'pods', 'a')!;
  t.is(p.metadata.deletionGracePeriodSeconds, 5);
  t.like(
    p.status.conditions.find((c: { type: string }) => c.type === 'DisruptionTarget'),
    { status: 'True', reason: 'EvictionByEvictionAPI', message: 'Eviction API: evicting' },
  );
});

test('a budget not yet observed at its generation answers 429 "still being processed"', (t) => {
  const { registry } = setup();
  pod(registry, 'a', 'Running');
  budget(registry, 'web', { observedGeneration: 0, disruptionsAllowed: 5 });
  const err = t.throws(() => evict(registry, 'a'), { instanceOf: ApiError }) as ApiError;
  t.is(err.code, 429);
  t.is(err.details?.retryAfterSeconds, 10);
  t.is(
    err.details?.causes?.[0]?.message,
    'The disruption budget web is still being processed by the server.',
  );
});

test('two budgets over one pod: a 500 Failure Status, nothing deleted', (t) => {
  const { registry } = setup();
  pod(registry, 'a', 'Running');
  budget(registry, 'one', { disruptionsAllowed: 1 });
  budget(registry, 'two', { disruptionsAllowed: 1 });
  const status = evict(registry, 'a');
  t.like(status, {
    status: 'Failure',
    code: 500,
    message:
      'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
  });
  t.falsy(stored(registry, 'pods', 'a')!.metadata.deletionTimestamp);
});

test('terminal and Pending pods are deleted without asking the budget', (t) => {
  const { registry } = setup();
  pod(registry, 'done', 'Succeeded');
  pod(registry, 'waiting', 'Pending');
  budget(registry, 'web', { disruptionsAllowed: 0 });
  t.like(evict(registry, 'done'), { status: 'Success' });
  t.like(evict(registry, 'waiting'), { status: 'Success' });
  const done = stored(registry, 'pods', 'done');
  t.true(!done || !!done.metadata.deletionTimestamp, 'gone, or going');
  t.truthy(stored(registry, 'pods', 'waiting')!.metadata.deletionTimestamp);
  t.is(stored(registry, 'poddisruptionbudgets', 'web')!.status.disruptedPods, undefined);
});

test('a Running pod that is not Ready goes without a decrement while the budget is met', (t) => {
  const { registry } = setup();
  pod(registry, 'sick', 'Running', false);
  budget(registry, 'web', { disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2 });
  t.like(evict(registry, 'sick'), { status: 'Success' });
  t.truthy(stored(registry, 'pods', 'sick')!.metadata.deletionTimestamp);
  t.is(stored(registry, 'poddisruptionbudgets', 'web')!.status.disruptionsAllowed, 0);
});

test('dry run changes nothing; a name that differs from the URL is a 400', (t) => {
  const { registry } = setup();
  pod(registry, 'a', 'Running');
  budget(registry, 'web', { disruptionsAllowed: 1 });
  t.like(evict(registry, 'a', undefined, true), { status: 'Success' });
  t.like(evict(registry, 'a', { dryRun: ['All'] }), { status: 'Success' });
  t.is(stored(registry, 'poddisruptionbudgets', 'web')!.status.disruptionsAllowed, 1);
  t.falsy(stored(registry, 'pods', 'a')!.metadata.deletionTimestamp);
  const err = t.throws(() =>
    evictPod(registry, 'default', 'a', eviction('b'), { dryRun: false }),
  ) as ApiError;
  t.is(err.code, 400);
  t.is(err.message, 'name in URL does not match name in Eviction object');
  const elsewhere = { ...eviction('a'), metadata: { name: 'a', namespace: 'other' } };
  const wrongNs = t.throws(() =>
    evictPod(registry, 'default', 'a', elsewhere, { dryRun: false }),
  ) as ApiError;
  t.is(wrongNs.code, 400);
});

test('a uid precondition that does not match is a 409 Conflict', (t) => {
  const { registry } = setup();
  pod(registry, 'a', 'Running');
  const err = t.throws(() => evict(registry, 'a', { preconditions: { uid: 'other' } })) as ApiError;
  t.is(err.code, 409);
  t.falsy(stored(registry, 'pods', 'a')!.metadata.deletionTimestamp);
});

test('unhealthyPodEvictionPolicy AlwaysAllow: a pod that is not Ready goes even when the budget is not met', (t) => {
  const { registry } = setup();
  pod(registry, 'sick', 'Running', false);
  pod(registry, 'sick2', 'Running', false);
  budget(registry, 'strict', { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 2 });
  // IfHealthyBudget (the default): the budget is not met, so the unready pod is protected too.
  t.is((t.throws(() => evict(registry, 'sick')) as ApiError).code, 429);
  registry.store.update('poddisruptionbudgets', 'default', 'strict', (p) => {
    p.spec.unhealthyPodEvictionPolicy = 'AlwaysAllow';
    return p;
  });
  t.like(evict(registry, 'sick2'), { status: 'Success' });
  t.truthy(stored(registry, 'pods', 'sick2')!.metadata.deletionTimestamp);
  t.is(stored(registry, 'poddisruptionbudgets', 'strict')!.status.disruptionsAllowed, 0);
});

import test from 'ava';
import type { Registry } from '../apiserver/registry.js';
import type { KubeObject } from '../object.js';
import { daemonSets } from '../resources/daemon-sets.js';
import { nodes } from '../resources/nodes.js';
import { DaemonSetController } from './daemon-set-controller.js';
import { targetNodeOf } from './daemon-set-nodes.js';
import { finishDeletions, livePods, makeReady, workloadRegistry } from './workload-test-support.js';

// The DaemonSet controller one sync at a time, on an in-memory store and a virtual clock; the test plays
// the scheduler and the kubelet (binding pods, marking them Ready, removing deleted ones).

function setup() {
  const { clock, registry, logger } = workloadRegistry([nodes, daemonSets]);
  const controller = new DaemonSetController(registry, clock, logger);
  return { clock, registry, controller };
}

function addNode(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
  taints: object[] = [],
): void {
  registry.create(nodes, '', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
    spec: taints.length ? { taints } : {},
  });
}

function daemonSet(image = 'fluentd:v1'): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'logs' },
    spec: {
      selector: { matchLabels: { app: 'logs' } },
      template: {
        metadata: { labels: { app: 'logs' } },
        spec: { nodeSelector: { role: 'worker' }, containers: [{ name: 'c', image }] },
      },
    },
  };
}

/** Node name → the DaemonSet's live pods for it. */
function byNode(registry: Registry): Map<string, KubeObject[]> {
  const out = new Map<string, KubeObject[]>();
  for (const p of livePods(registry)) {
    const node = targetNodeOf(p)!;
    out.set(node, [...(out.get(node) ?? []), p]);
  }
  return out;
}

/** The scheduler and kubelet: every live pod bound to its node and Ready now. */
function runAll(registry: Registry, now: number): void {
  for (const p of livePods(registry))
    if (!p.spec.nodeName) makeReady(registry, p.metadata.name!, targetNodeOf(p)!, now);
}

/** A DaemonSet of fluentd:v1 running on `nodeNames`, then its image changed to fluentd:v2. */
function runningThenNewImage(nodeNames: string[], updateStrategy?: object) {
  const env = setup();
  const { clock, registry, controller } = env;
  for (const n of nodeNames) addNode(registry, n, { role: 'worker' });
  const body = daemonSet('fluentd:v1') as any;
  if (updateStrategy) body.spec.updateStrategy = updateStrategy;
  registry.create(daemonSets, 'default', body);
  controller.sync('default/logs');
  runAll(registry, clock.now());
  controller.sync('default/logs');
  const ds = structuredClone(registry.store.get('daemonsets', 'default', 'logs')!.object);
  ds.spec.template.spec.containers[0].image = 'fluentd:v2';
  registry.update(daemonSets, 'default', 'logs', ds);
  return env;
}

const status = (registry: Registry) => registry.store.get('daemonsets', 'default', 'logs')!.object.status;

test('one pod on each selected node whose taints it tolerates; a new node gets one, a deleted node loses it', (t) => {
  const { clock, registry, controller } = setup();
  for (const n of ['a', 'b', 'c']) addNode(registry, n, { role: 'worker' });
  addNode(registry, 'control', { role: 'control-plane' });
  addNode(registry, 'gpu', { role: 'worker' }, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]);
  // Condition taints are tolerated by every daemon pod.
  addNode(registry, 'full', { role: 'worker' }, [
    { key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule' },
  ]);
  registry.create(daemonSets, 'default', daemonSet());
  controller.sync('default/logs');

  const placed = byNode(registry);
  t.deepEqual([...placed.keys()].sort(), ['a', 'b', 'c', 'full']);
  const pod = placed.get('a')![0]!;
  t.is(pod.spec.nodeName, undefined, 'the scheduler binds it');
  t.deepEqual(
    pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms,
    [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['a'] }] }],
  );
  t.deepEqual(
    pod.spec.tolerations.map((x: any) => `${x.key}:${x.effect}`),
    [
      'node.kubernetes.io/not-ready:NoExecute',
      'node.kubernetes.io/unreachable:NoExecute',
      'node.kubernetes.io/disk-pressure:NoSchedule',
      'node.kubernetes.io/memory-pressure:NoSchedule',
      'node.kubernetes.io/pid-pressure:NoSchedule',
      'node.kubernetes.io/unschedulable:NoSchedule',
    ],
  );
  t.true(
    pod.spec.tolerations.every((x: any) => x.operator === 'Exists' && x.tolerationSeconds === undefined),
  );
  const revisions = registry.store.listAll('controllerrevisions', 'default').map((s) => s.object);
  t.is(revisions.length, 1);
  t.is(revisions[0]!.revision, 1);
  const hash = pod.metadata.labels?.['controller-revision-hash'];
  t.is(hash, revisions[0]!.metadata.labels?.['controller-revision-hash']);
  t.is(revisions[0]!.metadata.name, `logs-${hash}`);

  runAll(registry, clock.now());
  controller.sync('default/logs');
  t.like(status(registry), {
    desiredNumberScheduled: 4,
    currentNumberScheduled: 4,
    numberReady: 4,
    numberAvailable: 4,
    updatedNumberScheduled: 4,
    numberMisscheduled: 0,
    observedGeneration: 1,
  });

  addNode(registry, 'd', { role: 'worker' });
  controller.sync('default/logs');
  t.is(byNode(registry).get('d')?.length, 1, 'the new node has its pod');
  registry.delete(nodes, '', 'b');
  controller.sync('default/logs');
  t.false(byNode(registry).has('b'), "the deleted node's pod is gone");
  t.is(byNode(registry).size, 4);
  const rev = registry.store.revision;
  controller.sync('default/logs');
  controller.sync('default/logs');
  t.true(registry.store.revision - rev <= 1, 'in sync: at most the status write');
});

test('a node relabelled out of the selector or tainted NoExecute loses its pod', (t) => {
  const { registry, controller } = setup();
  for (const n of ['a', 'b']) addNode(registry, n, { role: 'worker' });
  registry.create(daemonSets, 'default', daemonSet());
  controller.sync('default/logs');
  t.is(byNode(registry).size, 2);
  registry.store.update('nodes', '', 'a', (n) => ((n.metadata.labels = { role: 'db' }), n));
  registry.store.update('nodes', '', 'b', (n) => ((n.spec.taints = [{ key: 'x', effect: 'NoExecute' }]), n));
  controller.sync('default/logs');
  t.is(byNode(registry).size, 0);
});

test('RollingUpdate replaces the pods one node at a time (maxUnavailable 1)', (t) => {
  const { clock, registry, controller } = runningThenNewImage(['a', 'b', 'c']);
  t.like(registry.store.get('daemonsets', 'default', 'logs')!.object.spec.updateStrategy, {
    type: 'RollingUpdate',
    rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
  });
  const replaced: string[] = [];
  for (let step = 0; step < 12; step++) {
    controller.sync('default/logs');
    const terminating = registry.store
      .listAll('pods', 'default')
      .filter((s) => s.object.metadata.deletionTimestamp);
    t.true(terminating.length <= 1, 'never more than one node without its daemon');
    for (const s of terminating) replaced.push(targetNodeOf(s.object)!);
    finishDeletions(registry);
    controller.sync('default/logs');
    // Whatever is new comes up before the next node is touched.
    const notReady = livePods(registry).filter((p) => !p.spec.nodeName);
    t.true(notReady.length <= 1);
    runAll(registry, clock.now());
  }
  t.deepEqual(replaced, ['a', 'b', 'c'], 'each node once, in turn');
  const images = livePods(registry).map((p) => p.spec.containers[0].image);
  t.deepEqual(images, ['fluentd:v2', 'fluentd:v2', 'fluentd:v2']);
  controller.sync('default/logs');
  t.like(status(registry), {
    desiredNumberScheduled: 3,
    updatedNumberScheduled: 3,
    numberAvailable: 3,
    observedGeneration: 2,
  });
  const revisions = registry.store.listAll('controllerrevisions', 'default').map((s) => s.object.revision);
  t.deepEqual(revisions.sort(), [1, 2]);
});

test('OnDelete leaves old pods until they are deleted', (t) => {
  const { registry, controller } = runningThenNewImage(['a'], { type: 'OnDelete' });
  controller.sync('default/logs');
  const [old] = livePods(registry);
  t.is(old!.spec.containers[0].image, 'fluentd:v1');
  t.like(status(registry), { desiredNumberScheduled: 1, updatedNumberScheduled: undefined });
  registry.delete(registry.byStorage('pods'), 'default', old!.metadata.name!);
  finishDeletions(registry);
  controller.sync('default/logs');
  t.is(livePods(registry)[0]!.spec.containers[0].image, 'fluentd:v2');
});

test('validation: both maxUnavailable and maxSurge zero, an unknown strategy, a template that does not match', (t) => {
  const { registry } = setup();
  const body = daemonSet() as any;
  body.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 0 } };
  const err1 = t.throws(() => registry.create(daemonSets, 'default', body));
  t.regex(
    err1!.message,
    /spec\.updateStrategy\.rollingUpdate\.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0/,
  );
  body.spec.updateStrategy = { type: 'Sometimes' };
  t.regex(
    t.throws(() => registry.create(daemonSets, 'default', body))!.message,
    /spec\.updateStrategy\.type: Unsupported value: "Sometimes"/,
  );
  body.spec.updateStrategy = {};
  body.spec.template.metadata.labels = { app: 'other' };
  t.regex(
    t.throws(() => registry.create(daemonSets, 'default', body))!.message,
    /`selector` does not match template `labels`/,
  );
});

test('RollingUpdate with maxSurge 1 and maxUnavailable 0 starts the new pod before the old one goes', (t) => {
  const { clock, registry, controller } = runningThenNewImage(['a', 'b', 'c'], {
    type: 'RollingUpdate',
    rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
  });
  for (let step = 0; step < 12; step++) {
    controller.sync('default/logs');
    finishDeletions(registry);
    const placed = byNode(registry);
    t.is(placed.size, 3);
    const ready = [...placed.values()].filter((pods) => pods.some((p) => p.spec.nodeName)).length;
    t.is(ready, 3, 'every node keeps a running daemon');
    t.true([...placed.values()].filter((pods) => pods.length > 1).length <= 1, 'one node surges at a time');
    runAll(registry, clock.now());
  }
  const images = livePods(registry).map((p) => p.spec.containers[0].image);
  t.deepEqual(images, ['fluentd:v2', 'fluentd:v2', 'fluentd:v2']);
});

test('a failed daemon pod is replaced, and again only after a backoff (1 s, doubling)', async (t) => {
  const { clock, registry, controller } = setup();
  addNode(registry, 'a', { role: 'worker' });
  registry.create(daemonSets, 'default', daemonSet());
  const fail = () => {
    const [pod] = livePods(registry);
    registry.store.update('pods', 'default', pod!.metadata.name!, (p) => {
      p.spec.nodeName = 'a';
      p.status = { phase: 'Failed', reason: 'OutOfcpu' };
      return p;
    });
    return pod!.metadata.name!;
  };
  controller.sync('default/logs');
  const first = fail();
  controller.sync('default/logs');
  t.false(
    livePods(registry).some((p) => p.metadata.name === first),
    'the failed pod is deleted',
  );
  controller.sync('default/logs');
  t.is(livePods(registry).length, 1, 'and replaced');
  const phase = () => livePods(registry)[0]?.status.phase;
  fail();
  controller.sync('default/logs');
  t.is(phase(), 'Failed', 'kept while backing off');
  await clock.advance(1000);
  controller.sync('default/logs');
  controller.sync('default/logs');
  t.is(phase(), 'Pending', 'replaced after 1 s');
  fail();
  await clock.advance(1000);
  controller.sync('default/logs');
  t.is(phase(), 'Failed', 'the next delay is 2 s');
  await clock.advance(1000);
  controller.sync('default/logs');
  controller.sync('default/logs');
  t.is(phase(), 'Pending');
});

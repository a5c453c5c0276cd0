import test from 'ava';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import { rfc3339, type KubeObject } from '../object.js';
import { deployments } from '../resources/deployments.js';
import { namespaces } from '../resources/namespaces.js';
import { pods } from '../resources/pods.js';
import { replicaSets } from '../resources/replica-sets.js';
import { RevisionStore } from '../storage/revision-store.js';
import { waitFor } from '../test-helpers.js';
import { DeploymentController } from './deployment-controller.js';
import { computeHash, safeEncodeString } from './deployment-util.js';
import { ReplicaSetController } from './replicaset-controller.js';

// The Deployment and ReplicaSet controllers together on an in-memory store and a virtual clock; the
// test plays the kubelet, making pods Running and Ready.

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
  const dc = new DeploymentController(registry, clock, logger);
  rsc.start();
  dc.start();
  const stop = () => {
    rsc.stop();
    dc.stop();
  };
  return { clock, registry, stop };
}

function deployment(name: string, replicas: number, image = 'nginx', strategy?: object): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'nginx', image }] },
      },
      ...(strategy ? { strategy } : {}),
    },
  };
}

const live = (registry: Registry): any[] =>
  registry.store
    .listAll('pods', 'default')
    .map((s) => s.object)
    .filter((p) => !p.metadata.deletionTimestamp);

/** The kubelet's part: every live pod Running and Ready; terminating pods gone. */
function kubelet(registry: Registry, now: number): void {
  for (const { object: p } of registry.store.listAll('pods', 'default')) {
    if (p.metadata.deletionTimestamp) {
      registry.store.delete('pods', 'default', p.metadata.name!);
      continue;
    }
    if (p.status?.phase === 'Running') continue;
    registry.store.update('pods', 'default', p.metadata.name!, (x: KubeObject) => {
      x.spec.nodeName = 'node-1';
      x.status = {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: rfc3339(now) }],
      };
      return x;
    });
  }
}

const dep = (registry: Registry, name = 'web'): any =>
  registry.store.get('deployments', 'default', name)!.object;

function done(registry: Registry, name = 'web'): boolean {
  const d = dep(registry, name);
  const s = d.status ?? {};
  return (
    s.observedGeneration >= d.metadata.generation &&
    s.updatedReplicas === d.spec.replicas &&
    s.replicas === d.spec.replicas &&
    s.availableReplicas === d.spec.replicas
  );
}

async function settle(registry: Registry, clock: VirtualClock, name = 'web'): Promise<void> {
  await waitFor(() => {
    kubelet(registry, clock.now());
    return done(registry, name) ? true : undefined;
  }, `deployment ${name} rolled out`);
}

test('SafeEncodeString and the template hash are stable and use the safe alphabet', (t) => {
  // Digits map to 4-9 and b, c, d, f: the characters real pod-template-hash labels are made of.
  t.is(safeEncodeString('0123456789'), '456789bcdf');
  const h = computeHash({ metadata: { labels: { app: 'web' } } });
  t.regex(h, /^[bcdfghjklmnpqrstvwxz2456789]+$/);
  t.is(h, computeHash({ metadata: { labels: { app: 'web' } } }));
  t.not(h, computeHash({ metadata: { labels: { app: 'web' } } }, 1));
});

test('a Deployment gets a ReplicaSet per template, pods labelled with its hash, and rolls out', async (t) => {
  const { clock, registry, stop } = setup();
  t.teardown(stop);
  registry.create(deployments, 'default', deployment('web', 3));
  await settle(registry, clock);
  const [rs] = registry.store.listAll('replicasets', 'default').map((s) => s.object as any);
  const hash = rs!.metadata.labels['pod-template-hash'];
  t.is(rs!.metadata.name, `web-${hash}`);
  t.deepEqual(rs!.spec.selector, { matchLabels: { app: 'web', 'pod-template-hash': hash } });
  t.is(rs!.metadata.annotations['deployment.kubernetes.io/revision'], '1');
  t.is(rs!.metadata.ownerReferences[0].kind, 'Deployment');
  t.is(live(registry).length, 3);
  for (const p of live(registry)) t.is(p.metadata.labels['pod-template-hash'], hash);
  const d = dep(registry);
  t.is(d.metadata.annotations['deployment.kubernetes.io/revision'], '1');
  t.is(d.metadata.generation, 1, 'the revision annotation went through status: no new generation');
  t.like(d.status, { replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3 });
  const cond = (type: string) => d.status.conditions.find((c: any) => c.type === type);
  t.like(cond('Available'), { status: 'True', reason: 'MinimumReplicasAvailable' });
  t.like(cond('Progressing'), {
    status: 'True',
    reason: 'NewReplicaSetAvailable',
    message: `ReplicaSet "web-${hash}" has successfully progressed.`,
  });
});

test('a new image rolls within maxSurge/maxUnavailable to a second ReplicaSet, revision 2', async (t) => {
  const { clock, registry, stop } = setup();
  t.teardown(stop);
  registry.create(deployments, 'default', deployment('web', 4));
  await settle(registry, clock);
  const d = dep(registry);
  d.spec.template.spec.containers[0].image = 'nginx:1.27';
  registry.update(deployments, 'default', 'web', d);
  // Never more than 4 + 1 (25% surge) pods, never fewer than 4 - 1 available.
  let maxPods = 0;
  await waitFor(() => {
    maxPods = Math.max(maxPods, live(registry).length);
    kubelet(registry, clock.now());
    return done(registry) ? true : undefined;
  }, 'rolled to nginx:1.27');
  t.true(maxPods <= 5, `at most 5 pods at once (saw ${maxPods})`);
  const sets = registry.store.listAll('replicasets', 'default').map((s) => s.object as any);
  t.is(sets.length, 2);
  const next = sets.find((rs) => rs.spec.replicas === 4)!;
  const prev = sets.find((rs) => rs.spec.replicas === 0)!;
  t.is(next.metadata.annotations['deployment.kubernetes.io/revision'], '2');
  t.is(prev.metadata.annotations['deployment.kubernetes.io/revision'], '1');
  t.is(dep(registry).metadata.annotations['deployment.kubernetes.io/revision'], '2');
  for (const p of live(registry)) t.is(p.spec.containers[0].image, 'nginx:1.27');
});

test('Recreate scales the old ReplicaSet to zero before the new one starts', async (t) => {
  const { clock, registry, stop } = setup();
  t.teardown(stop);
  registry.create(deployments, 'default', deployment('db', 2, 'postgres', { type: 'Recreate' }));
  await settle(registry, clock, 'db');
  const d = dep(registry, 'db');
  d.spec.template.spec.containers[0].image = 'postgres:17';
  registry.update(deployments, 'default', 'db', d);
  await waitFor(() => {
    const images = new Set(live(registry).map((p) => p.spec.containers[0].image));
    if (images.size > 1) throw new Error('old and new pods ran together');
    kubelet(registry, clock.now());
    return done(registry, 'db') ? true : undefined;
  }, 'recreated');
  t.deepEqual(
    live(registry).map((p) => p.spec.containers[0].image),
    ['postgres:17', 'postgres:17'],
  );
});

test('no progress for progressDeadlineSeconds: Progressing=False ProgressDeadlineExceeded', async (t) => {
  const { clock, registry, stop } = setup();
  t.teardown(stop);
  registry.create(deployments, 'default', deployment('stuck', 1));
  const progressing = () =>
    dep(registry, 'stuck').status?.conditions?.find((c: any) => c.type === 'Progressing');
  await waitFor(() => (progressing() ? true : undefined), 'a Progressing condition');
  await clock.advance(601_000);
  const c = await waitFor(
    () => (progressing()?.status === 'False' ? progressing() : undefined),
    'the deadline',
  );
  t.is(c.reason, 'ProgressDeadlineExceeded');
  t.regex(c.message, /^ReplicaSet "stuck-\w+" has timed out progressing\.$/);
});

test('paused: a new template waits, scaling still applies; resumed: it rolls out', async (t) => {
  const { clock, registry, stop } = setup();
  t.teardown(stop);
  registry.create(deployments, 'default', deployment('web', 2));
  await settle(registry, clock);
  const d = dep(registry);
  d.spec.paused = true;
  d.spec.replicas = 3;
  d.spec.template.spec.containers[0].image = 'nginx:1.27';
  registry.update(deployments, 'default', 'web', d);
  await waitFor(() => {
    kubelet(registry, clock.now());
    return live(registry).length === 3 && dep(registry).status.availableReplicas === 3 ? true : undefined;
  }, 'scaled to 3 while paused');
  t.is(registry.store.listAll('replicasets', 'default').length, 1, 'no new ReplicaSet while paused');
  t.deepEqual([...new Set(live(registry).map((p) => p.spec.containers[0].image))], ['nginx']);
  const progressing = () => dep(registry).status.conditions.find((c: any) => c.type === 'Progressing');
  t.like(progressing(), { status: 'Unknown', reason: 'DeploymentPaused', message: 'Deployment is paused' });
  const resumed = dep(registry);
  resumed.spec.paused = false;
  registry.update(deployments, 'default', 'web', resumed);
  await settle(registry, clock);
  t.deepEqual([...new Set(live(registry).map((p) => p.spec.containers[0].image))], ['nginx:1.27']);
  t.like(progressing(), { status: 'True', reason: 'NewReplicaSetAvailable' });
});

import test from 'ava';
import { rfc3339, type KubeObject } from '../object.js';
import { deployments } from '../resources/deployments.js';
import { nodes } from '../resources/nodes.js';
import { pods } from '../resources/pods.js';
import { waitFor } from '../test-helpers.js';
import { condition, nodeCluster } from './test-node-cluster.js';

// The whole chain on a virtual clock: a kubelet stops renewing its Lease → its node turns Unknown and is
// tainted → its pods turn NotReady → 300 s later they are deleted and the Deployment's replacement is
// bound to another node.

const live = (all: KubeObject[]) => all.filter((p) => !p.metadata.deletionTimestamp);

function webDeployment(replicas: number): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'c', image: 'nginx' }] },
      },
    },
  };
}

/** Advances the clock a second at a time until `check` holds; the virtual time it then is. */
async function advanceUntil(c: ReturnType<typeof nodeCluster>, check: () => boolean, maxMs: number) {
  await c.clock.advanceUntil(check, { stepMs: 1_000, maxMs });
  return c.clock.elapsed();
}

async function spreadDeployment(c: ReturnType<typeof nodeCluster>): Promise<Map<string, string>> {
  c.registry.create(deployments, 'default', webDeployment(3));
  await waitFor(
    () => (live(c.pods()).filter((p) => p.spec.nodeName).length === 3 ? true : undefined),
    'bound',
  );
  await advanceUntil(c, () => live(c.pods()).every((p) => condition(p, 'Ready')?.status === 'True'), 5_000);
  return new Map(live(c.pods()).map((p) => [p.spec.nodeName as string, p.metadata.name!]));
}

test('a node whose kubelet stops: Unknown after the grace period, tainted, pods NotReady, evicted after 300 s and replaced elsewhere', async (t) => {
  const c = nodeCluster(['n1', 'n2', 'n3']);
  t.teardown(() => c.stop());
  const placed = await spreadDeployment(c);
  t.deepEqual([...placed.keys()].sort(), ['n1', 'n2', 'n3'], 'one pod per node');
  const victim = placed.get('n3')!;
  t.like(c.pod(victim)!.spec.tolerations, [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    {
      key: 'node.kubernetes.io/unreachable',
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: 300,
    },
  ]);

  // The Lease is renewed at whole 10 s of the kubelet's loop: stop right after a renewal.
  await c.clock.advance(20_000 - c.clock.elapsed());
  const lastRenewal = Date.parse(
    c.registry.store.get('leases', 'kube-node-lease', 'n3')!.object.spec.renewTime,
  );
  c.killKubelet('n3');
  const lastHeard = lastRenewal - c.clock.now() + c.clock.elapsed();

  const unknownAt = await advanceUntil(
    c,
    () => condition(c.node('n3'), 'Ready')?.status === 'Unknown',
    120_000,
  );
  // Checked every 5 s (from the controller's start at 0): the first check more than 50 s after the renewal.
  const expected = (Math.floor((lastHeard + 50_000) / 5_000) + 1) * 5_000;
  t.is(unknownAt, expected, `Unknown at ${unknownAt} ms, last heard at ${lastHeard} ms`);
  t.true(unknownAt - lastHeard > 50_000 && unknownAt - lastHeard <= 55_000);
  const node = c.node('n3');
  for (const type of ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure']) {
    t.like(condition(node, type), {
      status: 'Unknown',
      reason: type === 'Ready' ? 'NodeStatusUnknown' : 'NodeStatusNeverUpdated',
    });
  }
  t.like(condition(node, 'Ready'), {
    message: 'Kubelet stopped posting node status.',
    lastTransitionTime: rfc3339(c.clock.now()),
  });
  const taints = await waitFor(() => {
    const ts = c.node('n3').spec?.taints;
    return ts?.length === 2 ? ts : undefined;
  }, 'the unreachable taints');
  t.deepEqual(taints, [
    { key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', timeAdded: rfc3339(c.clock.now()) },
  ]);
  await waitFor(
    () => (condition(c.pod(victim), 'Ready')?.status === 'False' ? true : undefined),
    'pod NotReady',
  );
  t.is(condition(c.pod(victim), 'Ready')!.lastTransitionTime, rfc3339(c.clock.now()));
  t.is(c.events('NodeNotReady').length, 2, 'one event on the node, one on its pod');
  t.is(condition(c.node('n1'), 'Ready')?.status, 'True', 'the renewing nodes stay Ready');

  await c.clock.advance(299_000);
  t.falsy(c.pod(victim)!.metadata.deletionTimestamp, 'tolerated for 300 s');
  await c.clock.advance(1_000);
  const deleted = await waitFor(() => {
    const p = c.pod(victim);
    return p?.metadata.deletionTimestamp ? p : undefined;
  }, 'the pod deleted');
  t.is(c.clock.elapsed(), unknownAt + 300_000);
  t.like(condition(deleted, 'DisruptionTarget'), { status: 'True', reason: 'DeletionByTaintManager' });
  t.regex(
    c.events('TaintManagerEviction')[0]!.message,
    new RegExp(`^Marking for deletion Pod default/${victim}$`),
  );

  const replacement = await waitFor(() => {
    const fresh = live(c.pods()).filter((p) => ![...placed.values()].includes(p.metadata.name!));
    return fresh.length === 1 && fresh[0]!.spec.nodeName ? fresh[0] : undefined;
  }, 'a replacement bound to a node');
  t.true(['n1', 'n2'].includes(replacement!.spec.nodeName), `bound to ${replacement!.spec.nodeName}`);
  t.truthy(c.pod(victim), 'the pod of the dead node stays Terminating: no kubelet finishes it');
});

test('the kubelet comes back before the tolerations run out: Ready again, taints gone, no eviction', async (t) => {
  const c = nodeCluster(['n1', 'n2']);
  t.teardown(() => c.stop());
  c.registry.create(deployments, 'default', webDeployment(2));
  await advanceUntil(
    c,
    () => live(c.pods()).filter((p) => condition(p, 'Ready')?.status === 'True').length === 2,
    5_000,
  );
  const onN2 = live(c.pods()).find((p) => p.spec.nodeName === 'n2')!.metadata.name!;
  c.killKubelet('n2');
  await advanceUntil(c, () => (c.node('n2').spec?.taints ?? []).length === 2, 120_000);
  await c.clock.advance(100_000);
  c.startKubelet('n2');
  await waitFor(() => (c.node('n2').spec?.taints === undefined ? true : undefined), 'taints removed');
  t.is(condition(c.node('n2'), 'Ready')?.status, 'True');
  await c.clock.advance(400_000);
  t.falsy(c.pod(onN2)!.metadata.deletionTimestamp, 'not evicted');
  t.regex(c.events('TaintManagerEviction')[0]?.message ?? '', /^Cancelling deletion of Pod default\//);
});

test('static pods (NoExecute tolerated for ever) and DaemonSet-like pods stay; an untolerated NoExecute taint evicts at once', async (t) => {
  const c = nodeCluster(['n1', 'n2']);
  t.teardown(() => c.stop());
  const pod = (name: string, tolerations: object[], annotations: Record<string, string> = {}) =>
    c.registry.create(pods, 'default', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, annotations },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'nginx' }], tolerations },
    });
  pod('static-n1', [{ operator: 'Exists', effect: 'NoExecute' }], { 'kubernetes.io/config.mirror': 'h' });
  pod('daemon', [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  ]);
  pod('plain', []);
  t.is(
    c.pod('static-n1')!.spec.tolerations.length,
    1,
    'a toleration of every NoExecute taint: nothing added',
  );
  t.is(c.pod('daemon')!.spec.tolerations.length, 2, 'its own tolerations kept, without seconds');
  c.killKubelet('n1');
  await advanceUntil(c, () => !!c.pod('plain')?.metadata.deletionTimestamp, 400_000);
  t.falsy(c.pod('static-n1')!.metadata.deletionTimestamp);
  t.falsy(c.pod('daemon')!.metadata.deletionTimestamp);

  c.registry.store.update('nodes', '', 'n1', (n) => {
    n.spec.taints.push({ key: 'maintenance', effect: 'NoExecute', timeAdded: rfc3339(c.clock.now()) });
    return n;
  });
  await waitFor(() => (c.pod('daemon')?.metadata.deletionTimestamp ? true : undefined), 'daemon evicted');
  t.falsy(c.pod('static-n1')!.metadata.deletionTimestamp, 'the static pod tolerates every NoExecute taint');
});

test('no node Ready (a one-node cluster whose kubelet stops): Unknown and NoSchedule, but no NoExecute taint, nothing evicted', async (t) => {
  const c = nodeCluster(['solo']);
  t.teardown(() => c.stop());
  c.registry.create(deployments, 'default', webDeployment(1));
  await advanceUntil(c, () => live(c.pods()).some((p) => condition(p, 'Ready')?.status === 'True'), 5_000);
  const [only] = live(c.pods());
  c.killKubelet('solo');
  await advanceUntil(c, () => condition(c.node('solo'), 'Ready')?.status === 'Unknown', 120_000);
  await waitFor(() => (c.node('solo').spec?.taints ? true : undefined), 'the NoSchedule taint');
  await c.clock.advance(600_000);
  t.deepEqual(c.node('solo').spec.taints, [{ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' }]);
  t.falsy(c.pod(only!.metadata.name!)!.metadata.deletionTimestamp, 'not evicted');
  t.is(condition(c.pod(only!.metadata.name!), 'Ready')?.status, 'False', 'but NotReady');
});

test('pod GC: the Terminating pods of a dead node go once the node is tainted out-of-service, or deleted', async (t) => {
  const c = nodeCluster(['n1', 'n2', 'n3']);
  t.teardown(() => c.stop());
  const placed = await spreadDeployment(c);
  for (const n of ['n2', 'n3']) c.killKubelet(n);
  const gone = [placed.get('n2')!, placed.get('n3')!];
  await advanceUntil(c, () => gone.every((name) => !!c.pod(name)?.metadata.deletionTimestamp), 420_000);
  await c.clock.advance(60_000);
  t.true(
    gone.every((name) => c.pod(name)),
    'Terminating: no kubelet finishes them',
  );

  c.registry.store.update('nodes', '', 'n2', (n) => {
    n.spec.taints.push({
      key: 'node.kubernetes.io/out-of-service',
      value: 'nodeshutdown',
      effect: 'NoExecute',
    });
    return n;
  });
  await c.clock.advance(20_000);
  t.falsy(c.pod(gone[0]!), 'out-of-service: force-deleted at the next pass');

  c.registry.delete(nodes, '', 'n3');
  await c.clock.advance(40_000);
  t.truthy(c.pod(gone[1]!), 'an orphan waits out the 40 s quarantine');
  await c.clock.advance(20_000);
  t.falsy(c.pod(gone[1]!), 'orphaned: force-deleted');
  t.is(live(c.pods()).length, 3);
});

import test from 'ava';
import type { RequestUser } from './apiserver/resource-type.js';
import { forbiddenNodeLabels } from './admission/node-restriction.js';
import { refusal, startCluster, type TestCluster } from './test-helpers.js';

// NodeRestriction on updates and deletes, through the registry (the path of PUT, PATCH and DELETE): a
// kubelet changes only its own Node, Lease and pods' status, and never its taints or restricted labels.

let c: TestCluster;

test.before(async () => {
  c = await startCluster();
  for (const name of ['nr-1', 'nr-2']) {
    c.cp.registry.create(c.cp.registry.byStorage('nodes'), '', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    });
    c.cp.registry.create(c.cp.registry.byStorage('pods'), 'default', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `pod-on-${name}` },
      spec: { nodeName: name, containers: [{ name: 'c', image: 'busybox' }] },
    });
  }
});

test.after.always(async () => {
  await c?.destroy();
});

const node1: RequestUser = { name: 'system:node:nr-1', groups: ['system:nodes', 'system:authenticated'] };
const reg = () => c.cp.registry;
const patchAs = (user: RequestUser, storage: string, ns: string, name: string, patch: object, sub?: string) =>
  reg().patch(reg().byStorage(storage), ns, name, 'merge', patch, {
    user,
    ...(sub ? { subresource: sub } : {}),
  });

test('a node labels itself with its own labels, not with node-restriction ones, and not another node', (t) => {
  const ok = patchAs(node1, 'nodes', '', 'nr-1', {
    metadata: { labels: { team: 'a', 'node.kubernetes.io/x': 'y' } },
  });
  t.is(ok.object.metadata.labels?.team, 'a');
  const restricted = refusal(() =>
    patchAs(node1, 'nodes', '', 'nr-1', {
      metadata: { labels: { 'node-restriction.kubernetes.io/pool': 'x' } },
    }),
  );
  t.is(restricted.code, 403);
  t.is(
    restricted.message,
    'nodes "nr-1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool',
  );
  const other = refusal(() => patchAs(node1, 'nodes', '', 'nr-2', { metadata: { labels: { team: 'a' } } }));
  t.is(other.message, 'nodes "nr-2" is forbidden: node "nr-1" is not allowed to modify node "nr-2"');
  const status = refusal(() => patchAs(node1, 'nodes', '', 'nr-2', { status: { phase: 'x' } }, 'status'));
  t.is(status.code, 403);
});

test('a node may not change its taints; an admin may', (t) => {
  const taints = { spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] } };
  const refused = refusal(() => patchAs(node1, 'nodes', '', 'nr-1', taints));
  t.is(refused.message, 'nodes "nr-1" is forbidden: node "nr-1" is not allowed to modify taints');
  t.notThrows(() => reg().patch(reg().byStorage('nodes'), '', 'nr-1', 'merge', taints, {}));
});

test('pod status only for pods bound to the node; deletes alike', (t) => {
  const ok = patchAs(node1, 'pods', 'default', 'pod-on-nr-1', { status: { message: 'hi' } }, 'status');
  t.is(ok.object.status.message, 'hi');
  const other = refusal(() =>
    patchAs(node1, 'pods', 'default', 'pod-on-nr-2', { status: { message: 'hi' } }, 'status'),
  );
  t.is(
    other.message,
    'pods "pod-on-nr-2" is forbidden: node "nr-1" can only update pod status for pods with spec.nodeName set to itself',
  );
  const del = refusal(() => reg().delete(reg().byStorage('pods'), 'default', 'pod-on-nr-2', { user: node1 }));
  t.is(
    del.message,
    'pods "pod-on-nr-2" is forbidden: node "nr-1" can only delete pods with spec.nodeName set to itself',
  );
  t.notThrows(() => reg().delete(reg().byStorage('pods'), 'default', 'pod-on-nr-1', { user: node1 }));
});

test('a node creates only its own Lease', (t) => {
  const lease = (name: string) => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace: 'kube-node-lease' },
    spec: { holderIdentity: name },
  });
  const leases = reg().byStorage('leases');
  t.notThrows(() => reg().create(leases, 'kube-node-lease', lease('nr-1'), { user: node1 }));
  const other = refusal(() => reg().create(leases, 'kube-node-lease', lease('nr-2'), { user: node1 }));
  t.is(
    other.message,
    'leases.coordination.k8s.io "nr-2" is forbidden: can only access node lease with the same name as the requesting node',
  );
});

test('which label changes a node may not make (upstream getForbiddenLabels)', (t) => {
  t.deepEqual(forbiddenNodeLabels({ a: '1', 'kubernetes.io/hostname': 'x' }, {}), []);
  t.deepEqual(forbiddenNodeLabels({ 'node-role.kubernetes.io/control-plane': '' }, {}), [
    'node-role.kubernetes.io/control-plane',
  ]);
  t.deepEqual(forbiddenNodeLabels({}, { 'foo.node-restriction.kubernetes.io/a': 'b' }), [
    'foo.node-restriction.kubernetes.io/a',
  ]);
  t.deepEqual(forbiddenNodeLabels({ 'example.k8s.io/a': '1', 'kubelet.kubernetes.io/b': '1' }, {}), [
    'example.k8s.io/a',
  ]);
});

import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../object.js';
import { RevisionStore } from '../storage/revision-store.js';
import type { RequestAttributes } from './attributes.js';
import { AuthorizationChain, forbiddenError } from './chain.js';
import { NodeAuthorizer } from './node-authorizer.js';
import { NodeGraph } from './node-graph.js';

// The Node authorizer on a real store: what a kubelet may read follows the pods bound to it, as the
// cases of upstream's node_authorizer_test.go (TestAuthorizer) lay out.

let dir: string;
let store: RevisionStore;
let graph: NodeGraph;
let authz: NodeAuthorizer;

const pod = (name: string, node: string, spec: Record<string, unknown> = {}): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'ns' },
    spec: {
      nodeName: node,
      serviceAccountName: `sa-${name}`,
      containers: [{ name: 'c', image: 'i' }],
      ...spec,
    },
  }) as KubeObject;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodelet-node-authz-'));
  store = new RevisionStore(join(dir, 'state.db'));
  store.create('pods', 'ns', 'p1', () =>
    pod('p1', 'node1', {
      volumes: [
        { name: 's', secret: { secretName: 's1' } },
        { name: 'c', configMap: { name: 'cm1' } },
        { name: 'v', persistentVolumeClaim: { claimName: 'pvc1' } },
      ],
    }),
  );
  store.create('pods', 'ns', 'p2', () =>
    pod('p2', 'node2', { volumes: [{ name: 's', secret: { secretName: 's2' } }] }),
  );
  store.create('pods', 'ns', 'pending', () =>
    pod('pending', '', { volumes: [{ name: 's', secret: { secretName: 's3' } }] }),
  );
  graph = new NodeGraph(store);
  // Static node rules: events may be written, services read (a part of system:node's rules).
  authz = new NodeAuthorizer(graph, (a) =>
    a.resource === 'events' ? a.verb === 'create' : a.resource === 'services' && a.verb === 'list',
  );
});

test.after.always(async () => {
  graph.close();
  store.close();
  await rm(dir, { recursive: true, force: true });
});

const node = (name: string) => ({
  name: `system:node:${name}`,
  groups: ['system:nodes', 'system:authenticated'],
});

function req(user: { name: string; groups: string[] }, a: Partial<RequestAttributes>): RequestAttributes {
  return {
    user,
    verb: 'get',
    resourceRequest: true,
    path: '',
    apiGroup: '',
    apiVersion: 'v1',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
    ...a,
  };
}

type Row = [
  title: string,
  user: string,
  attrs: Partial<RequestAttributes>,
  decision: 'allow' | 'no-opinion',
  reason?: string,
];

const rows: Row[] = [
  [
    'a node reads the secret of its pod',
    'node1',
    { resource: 'secrets', namespace: 'ns', name: 's1' },
    'allow',
  ],
  [
    '…and watches it by name',
    'node1',
    { resource: 'secrets', namespace: 'ns', name: 's1', verb: 'watch' },
    'allow',
  ],
  [
    'not the secret of another node’s pod',
    'node1',
    { resource: 'secrets', namespace: 'ns', name: 's2' },
    'no-opinion',
    "no relationship found between node 'node1' and this object",
  ],
  [
    'not the secret of an unbound pod',
    'node1',
    { resource: 'secrets', namespace: 'ns', name: 's3' },
    'no-opinion',
    "no relationship found between node 'node1' and this object",
  ],
  [
    'not all secrets',
    'node1',
    { resource: 'secrets', namespace: 'ns', verb: 'list' },
    'no-opinion',
    'No Object name found',
  ],
  [
    'never writes one',
    'node1',
    { resource: 'secrets', namespace: 'ns', name: 's1', verb: 'update' },
    'no-opinion',
    'can only read resources of this type',
  ],
  ['configmaps alike', 'node1', { resource: 'configmaps', namespace: 'ns', name: 'cm1' }, 'allow'],
  [
    'a claim its pod uses: get only',
    'node1',
    { resource: 'persistentvolumeclaims', namespace: 'ns', name: 'pvc1' },
    'allow',
  ],
  [
    'not list claims',
    'node1',
    { resource: 'persistentvolumeclaims', namespace: 'ns', name: 'pvc1', verb: 'list' },
    'no-opinion',
    'can only get individual resources of this type',
  ],
  [
    'a token for its pod’s service account',
    'node1',
    { resource: 'serviceaccounts', namespace: 'ns', name: 'sa-p1', subresource: 'token', verb: 'create' },
    'allow',
  ],
  [
    'not for another’s',
    'node1',
    { resource: 'serviceaccounts', namespace: 'ns', name: 'sa-p2', subresource: 'token', verb: 'create' },
    'no-opinion',
    "no relationship found between node 'node1' and this object",
  ],
  [
    'not read the service account',
    'node1',
    { resource: 'serviceaccounts', namespace: 'ns', name: 'sa-p1' },
    'no-opinion',
    'can only create tokens for individual service accounts',
  ],
  [
    'its own lease',
    'node1',
    {
      apiGroup: 'coordination.k8s.io',
      resource: 'leases',
      namespace: 'kube-node-lease',
      name: 'node1',
      verb: 'update',
    },
    'allow',
  ],
  [
    'not another’s lease',
    'node1',
    {
      apiGroup: 'coordination.k8s.io',
      resource: 'leases',
      namespace: 'kube-node-lease',
      name: 'node2',
      verb: 'update',
    },
    'no-opinion',
    'can only access node lease with the same name as the requesting node',
  ],
  [
    'no lease elsewhere',
    'node1',
    { apiGroup: 'coordination.k8s.io', resource: 'leases', namespace: 'default', name: 'node1' },
    'no-opinion',
    'can only access leases in the "kube-node-lease" system namespace',
  ],
  [
    'creates a lease (the name is admission’s)',
    'node1',
    { apiGroup: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-node-lease', verb: 'create' },
    'allow',
  ],
  ['reads its own Node', 'node1', { resource: 'nodes', name: 'node1' }, 'allow'],
  [
    'not another Node',
    'node1',
    { resource: 'nodes', name: 'node2' },
    'no-opinion',
    "node 'node1' cannot read 'node2', only its own Node object",
  ],
  [
    'not all Nodes',
    'node1',
    { resource: 'nodes', verb: 'list' },
    'no-opinion',
    "node 'node1' cannot read all nodes, only its own Node object",
  ],
  [
    'writes Node status (admission checks which)',
    'node1',
    { resource: 'nodes', name: 'node2', subresource: 'status', verb: 'patch' },
    'allow',
  ],
  [
    'lists its pods by node name',
    'node1',
    { resource: 'pods', verb: 'list', fieldSelector: 'spec.nodeName=node1' },
    'allow',
  ],
  [
    'not every pod',
    'node1',
    { resource: 'pods', verb: 'watch' },
    'no-opinion',
    'can only list/watch pods with spec.nodeName field selector',
  ],
  [
    'not another node’s pods',
    'node1',
    { resource: 'pods', verb: 'list', fieldSelector: 'spec.nodeName=node2' },
    'no-opinion',
    'can only list/watch pods with spec.nodeName field selector',
  ],
  ['gets its own pod', 'node1', { resource: 'pods', namespace: 'ns', name: 'p1' }, 'allow'],
  [
    'not another’s pod',
    'node1',
    { resource: 'pods', namespace: 'ns', name: 'p2' },
    'no-opinion',
    "no relationship found between node 'node1' and this object",
  ],
  [
    'pod status and mirror pods (admission checks which)',
    'node1',
    { resource: 'pods', namespace: 'ns', name: 'p2', subresource: 'status', verb: 'update' },
    'allow',
  ],
  [
    'other kinds: the static node rules',
    'node1',
    { resource: 'events', namespace: 'ns', verb: 'create' },
    'allow',
  ],
  ['…which allow no more', 'node1', { resource: 'events', namespace: 'ns', verb: 'delete' }, 'no-opinion'],
];

for (const [title, who, a, decision, reason] of rows) {
  test(title, (t) => {
    const result = authz.authorize(req(node(who), a));
    t.is(result.decision, decision);
    if (reason !== undefined) t.is(result.reason, reason);
  });
}

test('users that are not nodes get no opinion; a node identity without a name is named', (t) => {
  t.deepEqual(
    authz.authorize(req({ name: 'alice', groups: [] }, { resource: 'secrets', namespace: 'ns', name: 's1' })),
    {
      decision: 'no-opinion',
      reason: '',
    },
  );
  // The name alone does not make a node: the group does.
  t.is(
    authz.authorize(req({ name: 'system:node:node1', groups: [] }, { resource: 'nodes', name: 'node1' }))
      .decision,
    'no-opinion',
  );
  t.is(
    authz.authorize(req({ name: 'kubelet', groups: ['system:nodes'] }, { resource: 'nodes', name: 'node1' }))
      .reason,
    'unknown node for user "kubelet"',
  );
});

test('the graph follows the store: a pod moved or deleted takes its edges with it', (t) => {
  const s2 = req(node('node2'), { resource: 'secrets', namespace: 'ns', name: 's3' });
  t.is(authz.authorize(s2).decision, 'no-opinion');
  store.update('pods', 'ns', 'pending', (p) => ({ ...p, spec: { ...p.spec, nodeName: 'node2' } }));
  t.is(authz.authorize(s2).decision, 'allow');
  store.delete('pods', 'ns', 'pending');
  t.is(authz.authorize(s2).decision, 'no-opinion');
});

test("the chain's 403 reads as upstream's, with the node authorizer's reason", (t) => {
  const chain = new AuthorizationChain([authz]);
  const attrs = req(node('node1'), { resource: 'secrets', namespace: 'ns', name: 's2' });
  const err = t.throws(() => chain.check(attrs));
  t.is(
    err!.message,
    `secrets "s2" is forbidden: User "system:node:node1" cannot get resource "secrets" in API group "" in the namespace "ns": no relationship found between node 'node1' and this object`,
  );
  t.is(
    forbiddenError(req(node('node1'), { resourceRequest: false, path: '/logs', verb: 'get' }), '').message,
    'forbidden: User "system:node:node1" cannot get path "/logs"',
  );
  t.is(
    forbiddenError(req({ name: 'alice', groups: [] }, { resource: 'nodes', verb: 'list' }), '').message,
    'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope',
  );
});

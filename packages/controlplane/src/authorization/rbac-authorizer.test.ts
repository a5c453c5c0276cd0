import test from 'ava';
import { PrivilegedGroupsAuthorizer } from './privileged-groups.js';
import { RbacAuthorizer } from './rbac-authorizer.js';
import {
  clusterRole,
  clusterRoleBinding,
  groupSubject,
  nonResourceRequest,
  rbacRegistry,
  resourceRequest,
  role,
  roleBinding,
  saSubject,
  user,
  userSubject,
} from './rbac-fixtures.js';

const podReader = [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }];

function setup() {
  const registry = rbacRegistry();
  const store = registry.store;
  const create = (storage: string, obj: any) =>
    registry.create(registry.byStorage(storage), obj.metadata.namespace ?? '', obj);
  create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns1' } });
  const authz = RbacAuthorizer.fromStore(store);
  return { registry, store, create, authz };
}

test('a ClusterRoleBinding to a group allows, with the reason upstream gives', (t) => {
  const { create, authz } = setup();
  create('clusterroles', clusterRole('pod-reader', podReader));
  create('clusterrolebindings', clusterRoleBinding('readers', 'pod-reader', [groupSubject('devs')]));
  t.deepEqual(authz.authorize(resourceRequest(user('alice', ['devs']), 'get', 'pods', { namespace: 'x' })), {
    decision: 'allow',
    reason: 'RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to Group "devs"',
  });
  t.deepEqual(authz.authorize(resourceRequest(user('bob'), 'get', 'pods')), {
    decision: 'no-opinion',
    reason: '',
  });
  t.is(authz.authorize(resourceRequest(user('alice', ['devs']), 'delete', 'pods')).decision, 'no-opinion');
});

test('the index follows creates, updates and deletes of roles and bindings', (t) => {
  const { create, registry, authz } = setup();
  const alice = user('alice');
  const req = resourceRequest(alice, 'get', 'pods', { namespace: 'ns1', name: 'p' });
  t.is(authz.authorize(req).decision, 'no-opinion');
  create('roles', role('ns1', 'r', podReader));
  create('rolebindings', roleBinding('ns1', 'b', { kind: 'Role', name: 'r' }, [userSubject('alice')]));
  t.deepEqual(authz.authorize(req), {
    decision: 'allow',
    reason: 'RBAC: allowed by RoleBinding "b/ns1" of Role "r" to User "alice"',
  });
  t.is(authz.authorize({ ...req, namespace: 'other' }).decision, 'no-opinion');
  const current = registry.store.get('roles', 'ns1', 'r')!.object;
  registry.update(registry.byStorage('roles'), 'ns1', 'r', { ...current, rules: [] });
  t.is(authz.authorize(req).decision, 'no-opinion');
  registry.update(registry.byStorage('roles'), 'ns1', 'r', {
    ...current,
    metadata: { ...current.metadata, resourceVersion: undefined },
    rules: podReader,
  });
  t.is(authz.authorize(req).decision, 'allow');
  registry.delete(registry.byStorage('rolebindings'), 'ns1', 'b');
  t.is(authz.authorize(req).decision, 'no-opinion');
  authz.close();
});

test('a RoleBinding may grant a ClusterRole within its namespace only', (t) => {
  const { create, authz } = setup();
  create('clusterroles', clusterRole('pod-reader', podReader));
  create(
    'rolebindings',
    roleBinding('ns1', 'b', { kind: 'ClusterRole', name: 'pod-reader' }, [userSubject('alice')]),
  );
  t.is(
    authz.authorize(resourceRequest(user('alice'), 'list', 'pods', { namespace: 'ns1' })).decision,
    'allow',
  );
  t.is(authz.authorize(resourceRequest(user('alice'), 'list', 'pods')).decision, 'no-opinion');
});

test('a ServiceAccount subject without a namespace is one of the binding namespace', (t) => {
  const { create, authz } = setup();
  create('roles', role('ns1', 'r', podReader));
  create('rolebindings', roleBinding('ns1', 'b', { kind: 'Role', name: 'r' }, [saSubject('default')]));
  const sa = user('system:serviceaccount:ns1:default', ['system:serviceaccounts']);
  t.deepEqual(authz.authorize(resourceRequest(sa, 'get', 'pods', { namespace: 'ns1' })), {
    decision: 'allow',
    reason: 'RBAC: allowed by RoleBinding "b/ns1" of Role "r" to ServiceAccount "default/ns1"',
  });
  const other = user('system:serviceaccount:ns2:default');
  t.is(authz.authorize(resourceRequest(other, 'get', 'pods', { namespace: 'ns1' })).decision, 'no-opinion');
});

test('a binding to a missing role gives no opinion with the resolution error as reason', (t) => {
  const { create, authz } = setup();
  create('clusterrolebindings', clusterRoleBinding('b', 'nope', [userSubject('alice')]));
  t.deepEqual(authz.authorize(resourceRequest(user('alice'), 'get', 'pods')), {
    decision: 'no-opinion',
    reason: 'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found',
  });
});

test('non-resource URLs match exactly or by a trailing * prefix', (t) => {
  const { create, authz } = setup();
  create(
    'clusterroles',
    clusterRole('probe', [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/apis/*'] }]),
  );
  create('clusterrolebindings', clusterRoleBinding('probe', 'probe', [groupSubject('system:authenticated')]));
  const u = user('x', ['system:authenticated']);
  t.is(authz.authorize(nonResourceRequest(u, 'get', '/healthz')).decision, 'allow');
  t.is(authz.authorize(nonResourceRequest(u, 'get', '/healthz/etcd')).decision, 'no-opinion');
  t.is(authz.authorize(nonResourceRequest(u, 'get', '/apis/apps/v1')).decision, 'allow');
  t.is(authz.authorize(nonResourceRequest(u, 'post', '/apis/apps/v1')).decision, 'no-opinion');
});

test('rulesFor lists resource and non-resource rules, incomplete when a role is missing', (t) => {
  const { create, authz } = setup();
  create(
    'clusterroles',
    clusterRole('mixed', [...podReader, { verbs: ['get'], nonResourceURLs: ['/version'] }]),
  );
  create('clusterrolebindings', clusterRoleBinding('a', 'mixed', [userSubject('alice')]));
  create('rolebindings', roleBinding('ns1', 'b', { kind: 'Role', name: 'missing' }, [userSubject('alice')]));
  t.deepEqual(authz.rulesFor(user('alice'), ''), {
    resourceRules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'], resourceNames: [] }],
    nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/version'] }],
    incomplete: false,
    evaluationError: '',
  });
  const inNs = authz.rulesFor(user('alice'), 'ns1');
  t.true(inNs.incomplete);
  t.is(inNs.evaluationError, 'role.rbac.authorization.k8s.io "missing" not found');
  t.is(inNs.resourceRules.length, 1);
});

test('system:masters is allowed anything by the privileged-groups authorizer', (t) => {
  const a = new PrivilegedGroupsAuthorizer();
  t.is(a.authorize(resourceRequest(user('admin', ['system:masters']), 'delete', 'nodes')).decision, 'allow');
  t.is(a.authorize(resourceRequest(user('admin', ['devs']), 'delete', 'nodes')).decision, 'no-opinion');
});

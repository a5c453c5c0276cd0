import test from 'ava';
import { autoUpdateAnnotation } from './bootstrap-policy-builders.js';
import { bootstrapPolicy } from './bootstrap-policy.js';
import { RbacAuthorizer } from './rbac-authorizer.js';
import {
  nonResourceRequest,
  rbacRegistry,
  resourceRequest,
  systemNamespaces,
  user,
} from './rbac-fixtures.js';
import { reconcileBootstrapPolicy } from './reconcile-bootstrap-policy.js';

const registryWithNamespaces = () => rbacRegistry([], systemNamespaces);

test('a new cluster gets every bootstrap object; a second run changes nothing', (t) => {
  const registry = registryWithNamespaces();
  const policy = bootstrapPolicy();
  const first = reconcileBootstrapPolicy(registry);
  const total =
    policy.clusterRoles.length +
    policy.clusterRoleBindings.length +
    policy.roles.length +
    policy.roleBindings.length;
  t.is(first.created.length, total);
  const cr = registry.store.get('clusterroles', '', 'system:node-proxier')!.object;
  t.is(cr.metadata.labels!['kubernetes.io/bootstrapping'], 'rbac-defaults');
  t.is(cr.metadata.annotations![autoUpdateAnnotation], 'true');
  t.truthy(registry.store.get('roles', 'kube-system', 'system::leader-locking-kube-scheduler'));
  const rev = registry.store.revision;
  t.deepEqual(reconcileBootstrapPolicy(registry), { created: [], updated: [], recreated: [], protected: [] });
  t.is(registry.store.revision, rev);
});

test('the bootstrap policy lets authenticated users discover and kube-proxy watch services', (t) => {
  const registry = registryWithNamespaces();
  reconcileBootstrapPolicy(registry);
  const authz = RbacAuthorizer.fromStore(registry.store);
  const someone = user('someone', ['system:authenticated']);
  t.deepEqual(authz.authorize(nonResourceRequest(someone, 'get', '/apis/apps/v1')), {
    decision: 'allow',
    reason:
      'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"',
  });
  t.is(authz.authorize(resourceRequest(someone, 'list', 'pods')).decision, 'no-opinion');
  const proxy = user('system:kube-proxy', ['system:authenticated']);
  t.is(authz.authorize(resourceRequest(proxy, 'watch', 'services')).decision, 'allow');
  t.is(authz.authorize(resourceRequest(proxy, 'create', 'services')).decision, 'no-opinion');
  const admin = user('admin', ['system:masters']);
  t.is(authz.authorize(resourceRequest(admin, 'delete', 'nodes', { name: 'n1' })).decision, 'allow');
  authz.close();
});

test('reconcile adds what is missing, keeps what a user added, and leaves autoupdate "false" alone', (t) => {
  const registry = registryWithNamespaces();
  reconcileBootstrapPolicy(registry);
  const crs = registry.byStorage('clusterroles');
  const crbs = registry.byStorage('clusterrolebindings');
  // A user narrows system:kube-dns, adds a rule of their own, and adds a subject to a binding.
  const dns = registry.store.get('clusterroles', '', 'system:kube-dns')!.object;
  registry.update(crs, '', 'system:kube-dns', {
    ...dns,
    rules: [
      { apiGroups: [''], resources: ['endpoints'], verbs: ['list'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    ],
  });
  const basic = registry.store.get('clusterrolebindings', '', 'system:basic-user')!.object;
  const extra = { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:unauthenticated' };
  registry.update(crbs, '', 'system:basic-user', { ...basic, subjects: [extra] });
  // And protects system:heapster, emptied.
  const heapster = registry.store.get('clusterroles', '', 'system:heapster')!.object;
  registry.update(crs, '', 'system:heapster', {
    ...heapster,
    metadata: { ...heapster.metadata, annotations: { [autoUpdateAnnotation]: 'false' } },
    rules: [],
  });
  registry.forceRemove('clusterroles', '', 'system:kube-aggregator');

  const summary = reconcileBootstrapPolicy(registry);
  t.deepEqual(summary.created, ['ClusterRole/system:kube-aggregator']);
  t.deepEqual(summary.updated.sort(), [
    'ClusterRole/system:kube-dns',
    'ClusterRoleBinding/system:basic-user',
  ]);
  t.deepEqual(summary.protected, ['ClusterRole/system:heapster']);

  const dnsRules = registry.store.get('clusterroles', '', 'system:kube-dns')!.object.rules;
  t.deepEqual(dnsRules[1], { apiGroups: [''], resources: ['pods'], verbs: ['get'] });
  const authz = RbacAuthorizer.fromStore(registry.store);
  const dnsUser = user('system:serviceaccount:kube-system:kube-dns');
  for (const resource of ['endpoints', 'services'])
    for (const verb of ['list', 'watch'])
      t.is(
        authz.authorize(resourceRequest(dnsUser, verb, resource)).decision,
        'allow',
        `${verb} ${resource}`,
      );
  t.deepEqual(registry.store.get('clusterrolebindings', '', 'system:basic-user')!.object.subjects, [
    extra,
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' },
  ]);
  t.deepEqual(registry.store.get('clusterroles', '', 'system:heapster')!.object.rules, []);
  authz.close();
});

test('a binding whose roleRef changed is recreated', (t) => {
  const registry = registryWithNamespaces();
  reconcileBootstrapPolicy(registry);
  const b = registry.store.get('clusterrolebindings', '', 'system:kube-dns')!.object;
  registry.forceRemove('clusterrolebindings', '', 'system:kube-dns');
  const { uid: _uid, resourceVersion: _rv, creationTimestamp: _ct, ...meta } = b.metadata;
  registry.create(registry.byStorage('clusterrolebindings'), '', {
    ...b,
    metadata: meta,
    roleRef: { ...b.roleRef, name: 'view' },
  });
  t.deepEqual(reconcileBootstrapPolicy(registry).recreated, ['ClusterRoleBinding/system:kube-dns']);
  t.is(
    registry.store.get('clusterrolebindings', '', 'system:kube-dns')!.object.roleRef.name,
    'system:kube-dns',
  );
});

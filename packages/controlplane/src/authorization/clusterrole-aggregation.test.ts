import test from 'ava';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { ClusterRoleAggregationController } from '../controllers/clusterrole-aggregation-controller.js';
import { waitFor } from '../test-helpers.js';
import { RbacAuthorizer } from './rbac-authorizer.js';
import { clusterRole, rbacRegistry, resourceRequest, systemNamespaces, user } from './rbac-fixtures.js';
import { reconcileBootstrapPolicy } from './reconcile-bootstrap-policy.js';
import { clusterRoleBinding, userSubject } from './rbac-fixtures.js';

const label = (role: string) => ({ [`rbac.authorization.k8s.io/aggregate-to-${role}`]: 'true' });

function setup() {
  const registry = rbacRegistry([], systemNamespaces);
  const controller = new ClusterRoleAggregationController(
    registry,
    new VirtualClock(),
    createLogger({ sink: new MemorySink().sink }),
  );
  return { registry, controller };
}

test('an aggregating role gets the union of the selected roles rules, each once, in name order', (t) => {
  const { registry, controller } = setup();
  const crs = registry.byStorage('clusterroles');
  const a = { apiGroups: [''], resources: ['pods'], verbs: ['get'] };
  const b = { apiGroups: ['apps'], resources: ['deployments'], verbs: ['list'] };
  registry.create(
    crs,
    '',
    clusterRole('z-part', [b, a], { metadata: { name: 'z-part', labels: { x: '1' } } }),
  );
  registry.create(crs, '', clusterRole('a-part', [a], { metadata: { name: 'a-part', labels: { x: '1' } } }));
  registry.create(
    crs,
    '',
    clusterRole('other', [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }]),
  );
  registry.create(
    crs,
    '',
    clusterRole('sum', [], { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { x: '1' } }] } }),
  );
  controller.sync('sum');
  t.deepEqual(registry.store.get('clusterroles', '', 'sum')!.object.rules, [a, b]);
  const rev = registry.store.revision;
  controller.sync('sum');
  t.is(registry.store.revision, rev, 'nothing to change: no write');
});

test('running, it gives the bootstrap admin, edit and view their parts and follows later changes', async (t) => {
  const { registry, controller } = setup();
  reconcileBootstrapPolicy(registry);
  controller.start();
  const crs = registry.byStorage('clusterroles');
  const rules = (name: string) => registry.store.get('clusterroles', '', name)!.object.rules as unknown[];
  await waitFor(() => (rules('admin').length > 0 ? true : undefined), 'admin aggregated');
  // view ⊂ edit ⊂ admin, by the aggregate-to labels on edit and view themselves.
  const authz = RbacAuthorizer.fromStore(registry.store);
  registry.create(
    registry.byStorage('clusterrolebindings'),
    '',
    clusterRoleBinding('a', 'admin', [userSubject('ann')]),
  );
  await waitFor(
    () =>
      authz.authorize(resourceRequest(user('ann'), 'list', 'deployments', { apiGroup: 'apps' })).decision ===
      'allow'
        ? true
        : undefined,
    'admin includes view',
  );
  t.is(
    authz.authorize(
      resourceRequest(user('ann'), 'create', 'rolebindings', {
        apiGroup: 'rbac.authorization.k8s.io',
        namespace: 'x',
      }),
    ).decision,
    'allow',
  );
  // A new role labelled aggregate-to-view reaches view, edit and admin.
  registry.create(
    crs,
    '',
    clusterRole('crd-viewer', [{ apiGroups: ['example.com'], resources: ['widgets'], verbs: ['get'] }], {
      metadata: { name: 'crd-viewer', labels: label('view') },
    }),
  );
  await waitFor(
    () =>
      authz.authorize(resourceRequest(user('ann'), 'get', 'widgets', { apiGroup: 'example.com' }))
        .decision === 'allow'
        ? true
        : undefined,
    'new view part reaches admin',
  );
  t.true(JSON.stringify(rules('view')).includes('widgets'));
  controller.stop();
  authz.close();
});

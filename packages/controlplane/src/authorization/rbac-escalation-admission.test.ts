import test from 'ava';
import { ApiError } from '../apiserver/status.js';
import { RbacAuthorizer } from './rbac-authorizer.js';
import { RbacEscalationAdmission } from './rbac-escalation-admission.js';
import {
  clusterRole,
  clusterRoleBinding,
  rbacRegistry,
  role,
  roleBinding,
  user,
  userSubject,
} from './rbac-fixtures.js';
import type { RequestUser } from '../apiserver/resource-type.js';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';

const podGet = [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }];
const rbacWrite = [
  { apiGroups: ['rbac.authorization.k8s.io'], resources: ['*'], verbs: ['create', 'update'] },
];

function setup() {
  const admission: RbacEscalationAdmission[] = [];
  const registry = rbacRegistry(admission);
  const authz = RbacAuthorizer.fromStore(registry.store);
  admission.push(new RbacEscalationAdmission(authz.resolver, authz));
  const put = (obj: KubeObject) =>
    registry.create(registry.byStorage(storageOf(obj)), obj.metadata.namespace ?? '', obj);
  put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns1' } });
  // alice may read pods and write RBAC objects in ns1.
  put(role('ns1', 'author', [...podGet, ...rbacWrite]));
  put(roleBinding('ns1', 'author', { kind: 'Role', name: 'author' }, [userSubject('alice')]));
  return { registry, put };
}

const storageOf = (obj: KubeObject) =>
  ({
    Namespace: 'namespaces',
    Role: 'roles',
    ClusterRole: 'clusterroles',
    RoleBinding: 'rolebindings',
    ClusterRoleBinding: 'clusterrolebindings',
  })[obj.kind!]!;

const alice = user('alice', ['devs']);
const as = (registry: Registry, u: RequestUser, obj: KubeObject) =>
  registry.create(registry.byStorage(storageOf(obj)), obj.metadata.namespace ?? '', obj, { user: u });

test('a role with only rules the author holds is allowed; more is refused with upstream message', (t) => {
  const { registry } = setup();
  t.notThrows(() => as(registry, alice, role('ns1', 'reader', podGet)));
  const err = t.throws(() =>
    as(
      registry,
      alice,
      role('ns1', 'lister', [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }]),
    ),
  ) as ApiError;
  t.is(err.code, 403);
  t.is(
    err.message,
    'roles.rbac.authorization.k8s.io "lister" is forbidden: user "alice" (groups=["devs"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["list"]}',
  );
});

test('missing rules are compacted and listed one per line, sorted', (t) => {
  const { registry } = setup();
  const err = t.throws(() =>
    as(
      registry,
      alice,
      role('ns1', 'big', [
        { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['a'] },
      ]),
    ),
  ) as ApiError;
  t.true(
    err.message.endsWith(
      'not currently held:\n{APIGroups:[""], Resources:["secrets"], ResourceNames:["a"], Verbs:["get"]}\n{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}',
    ),
  );
});

test('the escalate verb on roles lets an author create a role beyond their rules', (t) => {
  const { registry, put } = setup();
  put(
    role('ns1', 'escalator', [
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'], verbs: ['escalate'] },
    ]),
  );
  put(roleBinding('ns1', 'escalator', { kind: 'Role', name: 'escalator' }, [userSubject('alice')]));
  t.notThrows(() =>
    as(
      registry,
      alice,
      role('ns1', 'deleter', [{ apiGroups: [''], resources: ['pods'], verbs: ['delete'] }]),
    ),
  );
});

test('a binding is allowed when the author holds the role rules, or may bind it', (t) => {
  const { registry, put } = setup();
  put(clusterRole('pod-getter', podGet));
  put(clusterRole('pod-deleter', [{ apiGroups: [''], resources: ['pods'], verbs: ['delete'] }]));
  t.notThrows(() =>
    as(
      registry,
      alice,
      roleBinding('ns1', 'b1', { kind: 'ClusterRole', name: 'pod-getter' }, [userSubject('bob')]),
    ),
  );
  const err = t.throws(() =>
    as(
      registry,
      alice,
      roleBinding('ns1', 'b2', { kind: 'ClusterRole', name: 'pod-deleter' }, [userSubject('bob')]),
    ),
  ) as ApiError;
  t.regex(
    err.message,
    /^rolebindings.rbac.authorization.k8s.io "b2" is forbidden: user "alice" .*\n\{APIGroups:\[""\], Resources:\["pods"\], Verbs:\["delete"\]\}$/,
  );
  const missing = t.throws(() =>
    as(registry, alice, roleBinding('ns1', 'b3', { kind: 'Role', name: 'nope' }, [userSubject('bob')])),
  ) as ApiError;
  t.is(
    missing.message,
    'rolebindings.rbac.authorization.k8s.io "b3" is forbidden: role.rbac.authorization.k8s.io "nope" not found',
  );
  put(
    role('ns1', 'binder', [
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterroles'],
        verbs: ['bind'],
        resourceNames: ['pod-deleter'],
      },
    ]),
  );
  put(roleBinding('ns1', 'binder', { kind: 'Role', name: 'binder' }, [userSubject('alice')]));
  t.notThrows(() =>
    as(
      registry,
      alice,
      roleBinding('ns1', 'b2', { kind: 'ClusterRole', name: 'pod-deleter' }, [userSubject('bob')]),
    ),
  );
});

test('cluster-scoped writes are checked against cluster-wide rules only', (t) => {
  const { registry } = setup();
  // alice's pods/get is only in ns1: a ClusterRole with it is an escalation.
  t.throws(() => as(registry, alice, clusterRole('cr', podGet)), {
    message: /attempting to grant RBAC permissions/,
  });
  t.throws(() => as(registry, alice, clusterRoleBinding('crb', 'author', [userSubject('alice')])));
});

test('updates are checked too; an aggregationRule needs full authority', (t) => {
  const { registry, put } = setup();
  put(clusterRole('cluster-rbac', rbacWrite));
  put(clusterRoleBinding('cluster-rbac', 'cluster-rbac', [userSubject('alice')]));
  put(clusterRole('cluster-pods', podGet));
  put(clusterRoleBinding('cluster-pods', 'cluster-pods', [userSubject('alice')]));
  as(registry, alice, clusterRole('mine', podGet));
  const t2 = registry.byStorage('clusterroles');
  const current = registry.store.get('clusterroles', '', 'mine')!.object;
  const err = t.throws(() =>
    registry.update(
      t2,
      '',
      'mine',
      { ...current, rules: [...podGet, { apiGroups: [''], resources: ['pods'], verbs: ['delete'] }] },
      { user: alice },
    ),
  ) as ApiError;
  t.is(err.code, 403);
  t.throws(
    () =>
      registry.update(
        t2,
        '',
        'mine',
        { ...current, aggregationRule: { clusterRoleSelectors: [{ matchLabels: { a: 'b' } }] } },
        { user: alice },
      ),
    {
      message:
        'clusterroles.rbac.authorization.k8s.io "mine" is forbidden: must have cluster-admin privileges to use the aggregationRule',
    },
  );
  // Owner references and finalizers alone are not checked.
  t.notThrows(() =>
    registry.update(
      t2,
      '',
      'mine',
      { ...current, metadata: { ...current.metadata, finalizers: ['x/y'] } },
      { user: user('nobody') },
    ),
  );
});

test('system:masters and writes without a user pass', (t) => {
  const { registry } = setup();
  const everything = [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }];
  t.notThrows(() => as(registry, user('root', ['system:masters']), clusterRole('all', everything)));
  t.notThrows(() => registry.create(registry.byStorage('clusterroles'), '', clusterRole('all2', everything)));
});

/**
 * Upstream's own test cases, as data: plugin/pkg/auth/authorizer/rbac/rbac_test.go (TestAuthorizer,
 * TestRuleMatches) and pkg/registry/rbac/validation/rule_test.go (TestDefaultRuleResolver,
 * TestAppliesTo).
 */
import test from 'ava';
import type { KubeObject } from '../object.js';
import type { RequestAttributes } from './attributes.js';
import { ruleAllows, subjectAppliesTo, type PolicyRule, type Subject } from './policy-rule.js';
import { RbacAuthorizer } from './rbac-authorizer.js';
import {
  clusterRole,
  clusterRoleBinding,
  nonResourceRequest,
  resourceRequest,
  role,
  roleBinding,
  user,
} from './rbac-fixtures.js';
import { RbacIndex, rulesFor } from './rbac-index.js';

/** Upstream's newRule(verbs, apiGroups, resources, nonResourceURLs): comma-separated lists. */
const newRule = (verbs: string, groups: string, resources: string, urls: string): PolicyRule => ({
  verbs: verbs.split(','),
  apiGroups: groups.split(','),
  resources: resources.split(','),
  nonResourceURLs: urls.split(','),
});

/** `Kind:name` subjects as upstream's table writes them. */
const subjects = (...specs: string[]): Subject[] =>
  specs.map((s) => {
    const [kind, name] = [s.slice(0, s.indexOf(':')), s.slice(s.indexOf(':') + 1)];
    return { kind, name, ...(kind === 'ServiceAccount' ? {} : { apiGroup: 'rbac.authorization.k8s.io' }) };
  });

/** [user, groups (comma-separated), verb, resource, subresource, namespace, apiGroup] */
type Attr = [string, string, string, string, string, string, string];
const attr = ([name, groups, verb, resource, subresource, namespace, apiGroup]: Attr): RequestAttributes =>
  resourceRequest(user(name, groups.split(',')), verb, resource, { subresource, namespace, apiGroup });
/** [user, groups, verb, path] of a non-resource request. */
const url = (name: string, groups: string[], verb: string, path: string) =>
  nonResourceRequest(user(name, groups), verb, path);

const authorizerCases: { objects: KubeObject[]; pass: RequestAttributes[]; fail: RequestAttributes[] }[] = [
  {
    objects: [
      clusterRole('admin', [newRule('*', '*', '*', '*')]),
      roleBinding(
        'ns1',
        'b0',
        { kind: 'ClusterRole', name: 'admin' },
        subjects('User:admin', 'Group:admins'),
      ),
    ],
    pass: (
      [
        ['admin', '', 'get', 'Pods', '', 'ns1', ''],
        ['admin', '', 'watch', 'Pods', '', 'ns1', ''],
        ['admin', 'group1', 'watch', 'Foobar', '', 'ns1', ''],
        ['joe', 'admins', 'watch', 'Foobar', '', 'ns1', ''],
        ['joe', 'group1,admins', 'watch', 'Foobar', '', 'ns1', ''],
      ] as Attr[]
    ).map(attr),
    fail: (
      [
        ['admin', '', 'GET', 'Pods', '', 'ns2', ''],
        ['admin', '', 'GET', 'Nodes', '', '', ''],
        ['admin', 'admins', 'GET', 'Pods', '', 'ns2', ''],
        ['admin', 'admins', 'GET', 'Nodes', '', '', ''],
      ] as Attr[]
    ).map(attr),
  },
  {
    objects: [
      clusterRole('non-resource-url-getter', [newRule('get', '', '', '/apis')]),
      clusterRole('non-resource-url', [newRule('*', '', '', '/apis')]),
      clusterRole('non-resource-url-prefix', [newRule('get', '', '', '/apis/*')]),
      clusterRoleBinding('b0', 'non-resource-url-getter', subjects('User:foo', 'Group:bar')),
      clusterRoleBinding('b1', 'non-resource-url', subjects('User:admin', 'Group:admin')),
      clusterRoleBinding('b2', 'non-resource-url-prefix', subjects('User:prefixed', 'Group:prefixed')),
    ],
    pass: [
      url('foo', [], 'get', '/apis'),
      url('', ['bar'], 'get', '/apis'),
      url('admin', [], 'get', '/apis'),
      url('', ['admin'], 'get', '/apis'),
      url('admin', [], 'watch', '/apis'),
      url('', ['admin'], 'watch', '/apis'),
      url('prefixed', [], 'get', '/apis/v1'),
      url('', ['prefixed'], 'get', '/apis/v1'),
      url('prefixed', [], 'get', '/apis/v1/foobar'),
      url('', ['prefixed'], 'get', '/apis/v1/foorbar'),
    ],
    fail: [
      url('foo', [], 'watch', '/apis'),
      url('', ['bar'], 'watch', '/apis'),
      url('foo', [], 'get', '/api/v1'),
      url('', ['bar'], 'get', '/api/v1'),
      url('admin', [], 'get', '/api/v1'),
      url('', ['admin'], 'get', '/api/v1'),
      url('prefixed', [], 'get', '/api/v1'),
      url('', ['prefixed'], 'get', '/api/v1'),
    ],
  },
  {
    objects: [
      clusterRole('admin', [newRule('*', '*', 'pods', '*')]),
      roleBinding(
        'ns1',
        'b0',
        { kind: 'ClusterRole', name: 'admin' },
        subjects('User:admin', 'Group:admins'),
      ),
    ],
    pass: [attr(['admin', '', 'get', 'pods', '', 'ns1', ''])],
    fail: [attr(['admin', '', 'get', 'pods', 'status', 'ns1', ''])],
  },
  {
    objects: [
      clusterRole('admin', [newRule('*', '*', 'pods/status', '*')]),
      roleBinding(
        'ns1',
        'b0',
        { kind: 'ClusterRole', name: 'admin' },
        subjects('User:admin', 'Group:admins'),
      ),
    ],
    pass: [attr(['admin', '', 'get', 'pods', 'status', 'ns1', ''])],
    fail: [attr(['admin', '', 'get', 'pods', '', 'ns1', ''])],
  },
];

test('TestAuthorizer', (t) => {
  authorizerCases.forEach((c, i) => {
    const authz = new RbacAuthorizer(RbacIndex.of(c.objects));
    for (const a of c.pass)
      t.is(authz.authorize(a).decision, 'allow', `case ${i}: restricted ${JSON.stringify(a)}`);
    for (const a of c.fail)
      t.is(authz.authorize(a).decision, 'no-opinion', `case ${i}: passed ${JSON.stringify(a)}`);
  });
});

const rr = (verb: string, group: string, resource: string, subresource = '') =>
  resourceRequest(user('u'), verb, resource, { apiGroup: group, subresource });
const nr = (verb: string, path: string) => nonResourceRequest(user('u'), verb, path);

/** [name, rule, [request, expected]…] */
const ruleMatchCases: [string, PolicyRule, [RequestAttributes, boolean][]][] = [
  [
    'star verb, exact match other',
    { verbs: ['*'], apiGroups: ['group1'], resources: ['resource1'] },
    [
      [rr('verb1', 'group1', 'resource1'), true],
      [rr('verb1', 'group2', 'resource1'), false],
      [rr('verb1', 'group1', 'resource2'), false],
      [rr('verb1', 'group2', 'resource2'), false],
      [rr('verb2', 'group1', 'resource1'), true],
      [rr('verb2', 'group2', 'resource1'), false],
      [rr('verb2', 'group1', 'resource2'), false],
      [rr('verb2', 'group2', 'resource2'), false],
    ],
  ],
  [
    'star group, exact match other',
    { verbs: ['verb1'], apiGroups: ['*'], resources: ['resource1'] },
    [
      [rr('verb1', 'group1', 'resource1'), true],
      [rr('verb1', 'group2', 'resource1'), true],
      [rr('verb1', 'group1', 'resource2'), false],
      [rr('verb1', 'group2', 'resource2'), false],
      [rr('verb2', 'group1', 'resource1'), false],
      [rr('verb2', 'group2', 'resource1'), false],
      [rr('verb2', 'group1', 'resource2'), false],
      [rr('verb2', 'group2', 'resource2'), false],
    ],
  ],
  [
    'star resource, exact match other',
    { verbs: ['verb1'], apiGroups: ['group1'], resources: ['*'] },
    [
      [rr('verb1', 'group1', 'resource1'), true],
      [rr('verb1', 'group2', 'resource1'), false],
      [rr('verb1', 'group1', 'resource2'), true],
      [rr('verb1', 'group2', 'resource2'), false],
      [rr('verb2', 'group1', 'resource1'), false],
      [rr('verb2', 'group2', 'resource1'), false],
      [rr('verb2', 'group1', 'resource2'), false],
      [rr('verb2', 'group2', 'resource2'), false],
    ],
  ],
  [
    'tuple expansion',
    { verbs: ['verb1', 'verb2'], apiGroups: ['group1', 'group2'], resources: ['resource1', 'resource2'] },
    [
      [rr('verb1', 'group1', 'resource1'), true],
      [rr('verb1', 'group2', 'resource1'), true],
      [rr('verb1', 'group1', 'resource2'), true],
      [rr('verb1', 'group2', 'resource2'), true],
      [rr('verb2', 'group1', 'resource1'), true],
      [rr('verb2', 'group2', 'resource1'), true],
      [rr('verb2', 'group1', 'resource2'), true],
      [rr('verb2', 'group2', 'resource2'), true],
    ],
  ],
  [
    'subresource expansion',
    { verbs: ['*'], apiGroups: ['*'], resources: ['resource1/subresource1'] },
    [
      [rr('verb1', 'group1', 'resource1', 'subresource1'), true],
      [rr('verb1', 'group2', 'resource1', 'subresource2'), false],
      [rr('verb1', 'group1', 'resource2', 'subresource1'), false],
      [rr('verb1', 'group2', 'resource2', 'subresource1'), false],
      [rr('verb2', 'group1', 'resource1', 'subresource1'), true],
      [rr('verb2', 'group2', 'resource1', 'subresource2'), false],
      [rr('verb2', 'group1', 'resource2', 'subresource1'), false],
      [rr('verb2', 'group2', 'resource2', 'subresource1'), false],
    ],
  ],
  [
    'star nonresource, exact match other',
    { verbs: ['verb1'], nonResourceURLs: ['*'] },
    [
      [nr('verb1', '/foo'), true],
      [nr('verb1', '/foo/bar'), true],
      [nr('verb1', '/foo/baz'), true],
      [nr('verb1', '/foo/bar/one'), true],
      [nr('verb1', '/foo/baz/one'), true],
      [nr('verb2', '/foo'), false],
      [nr('verb2', '/foo/bar'), false],
      [nr('verb2', '/foo/baz'), false],
      [nr('verb2', '/foo/bar/one'), false],
      [nr('verb2', '/foo/baz/one'), false],
    ],
  ],
  [
    'star nonresource subpath',
    { verbs: ['verb1'], nonResourceURLs: ['/foo/*'] },
    [
      [nr('verb1', '/foo'), false],
      [nr('verb1', '/foo/bar'), true],
      [nr('verb1', '/foo/baz'), true],
      [nr('verb1', '/foo/bar/one'), true],
      [nr('verb1', '/foo/baz/one'), true],
      [nr('verb1', '/notfoo'), false],
      [nr('verb1', '/notfoo/bar'), false],
      [nr('verb1', '/notfoo/baz'), false],
      [nr('verb1', '/notfoo/bar/one'), false],
      [nr('verb1', '/notfoo/baz/one'), false],
    ],
  ],
  [
    'star verb, exact nonresource',
    { verbs: ['*'], nonResourceURLs: ['/foo', '/foo/bar/one'] },
    [
      [nr('verb1', '/foo'), true],
      [nr('verb1', '/foo/bar'), false],
      [nr('verb1', '/foo/baz'), false],
      [nr('verb1', '/foo/bar/one'), true],
      [nr('verb1', '/foo/baz/one'), false],
      [nr('verb2', '/foo'), true],
      [nr('verb2', '/foo/bar'), false],
      [nr('verb2', '/foo/baz'), false],
      [nr('verb2', '/foo/bar/one'), true],
      [nr('verb2', '/foo/baz/one'), false],
    ],
  ],
];

test('TestRuleMatches', (t) => {
  for (const [name, rule, requests] of ruleMatchCases)
    for (const [request, expected] of requests)
      t.is(ruleAllows(request, rule), expected, `${name}: ${JSON.stringify(request)}`);
});

test('TestDefaultRuleResolver', (t) => {
  const readPods = { verbs: ['GET', 'WATCH'], apiGroups: ['v1'], resources: ['pods'] };
  const readServices = { verbs: ['GET', 'WATCH'], apiGroups: ['v1'], resources: ['services'] };
  const writeNodes = { verbs: ['PUT', 'CREATE', 'UPDATE'], apiGroups: ['v1'], resources: ['nodes'] };
  const admin = { verbs: ['*'], apiGroups: ['*'], resources: ['*'] };
  const index = RbacIndex.of([
    role('namespace1', 'readthings', [readPods, readServices]),
    clusterRole('cluster-admin', [admin]),
    clusterRole('write-nodes', [writeNodes]),
    roleBinding('namespace1', 'b0', { kind: 'Role', name: 'readthings' }, [
      { kind: 'User', name: 'foobar' },
      { kind: 'Group', name: 'group1' },
    ]),
    clusterRoleBinding('b1', 'cluster-admin', [
      { kind: 'User', name: 'admin' },
      { kind: 'Group', name: 'admin' },
    ]),
  ]);
  const cases: [string, string[], string, PolicyRule[]][] = [
    ['foobar', [], 'namespace1', [readPods, readServices]],
    ['foobar', [], 'namespace2', []],
    ['foobar', ['admin'], '', [admin]],
    ['', [], '', []],
  ];
  for (const [name, groups, ns, expected] of cases) {
    const { rules, errors } = rulesFor(index, user(name, groups), ns);
    t.deepEqual(errors, []);
    const sorted = (r: PolicyRule[]) => r.map((x) => JSON.stringify(x)).sort();
    t.deepEqual(sorted(rules), sorted(expected), `${name} in ${ns}`);
  }
});

test('TestAppliesTo', (t) => {
  const cases: [string, Subject[], string, string[], string, boolean][] = [
    ['single subject that matches username', [{ kind: 'User', name: 'foobar' }], 'foobar', [], '', true],
    [
      'multiple subjects, one that matches username',
      [
        { kind: 'User', name: 'barfoo' },
        { kind: 'User', name: 'foobar' },
      ],
      'foobar',
      [],
      '',
      true,
    ],
    [
      'multiple subjects, none that match username',
      [
        { kind: 'User', name: 'barfoo' },
        { kind: 'User', name: 'foobar' },
      ],
      'zimzam',
      [],
      '',
      false,
    ],
    [
      'multiple subjects, one that match group',
      [
        { kind: 'User', name: 'barfoo' },
        { kind: 'Group', name: 'foobar' },
      ],
      'zimzam',
      ['foobar'],
      '',
      true,
    ],
    [
      'multiple subjects, one that match group, should ignore namespace',
      [
        { kind: 'User', name: 'barfoo' },
        { kind: 'Group', name: 'foobar' },
      ],
      'zimzam',
      ['foobar'],
      'namespace1',
      true,
    ],
    [
      'multiple subjects with a service account that matches',
      [
        { kind: 'User', name: 'barfoo' },
        { kind: 'Group', name: 'foobar' },
        { kind: 'ServiceAccount', namespace: 'kube-system', name: 'default' },
      ],
      'system:serviceaccount:kube-system:default',
      [],
      'default',
      true,
    ],
    [
      "* user subject name doesn't match all users",
      [{ kind: 'User', name: '*' }],
      'foobar',
      [],
      'default',
      false,
    ],
    [
      'binding to all authenticated and unauthenticated subjects matches authenticated user',
      [
        { kind: 'Group', name: 'system:authenticated' },
        { kind: 'Group', name: 'system:unauthenticated' },
      ],
      'foobar',
      ['system:authenticated'],
      'default',
      true,
    ],
    [
      'binding to all authenticated and unauthenticated subjects matches anonymous user',
      [
        { kind: 'Group', name: 'system:authenticated' },
        { kind: 'Group', name: 'system:unauthenticated' },
      ],
      'system:anonymous',
      ['system:unauthenticated'],
      'default',
      true,
    ],
  ];
  for (const [name, subs, userName, groups, ns, expected] of cases)
    t.is(
      subs.some((s) => subjectAppliesTo(user(userName, groups), s, ns)),
      expected,
      name,
    );
});

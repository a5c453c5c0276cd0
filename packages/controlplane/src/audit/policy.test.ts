import test from 'ava';
import type { RequestAttributes } from '../authorization/attributes.js';
import { nonResourceRequest, resourceRequest, user } from '../authorization/rbac-fixtures.js';
import { evaluatePolicy, parsePolicy, type AuditPolicy, type PolicyRule } from './policy.js';

const alice = user('alice', ['dev', 'system:authenticated']);

/** GET of pod web in default by alice, with `overrides`. */
function resource(overrides: Partial<RequestAttributes> = {}): RequestAttributes {
  return {
    ...resourceRequest(alice, 'get', 'pods', { namespace: 'default', name: 'web' }),
    path: '/api/v1/namespaces/default/pods/web',
    ...overrides,
  };
}

const nonResource = (path: string, verb = 'get') => nonResourceRequest(alice, verb, path);

const level = (rule: Omit<PolicyRule, 'level'>, attrs: RequestAttributes) =>
  evaluatePolicy({ rules: [{ level: 'Metadata', ...rule }] }, attrs).level;

const matches: [string, Omit<PolicyRule, 'level'>, RequestAttributes, boolean][] = [
  ['an empty rule matches everything', {}, resource(), true],
  ['an empty rule matches non-resource requests', {}, nonResource('/healthz'), true],
  ['users: the name', { users: ['alice'] }, resource(), true],
  ['users: another name', { users: ['bob'] }, resource(), false],
  ['userGroups: any group', { userGroups: ['ops', 'dev'] }, resource(), true],
  ['userGroups: none', { userGroups: ['ops'] }, resource(), false],
  ['verbs', { verbs: ['list', 'get'] }, resource(), true],
  ['verbs: other', { verbs: ['create'] }, resource(), false],
  ['namespaces', { namespaces: ['default'] }, resource(), true],
  ['namespaces: other', { namespaces: ['kube-system'] }, resource(), false],
  [
    'namespaces: "" is cluster-scoped',
    { namespaces: [''] },
    resource({ resource: 'nodes', namespace: '' }),
    true,
  ],
  ['namespaces never match a non-resource request', { namespaces: [''] }, nonResource('/api'), false],
  ['resources: the core group', { resources: [{ group: '', resources: ['pods'] }] }, resource(), true],
  ['resources: group left out is core', { resources: [{ resources: ['pods'] }] }, resource(), true],
  ['resources: other group', { resources: [{ group: 'apps', resources: ['pods'] }] }, resource(), false],
  ['resources: a group with no resources is all of it', { resources: [{ group: '' }] }, resource(), true],
  ['resources: *', { resources: [{ resources: ['*'] }] }, resource({ subresource: 'log' }), true],
  [
    'resources: pods does not match pods/log',
    { resources: [{ resources: ['pods'] }] },
    resource({ subresource: 'log' }),
    false,
  ],
  [
    'resources: pods/log',
    { resources: [{ resources: ['pods/log'] }] },
    resource({ subresource: 'log' }),
    true,
  ],
  [
    'resources: */status',
    { resources: [{ resources: ['*/status'] }] },
    resource({ subresource: 'status' }),
    true,
  ],
  ['resources: */status not the object', { resources: [{ resources: ['*/status'] }] }, resource(), false],
  ['resources: pods/*', { resources: [{ resources: ['pods/*'] }] }, resource({ subresource: 'exec' }), true],
  ['resourceNames', { resources: [{ resources: ['pods'], resourceNames: ['web'] }] }, resource(), true],
  [
    'resourceNames: other',
    { resources: [{ resources: ['pods'], resourceNames: ['db'] }] },
    resource(),
    false,
  ],
  [
    'resources never match a non-resource request',
    { resources: [{ resources: ['*'] }] },
    nonResource('/api'),
    false,
  ],
  ['nonResourceURLs: exact', { nonResourceURLs: ['/healthz'] }, nonResource('/healthz'), true],
  [
    'nonResourceURLs: exact, not a prefix',
    { nonResourceURLs: ['/healthz'] },
    nonResource('/healthz/etcd'),
    false,
  ],
  ['nonResourceURLs: trailing *', { nonResourceURLs: ['/healthz*'] }, nonResource('/healthz/etcd'), true],
  ['nonResourceURLs: *', { nonResourceURLs: ['*'] }, nonResource('/version'), true],
  ['nonResourceURLs never match a resource request', { nonResourceURLs: ['*'] }, resource(), false],
  ['every field must match', { users: ['alice'], verbs: ['delete'] }, resource(), false],
];

for (const [title, rule, attrs, want] of matches) {
  test(`policy rule: ${title}`, (t) => {
    t.is(level(rule, attrs), want ? 'Metadata' : 'None');
  });
}

test('the first matching rule decides; no match is None; omitStages add up, omitManagedFields is overridden', (t) => {
  const policy: AuditPolicy = {
    omitStages: ['RequestReceived'],
    omitManagedFields: true,
    rules: [
      { level: 'None', nonResourceURLs: ['/healthz*'] },
      {
        level: 'RequestResponse',
        resources: [{ resources: ['configmaps'] }],
        omitStages: ['ResponseStarted'],
        omitManagedFields: false,
      },
      { level: 'Metadata', resources: [{ resources: ['secrets', 'configmaps'] }] },
      { level: 'Request', verbs: ['create'] },
    ],
  };
  t.deepEqual(evaluatePolicy(policy, resource({ resource: 'configmaps' })), {
    level: 'RequestResponse',
    omitStages: ['RequestReceived', 'ResponseStarted'],
    omitManagedFields: false,
  });
  t.deepEqual(evaluatePolicy(policy, resource({ resource: 'secrets', verb: 'create' })), {
    level: 'Metadata',
    omitStages: ['RequestReceived'],
    omitManagedFields: true,
  });
  t.is(evaluatePolicy(policy, resource({ verb: 'create' })).level, 'Request');
  t.is(evaluatePolicy(policy, nonResource('/healthz')).level, 'None');
  t.is(evaluatePolicy(policy, resource()).level, 'None');
});

test('a Policy file parses; a bad one is refused naming the file and the field', (t) => {
  const policy = parsePolicy(
    `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    nonResourceURLs: ["/healthz*"]
  - level: RequestResponse
    resources: [{group: "", resources: [configmaps]}]
  - level: Metadata
`,
  );
  t.deepEqual(policy, {
    omitStages: ['RequestReceived'],
    rules: [
      { level: 'None', nonResourceURLs: ['/healthz*'] },
      { level: 'RequestResponse', resources: [{ group: '', resources: ['configmaps'] }] },
      { level: 'Metadata' },
    ],
  });
  const head = 'apiVersion: audit.k8s.io/v1\nkind: Policy\n';
  const cases: [string, RegExp][] = [
    [
      `${head}rules:\n  - level: Everything\n`,
      /rules\[0\]\.level: must be one of None, Metadata, Request, RequestResponse/,
    ],
    [`${head}rules: []\n`, /rules: at least one rule is required/],
    [
      `${head}rules:\n  - level: None\n    omitStages: [Done]\n`,
      /rules\[0\]\.omitStages\[0\]: must be one of RequestReceived/,
    ],
    [
      `${head}rules:\n  - level: None\n    nonResourceURLs: [healthz]\n`,
      /rules\[0\]\.nonResourceURLs\[0\]: must start with \//,
    ],
    [
      `${head}rules:\n  - {level: None, nonResourceURLs: ["/x"], namespaces: [a]}\n`,
      /rules\[0\]: a rule may not name both/,
    ],
    [
      `apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n`,
      /apiVersion: must be audit\.k8s\.io\/v1/,
    ],
  ];
  for (const [text, message] of cases) {
    const err = t.throws(() => parsePolicy(text, '/etc/audit.yaml'));
    t.regex(err!.message, /^\/etc\/audit\.yaml: /);
    t.regex(err!.message, message);
  }
});

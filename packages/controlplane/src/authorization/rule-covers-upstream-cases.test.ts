/**
 * Upstream's cases for Covers, the comparison escalation prevention rests on, as data:
 * staging/src/k8s.io/component-helpers/auth/rbac/validation/policy_comparator_test.go.
 */
import test from 'ava';
import type { PolicyRule } from './policy-rule.js';
import { covers, nonResourceURLCovers } from './rule-covers.js';

const r = (
  apiGroups: string[],
  verbs: string[],
  resources: string[],
  resourceNames?: string[],
): PolicyRule => ({
  apiGroups,
  verbs,
  resources,
  ...(resourceNames && resourceNames.length > 0 ? { resourceNames } : {}),
});
const u = (nonResourceURLs: string[], verbs: string[]): PolicyRule => ({ nonResourceURLs, verbs });

/** [name, owner rules, servant rules, covered, uncovered pieces] */
const coversCases: [string, PolicyRule[], PolicyRule[], boolean, PolicyRule[]][] = [
  ['ExactMatch', [r(['v1'], ['get'], ['builds'])], [r(['v1'], ['get'], ['builds'])], true, []],
  ['SubresourceWildcard', [r(['v1'], ['get'], ['*/scale'])], [r(['v1'], ['get'], ['foo/scale'])], true, []],
  [
    'MultipleRulesCoveringSingleRule',
    [
      r(['v1'], ['delete'], ['deployments']),
      r(['v1'], ['delete'], ['builds']),
      r(['v1'], ['update'], ['builds', 'deployments']),
    ],
    [r(['v1'], ['delete', 'update'], ['builds', 'deployments'])],
    true,
    [],
  ],
  [
    'MultipleAPIGroupsCoveringSingleRule',
    ['group1', 'group2'].flatMap((g) => [
      r([g], ['delete'], ['deployments']),
      r([g], ['delete'], ['builds']),
      r([g], ['update'], ['builds', 'deployments']),
    ]),
    [r(['group1', 'group2'], ['delete', 'update'], ['builds', 'deployments'])],
    true,
    [],
  ],
  [
    'SingleAPIGroupsCoveringMultiple',
    [r(['group1', 'group2'], ['delete', 'update'], ['builds', 'deployments'])],
    ['group1', 'group2'].flatMap((g) => [
      r([g], ['delete'], ['deployments']),
      r([g], ['delete'], ['builds']),
      r([g], ['update'], ['builds', 'deployments']),
    ]),
    true,
    [],
  ],
  [
    'MultipleRulesMissingSingleVerbResourceCombination',
    [r(['v1'], ['delete', 'update'], ['builds', 'deployments']), r(['v1'], ['delete'], ['pods'])],
    [r(['v1'], ['delete', 'update'], ['builds', 'deployments', 'pods'])],
    false,
    [r(['v1'], ['update'], ['pods'])],
  ],
  [
    'APIGroupStarCoveringMultiple',
    [r(['*'], ['get'], ['roles'])],
    [r(['group1', 'group2'], ['get'], ['roles'])],
    true,
    [],
  ],
  [
    'EnumerationNotCoveringAPIGroupStar',
    [r(['dummy-group'], ['get'], ['roles'])],
    [r(['*'], ['get'], ['roles'])],
    false,
    [r(['*'], ['get'], ['roles'])],
  ],
  ['APIGroupStarCoveringStar', [r(['*'], ['get'], ['roles'])], [r(['*'], ['get'], ['roles'])], true, []],
  [
    'VerbStarCoveringMultiple',
    [r(['v1'], ['*'], ['roles'])],
    [r(['v1'], ['watch', 'list'], ['roles'])],
    true,
    [],
  ],
  [
    'EnumerationNotCoveringVerbStar',
    [r(['v1'], ['get', 'list', 'watch', 'create', 'update', 'delete', 'exec'], ['roles'])],
    [r(['v1'], ['*'], ['roles'])],
    false,
    [r(['v1'], ['*'], ['roles'])],
  ],
  ['VerbStarCoveringStar', [r(['v1'], ['*'], ['roles'])], [r(['v1'], ['*'], ['roles'])], true, []],
  [
    'ResourceStarCoveringMultiple',
    [r(['v1'], ['get'], ['*'])],
    [r(['v1'], ['get'], ['resourcegroup:deployments'])],
    true,
    [],
  ],
  [
    'EnumerationNotCoveringResourceStar',
    [r(['v1'], ['get'], ['roles', 'resourcegroup:deployments'])],
    [r(['v1'], ['get'], ['*'])],
    false,
    [r(['v1'], ['get'], ['*'])],
  ],
  ['ResourceStarCoveringStar', [r(['v1'], ['get'], ['*'])], [r(['v1'], ['get'], ['*'])], true, []],
  [
    'ResourceNameEmptyCoveringMultiple',
    [r(['v1'], ['get'], ['pods'], [])],
    [r(['v1'], ['get'], ['pods'], ['foo', 'bar'])],
    true,
    [],
  ],
  [
    'EnumerationNotCoveringResourceNameEmpty',
    [r(['v1'], ['get'], ['pods'], ['foo', 'bar'])],
    [r(['v1'], ['get'], ['pods'], [])],
    false,
    [r(['v1'], ['get'], ['pods'])],
  ],
  ['NonResourceURLs', [u(['/apis'], ['*'])], [u(['/apis'], ['*'])], true, []],
  ['NonResourceURLsStar', [u(['*'], ['*'])], [u(['/apis', '/apis/v1', '/'], ['*'])], true, []],
  [
    'NonResourceURLsStarAfterPrefixDoesntCover',
    [u(['/apis/*'], ['*'])],
    [u(['/apis', '/apis/v1'], ['get'])],
    false,
    [u(['/apis'], ['get'])],
  ],
  [
    'NonResourceURLsStarAfterPrefix',
    [u(['/apis/*'], ['*'])],
    [u(['/apis/v1/foo', '/apis/v1'], ['get'])],
    true,
    [],
  ],
  [
    'NonResourceURLsWithOtherFields',
    [{ ...r(['v1'], ['get'], ['builds']), nonResourceURLs: ['/apis'] }],
    [{ ...r(['v1'], ['get'], ['builds']), nonResourceURLs: ['/apis'] }],
    true,
    [],
  ],
  [
    'NonResourceURLsWithOtherFieldsFailure',
    [r(['v1'], ['get'], ['builds'])],
    [{ ...r(['v1'], ['get'], ['builds']), nonResourceURLs: ['/apis'] }],
    false,
    [u(['/apis'], ['get'])],
  ],
];

test('TestCovers*', (t) => {
  const canonical = (rules: PolicyRule[]) =>
    rules.map((x) => JSON.stringify(x, Object.keys(x).sort())).sort();
  for (const [name, owner, servant, covered, uncovered] of coversCases) {
    const [ok, missing] = covers(owner, servant);
    t.is(ok, covered, name);
    t.deepEqual(canonical(missing), canonical(uncovered), name);
  }
});

test('TestNonResourceURLCovers', (t) => {
  const cases: [string, string, boolean][] = [
    ['*', '', true],
    ['*', '/', true],
    ['*', '/api', true],
    ['/*', '', false],
    ['/*', '/', true],
    ['/*', '/foo', true],
    ['/api', '/api', true],
    ['/apis', '/api', false],
    ['/api/v1', '/api', false],
    ['/api/v1', '/api/v1', true],
    ['/api/*', '/api/v1', true],
    ['/api/*', '/api', false],
    ['/api/*/*', '/api/v1', false],
    ['/*/v1/*', '/api/v1', false],
  ];
  for (const [owner, requested, want] of cases)
    t.is(nonResourceURLCovers(owner, requested), want, `${owner} ${requested}`);
});

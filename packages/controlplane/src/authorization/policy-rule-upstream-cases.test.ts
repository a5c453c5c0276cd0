/**
 * Upstream's TestResourceMatches (pkg/apis/rbac/helpers_test.go), as data: how a rule's resources match
 * `resource/subresource`, including a star for any resource before the subresource, and subresources with slashes.
 */
import test from 'ava';
import { resourceMatches } from './policy-rule.js';

/** [name, rule resources, combined requested resource, requested subresource, expected] */
const cases: [string, string[], string, string, boolean][] = [
  ['all matches 01', ['*'], 'foo', '', true],
  ['checks all rules', ["doesn't match", '*'], 'foo', '', true],
  ['matches exact rule', ['foo/bar'], 'foo/bar', 'bar', true],
  ['matches exact rule 02', ['foo/bar'], 'foo', '', false],
  ['matches subresource', ['*/scale'], 'foo/scale', 'scale', true],
  [
    "doesn't match partial subresource hit",
    ['foo/bar', '*/other'],
    'foo/other/segment',
    'other/segment',
    false,
  ],
  [
    'matches subresource with multiple slashes',
    ['*/other/segment'],
    'foo/other/segment',
    'other/segment',
    true,
  ],
  ["doesn't fail on empty", [''], 'foo/other/segment', 'other/segment', false],
  ["doesn't fail on slash", ['/'], 'foo/other/segment', 'other/segment', false],
  ["doesn't fail on missing subresource", ['*/'], 'foo/other/segment', 'other/segment', false],
  ["doesn't match on not star", ['*something/other/segment'], 'foo/other/segment', 'other/segment', false],
  [
    "doesn't match on something else",
    ['something/other/segment'],
    'foo/other/segment',
    'other/segment',
    false,
  ],
];

test('TestResourceMatches', (t) => {
  for (const [name, resources, combined, subresource, expected] of cases)
    t.is(resourceMatches({ verbs: [], resources }, combined, subresource), expected, name);
});

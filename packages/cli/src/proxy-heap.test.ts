import { execFileSync } from 'node:child_process';
import test from 'ava';
import { holdYoungGeneration } from './proxy-heap.js';

// Allocates 300,000 surviving objects (what grows V8's young generation to its maximum) and prints the
// young generation's size before and after, in a process of its own: the flag is process-wide.
const probe = (hold: boolean) => `
  import { getHeapSpaceStatistics } from 'node:v8';
  import { holdYoungGeneration } from ${JSON.stringify(new URL('./proxy-heap.js', import.meta.url).href)};
  const young = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
  ${hold ? 'holdYoungGeneration([], "");' : ''}
  const before = young();
  const keep = [];
  for (let i = 0; i < 300000; i++) keep.push({ i, text: 'x' + i, pair: [i, i + 1] });
  console.log(JSON.stringify({ before, after: young(), kept: keep.length }));
`;
const run = (hold: boolean) =>
  JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', probe(hold)], { encoding: 'utf8' }),
  ) as { before: number; after: number };

test('the young generation keeps its starting size once held; without it, V8 grows it', (t) => {
  // Its size counts the second semi-space once the first scavenge has used it: at most 2 × at start.
  const held = run(true);
  t.true(held.after <= 2 * held.before, JSON.stringify(held));
  const grown = run(false);
  t.true(grown.after >= 8 * grown.before, JSON.stringify(grown));
});

test("an operator's own semi-space flag wins: nothing is changed", (t) => {
  t.false(holdYoungGeneration(['--max-semi-space-size=4'], ''));
  t.false(holdYoungGeneration([], '--trace-gc --semi-space-growth-factor=4'));
  t.false(holdYoungGeneration([], '--min_semi_space_size=2'));
});

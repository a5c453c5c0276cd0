import test from 'ava';
import type { ChangeSet, ServicePortState } from '../state.js';
import { bulkTracker } from '../testing/index.js';
import { AppliedPorts } from './applied-state.js';
import { changedChains } from './chain-diff.js';
import { type Body, bodyLayout, type PortPlan } from './rule-body.js';
import { droppedChains, staleAfterPartial, unusedAmong } from './stale.js';
import { CHUNK_BYTES, OutputStream, paced } from './streaming.js';
import { TextArena } from './text-arena.js';

/**
 * A toy backend: per port a chain `S-<name>` dispatching to one chain per endpoint `E-<ip>`, and for
 * each endpoint an affinity set `A-<ip>` declared (as a preamble) just before its chain.
 */
function plan(p: ServicePortState): PortPlan {
  const eps = p.allReachableEndpoints.map((ep) => ep.ip);
  return {
    port: p,
    chains: [...eps.map((ip) => `E-${ip}`), `S-${p.name}`],
    sets: eps.map((ip) => `A-${ip}`),
  };
}

function write(plan: PortPlan, arena: TextArena, timeout = 10): Body {
  const n = plan.chains.length;
  const layout = bodyLayout(n, true);
  const eps = plan.port.allReachableEndpoints;
  let rules = 0;
  arena.begin();
  for (let i = 0; i < n; i++) {
    layout[i] = arena.written;
    if (i < eps.length) arena.line(`set A-${eps[i]!.ip} timeout ${timeout}`);
    layout[2 * n + 1 + i] = arena.written - layout[i]!;
    arena.line(`chain ${plan.chains[i]}`);
    const lines = i < eps.length ? [`dnat ${eps[i]!.endpoint}`] : eps.map((ep) => `jump E-${ep.ip}`);
    for (const l of lines) arena.line(`  ${l}`);
    layout[n + 1 + i] = lines.length;
    rules += lines.length;
  }
  layout[n] = arena.written;
  return { span: arena.end(rules), layout };
}

const text = (s: { block: Buffer; start: number; end: number }) => s.block.toString('utf8', s.start, s.end);

const changes = (updated: string[], removed: string[] = []): ChangeSet => ({
  services: new Set(),
  updated: new Set(updated),
  removed: new Set(removed),
});

test('a render is full until one is applied, after a reset, and for a new node when the backend says so', (t) => {
  const { state } = bulkTracker(2, 2).commit();
  const context = { node: state.node, variant: false };
  const strict = new AppliedPorts<PortPlan, true>(true);
  t.true(strict.begin(false, context).full, 'nothing applied yet');
  strict.startFull();
  strict.applied(true);
  t.deepEqual(strict.begin(false, context), { full: false, sameContext: true });
  t.true(
    strict.begin(false, { ...context, variant: true }).full,
    'rules of another variant are all rewritten',
  );
  strict.applied(true);
  strict.reset();
  t.true(strict.begin(false, { ...context, variant: true }).full, 'a reset makes the next render full');

  const lenient = new AppliedPorts<PortPlan, true>(false);
  lenient.begin(true, context);
  lenient.applied(true);
  const moved = { node: { ...state.node }, variant: false };
  t.deepEqual(lenient.begin(false, moved), { full: false, sameContext: false });
  t.is(
    lenient.appliedContext,
    context,
    'applied rules are rendered again for the node they were written for',
  );
});

test('changedChains: only chains whose rules differ, with their preamble; whether each exists', (t) => {
  const tracker = bulkTracker(1, 2);
  const before = tracker.commit().state.servicePorts.values().next().value!;
  const appliedPlan = plan(before);
  const applied = new Map([[before.name, appliedPlan]]);
  // Same endpoints, another set timeout: the preamble differs, the rules do not — nothing to write.
  const same = changedChains([plan(before)], [write(plan(before), new TextArena(), 99)], applied, (p, a) =>
    write(p, a),
  );
  t.deepEqual(same.names, []);

  // One endpoint replaced: its chain is new, the service chain's rules changed, the other endpoint's did not.
  const after = {
    ...before,
    allReachableEndpoints: [
      before.allReachableEndpoints[0]!,
      { ...before.allReachableEndpoints[1]!, ip: '10.9.9.9', endpoint: '10.9.9.9:8080' },
    ],
  };
  const changed = changedChains([plan(after)], [write(plan(after), new TextArena())], applied, (p, a) =>
    write(p, a),
  );
  t.deepEqual(changed.names, ['E-10.9.9.9', `S-${before.name}`]);
  t.deepEqual(changed.existed, [false, true]);
  t.is(text(changed.texts[0]!), 'set A-10.9.9.9 timeout 10\nchain E-10.9.9.9\n  dnat 10.9.9.9:8080\n');
  t.is(changed.texts[1]!.lines, 2);

  const now = new Map([[before.name, plan(after)]]);
  const stale = staleAfterPartial(changes([before.name]), applied, now);
  t.deepEqual([...stale.chains], [`E-${before.allReachableEndpoints[1]!.ip}`]);
  t.deepEqual([...stale.sets], [`A-${before.allReachableEndpoints[1]!.ip}`]);
  t.deepEqual(
    [...staleAfterPartial(changes([], [before.name]), applied, new Map()).chains],
    appliedPlan.chains,
    'a removed port leaves every chain it had',
  );
});

test('after a full render: what the kernel has or applied plans held, and no plan uses, is stale', (t) => {
  const { state } = bulkTracker(3, 1).commit();
  const plans = new Map([...state.servicePorts.values()].map((p) => [p.name, plan(p)]));
  const applied = new Map(plans);
  const [first, second] = [...plans.keys()];
  const now = new Map(plans);
  now.delete(first!); // removed
  now.set(second!, { ...plans.get(second!)! }); // planned anew: its chains may still be used
  const dropped = droppedChains(applied, now);
  t.deepEqual(dropped, [...plans.get(first!)!.chains, ...plans.get(second!)!.chains]);
  const stale = unusedAmong(['E-gone', ...dropped], now.values(), 'chains');
  t.deepEqual([...stale], ['E-gone', ...plans.get(first!)!.chains]);
  t.is(unusedAmong([], now.values(), 'chains').size, 0);
});

test('paced writes a chunk at a time; in whole-chunk mode the remainder waits for what follows', (t) => {
  const lines = Array.from({ length: 3000 }, (_, i) => `line ${i} `.padEnd(60, '.'));
  for (const whole of [false, true]) {
    const stream = new OutputStream();
    const sizes: number[] = [];
    for (const chunks of paced(lines, (l) => stream.out.line(l), stream, whole)) {
      sizes.push(chunks.reduce((n, c) => n + c.length, 0));
    }
    stream.out.line('the end');
    sizes.push(stream.take().reduce((n, c) => n + c.length, 0));
    for (const s of sizes.slice(0, 2)) t.true(s >= CHUNK_BYTES && s < CHUNK_BYTES + 61, `${s}`);
    t.is(
      sizes.length,
      whole ? 3 : 4,
      whole ? 'the tail joins the last piece' : 'the tail is a piece of its own',
    );
    t.is(stream.finish().text, lines.map((l) => `${l}\n`).join('') + 'the end\n');
  }
});

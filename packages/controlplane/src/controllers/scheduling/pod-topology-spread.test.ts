import test from 'ava';
import { podTopologySpreadFilter as plugin, podTopologySpreadScore } from './pod-topology-spread.js';
import { cycle, filterAll, fits, makeNode, makePod, scoreAll } from './test-scheduling.js';

// Upstream's TestSingleConstraint / TestMultipleConstraints cases (podtopologyspread/filtering_test.go).

const exists = (key: string) => ({ matchExpressions: [{ key, operator: 'Exists' }] });

function constraint(maxSkew: number, topologyKey: string, labelSelector: object, extra: object = {}) {
  return { maxSkew, topologyKey, whenUnsatisfiable: 'DoNotSchedule', labelSelector, ...extra };
}

function spreadPod(labels: Record<string, string>, constraints: object[], spec: object = {}) {
  return makePod('p', { labels, spec: { topologySpreadConstraints: constraints, ...spec } });
}

const nodes = [
  makeNode('node-a', { zone: 'zone1', node: 'node-a' }),
  makeNode('node-b', { zone: 'zone1', node: 'node-b' }),
  makeNode('node-x', { zone: 'zone2', node: 'node-x' }),
  makeNode('node-y', { zone: 'zone2', node: 'node-y' }),
];

/** `counts` pods labelled foo on node-a, node-b, node-x, node-y. */
function spread(counts: number[], labels: Record<string, string> = { foo: '' }, ns = 'default') {
  return counts.flatMap((n, i) =>
    Array.from({ length: n }, (_, j) =>
      makePod(`p-${i}-${j}`, { ns, node: nodes[i]!.metadata.name, labels }),
    ),
  );
}

const fooPod = (maxSkew: number, key: string) =>
  spreadPod({ foo: '' }, [constraint(maxSkew, key, exists('foo'))]);

const single = [
  { name: 'no existing pods', pod: fooPod(1, 'zone'), pods: [], fits: [true, true, true, true] },
  {
    name: "no existing pods, incoming pod doesn't match itself",
    pod: spreadPod({ foo: '' }, [constraint(1, 'zone', exists('bar'))]),
    pods: [],
    fits: [true, true, true, true],
  },
  {
    name: "existing pods with mis-matched namespace doesn't count",
    pod: fooPod(1, 'zone'),
    pods: [
      ...spread([1, 0, 0, 0], { foo: '' }, 'ns1'),
      ...spread([1, 0, 0, 0], { foo: '' }, 'ns2'),
      ...spread([0, 0, 1, 1]),
    ],
    fits: [true, true, false, false],
  },
  {
    name: 'pods spread across zones as 3/3, all nodes fit',
    pod: fooPod(1, 'zone'),
    pods: spread([2, 1, 0, 3]),
    fits: [true, true, true, true],
  },
  {
    name: 'pods spread across nodes as 2/1/0/3, only node-x fits',
    pod: fooPod(1, 'node'),
    pods: spread([2, 1, 0, 3]),
    fits: [false, false, true, false],
  },
  {
    name: 'pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit',
    pod: fooPod(2, 'node'),
    pods: spread([2, 1, 0, 3]),
    fits: [false, true, true, false],
  },
  {
    name: "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
    pod: spreadPod({ bar: '' }, [constraint(1, 'node', exists('foo'))]),
    pods: spread([2, 1, 0, 3]),
    fits: [false, true, true, false],
  },
  {
    name: 'incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits',
    pod: spreadPod({ foo: '' }, [constraint(1, 'node', exists('foo'))], {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'node', operator: 'In', values: ['node-a', 'node-y'] }] },
            ],
          },
        },
      },
    }),
    pods: spread([2, 1, 0, 3]),
    fits: [true, true, true, false], // node-b and node-x fail NodeAffinity in a real cycle
  },
  {
    name: 'two constraints on zone and node, spreads = [3/3, 2/1/0/3]',
    pod: spreadPod({ foo: '' }, [constraint(1, 'zone', exists('foo')), constraint(1, 'node', exists('foo'))]),
    pods: spread([2, 1, 0, 3]),
    fits: [false, false, true, false],
  },
  {
    name: 'two constraints on zone and node, spreads = [3/4, 2/1/0/4]',
    pod: spreadPod({ foo: '' }, [constraint(1, 'zone', exists('foo')), constraint(1, 'node', exists('foo'))]),
    pods: spread([2, 1, 0, 4]),
    fits: [false, false, false, false],
  },
  {
    name: 'constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]',
    pod: spreadPod({ foo: '', bar: '' }, [
      constraint(1, 'zone', exists('foo')),
      constraint(1, 'node', exists('bar')),
    ]),
    pods: [...spread([1, 0, 0, 0]), ...spread([0, 0, 0, 1], { bar: '' })],
    fits: [false, false, true, false],
  },
];

for (const c of single) {
  test(`PodTopologySpread: ${c.name}`, (t) => {
    const r = fits(plugin, cycle(c.pod, nodes, c.pods));
    t.deepEqual(Object.values(r), c.fits);
  });
}

test("PodTopologySpread: a node without the topology key fails with upstream's reason", (t) => {
  const bare = [...nodes.slice(0, 1), makeNode('node-b', { zon: 'zone1', node: 'node-b' })];
  const r = filterAll(plugin, cycle(fooPod(1, 'zone'), bare, spread([1, 1, 0, 0])));
  t.deepEqual(r['node-b'], ["node(s) didn't match pod topology spread constraints (missing required label)"]);
  t.deepEqual(filterAll(plugin, cycle(fooPod(1, 'node'), nodes, spread([1, 0, 0, 0])))['node-a'], [
    "node(s) didn't match pod topology spread constraints",
  ]);
});

test('PodTopologySpread: minDomains — fewer eligible domains than minDomains make the global minimum 0', (t) => {
  const zoneNodes = nodes.filter((n) => n.metadata.labels!.zone === 'zone1' || n.metadata.name === 'node-x');
  const pod = spreadPod({ foo: '' }, [constraint(1, 'zone', exists('foo'), { minDomains: 3 })]);
  // zone1 holds 1, zone2 holds 1: with 2 < 3 domains the minimum is 0, so 1 + 1 - 0 > 1 everywhere.
  t.deepEqual(Object.values(fits(plugin, cycle(pod, zoneNodes, spread([1, 0, 1, 0])))), [
    false,
    false,
    false,
  ]);
  const two = spreadPod({ foo: '' }, [constraint(1, 'zone', exists('foo'), { minDomains: 2 })]);
  t.deepEqual(Object.values(fits(plugin, cycle(two, zoneNodes, spread([1, 0, 1, 0])))), [true, true, true]);
});

test('PodTopologySpread: nodeTaintsPolicy Honor leaves out the domains of nodes the pod does not tolerate', (t) => {
  const tainted = [
    ...nodes.slice(0, 3),
    makeNode(
      'node-y',
      { zone: 'zone2', node: 'node-y' },
      { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] },
    ),
  ];
  const ignore = spreadPod({ foo: '' }, [constraint(1, 'node', exists('foo'))]);
  const honor = spreadPod({ foo: '' }, [constraint(1, 'node', exists('foo'), { nodeTaintsPolicy: 'Honor' })]);
  // 1/1/1/0: by default node-y's 0 is the minimum; honouring its taint, the minimum is 1.
  t.deepEqual(Object.values(fits(plugin, cycle(ignore, tainted, spread([1, 1, 1, 0])))), [
    false,
    false,
    false,
    true,
  ]);
  t.deepEqual(Object.values(fits(plugin, cycle(honor, tainted, spread([1, 1, 1, 0])))), [
    true,
    true,
    true,
    true,
  ]);
});

test('PodTopologySpread score: ScheduleAnyway prefers the domain with the fewest matching pods', (t) => {
  const pod = spreadPod({ foo: '' }, [
    { ...constraint(1, 'node', exists('foo')), whenUnsatisfiable: 'ScheduleAnyway' },
  ]);
  const r = scoreAll(podTopologySpreadScore, cycle(pod, nodes, spread([2, 1, 0, 3])));
  t.true(r['node-x']! === 100, 'the empty node scores highest');
  t.true(r['node-b']! > r['node-a']! && r['node-a']! > r['node-y']!, JSON.stringify(r));
  t.deepEqual(
    fits(plugin, cycle(pod, nodes, spread([2, 1, 0, 3]))),
    {
      'node-a': true,
      'node-b': true,
      'node-x': true,
      'node-y': true,
    },
    'a soft constraint never filters',
  );
});

test('PodTopologySpread score: a pod without constraints spreads by the system defaults over its owners’ selector', (t) => {
  const hosts = ['h1', 'h2', 'h3'].map((n) => makeNode(n, { 'kubernetes.io/hostname': n }));
  const placed = [
    makePod('w1', { node: 'h1', labels: { app: 'web' } }),
    makePod('w2', { node: 'h1', labels: { app: 'web' } }),
    makePod('w3', { node: 'h2', labels: { app: 'web' } }),
    makePod('other', { node: 'h3', labels: { app: 'db' } }),
  ];
  const ctx = cycle(makePod('p', { labels: { app: 'web' } }), hosts, placed);
  const scored = scoreAll(podTopologySpreadScore, {
    ...ctx,
    defaultSpreadSelector: () => [{ key: 'app', op: '=', values: ['web'] }],
  });
  t.true(scored.h3! > scored.h2! && scored.h2! > scored.h1!, JSON.stringify(scored));
  t.deepEqual(
    scoreAll(podTopologySpreadScore, cycle(makePod('p', { labels: { app: 'web' } }), hosts, placed)),
    {
      h1: 0,
      h2: 0,
      h3: 0,
    },
    'no Service or ReplicaSet selects it: no default spreading',
  );
});

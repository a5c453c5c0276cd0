import test from 'ava';
import { interPodAffinityFilter as plugin, interPodAffinityScore } from './inter-pod-affinity.js';
import { cycle, filterAll, makeNode, makePod, requiredAffinity, scoreAll, term } from './test-scheduling.js';

// Upstream's TestRequiredAffinitySingleNode cases (interpodaffinity/filtering_test.go), as data.

const node1 = makeNode('node1', { region: 'r1', zone: 'z11' });
const podLabel = { service: 'securityscan' };
const podLabel2 = { security: 'S1' };
const existing = makePod('existing', { node: 'node1', labels: podLabel });
const affinityRules = "node(s) didn't match pod affinity rules";
const antiAffinityRules = "node(s) didn't match pod anti-affinity rules";
const existingAnti = "node(s) didn't satisfy existing pods anti-affinity rules";

/** A placed securityscan pod with anti-affinity to securityscan pods in its zone. */
const existingWithAntiAffinity = makePod('e', {
  node: 'node1',
  labels: podLabel,
  spec: requiredAffinity([], [term('service', 'In', 'zone', ['securityscan', 'value2'])]),
});

/** Upstream's PodAffinityIn("service", "region", [securityscan, value2]) plus one anti-affinity term. */
const affinityAnd = (labels: Record<string, string>, anti: object) =>
  makePod('p', {
    labels,
    spec: requiredAffinity([term('service', 'In', 'region', ['securityscan', 'value2'])], [anti]),
  });

const singleNode: {
  name: string;
  pod: ReturnType<typeof makePod>;
  pods?: ReturnType<typeof makePod>[];
  want: string[];
}[] = [
  {
    name: 'A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods',
    pod: makePod('p'),
    want: [],
  },
  {
    name: 'satisfies with required PodAffinity using In operator that matches the existing pod',
    pod: makePod('p', {
      labels: podLabel2,
      spec: requiredAffinity([term('service', 'In', 'region', ['securityscan', 'value2'])]),
    }),
    pods: [existing],
    want: [],
  },
  {
    name: 'satisfies the pod with required PodAffinity using NotIn operator in labelSelector that matches the existing pod',
    pod: makePod('p', {
      labels: podLabel2,
      spec: requiredAffinity([term('service', 'NotIn', 'region', ['securityscan3', 'value3'])]),
    }),
    pods: [existing],
    want: [],
  },
  {
    name: 'Does not satisfy the PodAffinity with labelSelector because of diff Namespace',
    pod: makePod('p', {
      labels: podLabel2,
      spec: requiredAffinity([
        term('service', 'In', 'region', ['securityscan', 'value2'], { namespaces: ['DiffNameSpace'] }),
      ]),
    }),
    pods: [makePod('e', { ns: 'ns', node: 'node1', labels: podLabel })],
    want: [affinityRules],
  },
  {
    name: "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
    pod: makePod('p', {
      labels: podLabel,
      spec: requiredAffinity([term('service', 'In', 'region', ['antivirusscan', 'value2'])]),
    }),
    pods: [existing],
    want: [affinityRules],
  },
  {
    name: 'satisfies the PodAffinity and PodAntiAffinity with the existing pod',
    pod: affinityAnd(podLabel2, term('service', 'In', 'node', ['antivirusscan', 'value2'])),
    pods: [existing],
    want: [],
  },
  {
    name: "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
    pod: affinityAnd(podLabel2, term('service', 'In', 'zone', ['securityscan', 'value2'])),
    pods: [existing],
    want: [antiAffinityRules],
  },
  {
    name: "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
    pod: affinityAnd(podLabel, term('service', 'In', 'node', ['antivirusscan', 'value2'])),
    pods: [existingWithAntiAffinity],
    want: [existingAnti],
  },
  {
    name: 'pod matches its own Label in PodAffinity and that matches the existing pod Labels',
    pod: makePod('p', {
      labels: podLabel,
      spec: requiredAffinity([term('service', 'NotIn', 'region', ['securityscan', 'value2'])]),
    }),
    pods: [makePod('e', { node: 'node2', labels: podLabel })],
    want: [affinityRules],
  },
  {
    name: 'verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints',
    pod: makePod('p', { labels: podLabel }),
    pods: [existingWithAntiAffinity],
    want: [existingAnti],
  },
  {
    name: "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
    pod: makePod('p', {
      labels: podLabel,
      spec: requiredAffinity([], [term('service', 'Exists', 'region'), term('security', 'Exists', 'region')]),
    }),
    pods: [
      makePod('e', {
        node: 'node1',
        labels: podLabel2,
        spec: requiredAffinity([], [term('security', 'Exists', 'zone')]),
      }),
    ],
    want: [antiAffinityRules],
  },
  {
    name: 'PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms',
    pod: makePod('p', {
      labels: podLabel2,
      spec: requiredAffinity([], [term('security', 'Exists', 'zone')]),
    }),
    pods: [
      makePod('e', {
        node: 'node1',
        labels: podLabel,
        spec: requiredAffinity([], [term('service', 'Exists', 'zone'), term('security', 'Exists', 'zone')]),
      }),
    ],
    want: [existingAnti],
  },
];

for (const c of singleNode) {
  test(`InterPodAffinity: ${c.name}`, (t) => {
    t.deepEqual(filterAll(plugin, cycle(c.pod, [node1], c.pods ?? [])).node1, c.want);
  });
}

const nodes = [
  makeNode('machine1', { region: 'r1', zone: 'z11', 'kubernetes.io/hostname': 'machine1' }),
  makeNode('machine2', { region: 'r1', zone: 'z12', 'kubernetes.io/hostname': 'machine2' }),
  makeNode('machine3', { region: 'r2', zone: 'z21', 'kubernetes.io/hostname': 'machine3' }),
];

test('InterPodAffinity: affinity admits every node of the domain that holds a matching pod', (t) => {
  const pod = makePod('p', { spec: requiredAffinity([term('foo', 'In', 'region', ['bar'])]) });
  const r = filterAll(
    plugin,
    cycle(pod, nodes, [makePod('e', { node: 'machine1', labels: { foo: 'bar' } })]),
  );
  t.deepEqual(r, { machine1: [], machine2: [], machine3: [affinityRules] });
});

test('InterPodAffinity: the first pod of a group with affinity to itself may go anywhere', (t) => {
  const pod = makePod('p', {
    labels: { app: 'db' },
    spec: requiredAffinity([term('app', 'In', 'zone', ['db'])]),
  });
  const r = filterAll(plugin, cycle(pod, nodes));
  t.deepEqual(r, { machine1: [], machine2: [], machine3: [] });
  const stranger = makePod('q', {
    labels: { app: 'web' },
    spec: requiredAffinity([term('app', 'In', 'zone', ['db'])]),
  });
  t.deepEqual(
    filterAll(plugin, cycle(stranger, nodes)).machine1,
    [affinityRules],
    'unless it does not match its own terms',
  );
});

test('InterPodAffinity: anti-affinity on kubernetes.io/hostname keeps replicas on distinct nodes', (t) => {
  const spec = requiredAffinity([], [term('app', 'In', 'kubernetes.io/hostname', ['web'])]);
  const placed = ['machine1', 'machine3'].map((n, i) =>
    makePod(`web-${i}`, { node: n, labels: { app: 'web' }, spec }),
  );
  const r = filterAll(plugin, cycle(makePod('web-2', { labels: { app: 'web' }, spec }), nodes, placed));
  t.deepEqual(r, { machine1: [antiAffinityRules], machine2: [], machine3: [antiAffinityRules] });
});

test('InterPodAffinity: namespaceSelector selects the namespaces by label; {} selects all', (t) => {
  const placed = [makePod('e', { ns: 'team-a', node: 'machine1', labels: { app: 'cache' } })];
  const nsLabels = { 'team-a': { team: 'a' }, default: {} };
  const by = (namespaceSelector: object) =>
    filterAll(
      plugin,
      cycle(
        makePod('p', {
          spec: requiredAffinity([term('app', 'In', 'zone', ['cache'], { namespaceSelector })]),
        }),
        nodes,
        placed,
        nsLabels,
      ),
    );
  t.deepEqual(by({ matchLabels: { team: 'a' } }).machine1, []);
  t.deepEqual(by({ matchLabels: { team: 'b' } }).machine1, [affinityRules]);
  t.deepEqual(by({}).machine1, []);
});

test('InterPodAffinity: matchLabelKeys narrow the selector to the pod’s own value (one revision apart)', (t) => {
  const spec = requiredAffinity(
    [],
    [term('app', 'In', 'kubernetes.io/hostname', ['web'], { matchLabelKeys: ['pod-template-hash'] })],
  );
  const old = makePod('old', { node: 'machine1', labels: { app: 'web', 'pod-template-hash': 'v1' } });
  const next = makePod('new', { labels: { app: 'web', 'pod-template-hash': 'v2' }, spec });
  t.deepEqual(filterAll(plugin, cycle(next, nodes, [old])).machine1, [], 'another revision does not count');
  const same = makePod('same', { labels: { app: 'web', 'pod-template-hash': 'v1' }, spec });
  t.deepEqual(filterAll(plugin, cycle(same, nodes, [old])).machine1, [antiAffinityRules]);
});

test('InterPodAffinity score: preferred affinity pulls to the matching domain, preferred anti-affinity pushes away', (t) => {
  const preferred = (kind: string, weight: number) => ({
    affinity: {
      [kind]: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight, podAffinityTerm: term('security', 'In', 'region', ['S1']) },
        ],
      },
    },
  });
  const placed = [makePod('e', { node: 'machine1', labels: podLabel2 })];
  t.deepEqual(
    scoreAll(
      interPodAffinityScore,
      cycle(makePod('p', { spec: preferred('podAffinity', 5) }), nodes, placed),
    ),
    {
      machine1: 100,
      machine2: 100,
      machine3: 0,
    },
  );
  t.deepEqual(
    scoreAll(
      interPodAffinityScore,
      cycle(makePod('p', { spec: preferred('podAntiAffinity', 5) }), nodes, placed),
    ),
    {
      machine1: 0,
      machine2: 0,
      machine3: 100,
    },
  );
  t.deepEqual(scoreAll(interPodAffinityScore, cycle(makePod('p'), nodes, placed)), {
    machine1: 0,
    machine2: 0,
    machine3: 0,
  });
});

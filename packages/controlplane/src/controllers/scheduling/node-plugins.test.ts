import test from 'ava';
import { schedulePod, unschedulableMessage } from './framework.js';
import { defaultProfile } from './default-profile.js';
import { nodeAffinityFilter, nodeAffinityScore } from './node-affinity.js';
import { nodeName } from './node-name.js';
import { nodePorts } from './node-ports.js';
import { nodeResourcesFitFilter, nodeResourcesFitScore } from './node-resources-fit.js';
import { nodeUnschedulable } from './node-unschedulable.js';
import { taintTolerationFilter, taintTolerationScore } from './taint-toleration.js';
import { cycle, filterAll, makeNode, makePod, scoreAll } from './test-scheduling.js';

// The node-level plugins with upstream's test cases (nodeunschedulable, nodename, tainttoleration,
// nodeaffinity, nodeports, noderesources tests), as data.

test('NodeUnschedulable: a cordoned node takes only pods that tolerate node.kubernetes.io/unschedulable', (t) => {
  const cordoned = makeNode('n', {}, { unschedulable: true });
  t.deepEqual(filterAll(nodeUnschedulable, cycle(makePod('p'), [cordoned])).n, [
    'node(s) were unschedulable',
  ]);
  t.deepEqual(filterAll(nodeUnschedulable, cycle(makePod('p'), [makeNode('n')])).n, []);
  const tolerating = makePod('p', {
    spec: {
      tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }],
    },
  });
  t.deepEqual(filterAll(nodeUnschedulable, cycle(tolerating, [cordoned])).n, []);
});

test('NodeName: a pod naming a node fits that node only', (t) => {
  const nodes = [makeNode('foo'), makeNode('bar')];
  t.deepEqual(filterAll(nodeName, cycle(makePod('p'), nodes)), { bar: [], foo: [] });
  t.deepEqual(filterAll(nodeName, cycle(makePod('p', { spec: { nodeName: 'foo' } }), nodes)), {
    bar: ["node(s) didn't match the requested node name"],
    foo: [],
  });
});

const taint = (key: string, value: string, effect: string) => ({ key, value, effect });
const taintCases = [
  {
    name: "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
    tolerations: [],
    taints: [taint('dedicated', 'user1', 'NoSchedule')],
    want: ['node(s) had untolerated taint {dedicated: user1}'],
  },
  {
    name: 'A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule',
    tolerations: [{ key: 'dedicated', value: 'user1', effect: 'NoSchedule' }],
    taints: [taint('dedicated', 'user1', 'NoSchedule')],
    want: [],
  },
  {
    name: "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'user2', effect: 'NoSchedule' }],
    taints: [taint('dedicated', 'user1', 'NoSchedule')],
    want: ['node(s) had untolerated taint {dedicated: user1}'],
  },
  {
    name: 'A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node',
    tolerations: [{ key: 'foo', operator: 'Exists', effect: 'NoSchedule' }],
    taints: [taint('foo', 'bar', 'NoSchedule')],
    want: [],
  },
  {
    name: "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, can't be scheduled onto the node",
    tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'PreferNoSchedule' }],
    taints: [taint('foo', 'bar', 'NoSchedule')],
    want: ['node(s) had untolerated taint {foo: bar}'],
  },
  {
    name: 'The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node',
    tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar' }],
    taints: [taint('foo', 'bar', 'NoSchedule')],
    want: [],
  },
  {
    name: "The pod has a toleration that key and value don't match the taint on the node, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'user2', effect: 'NoSchedule' }],
    taints: [taint('dedicated', 'user1', 'PreferNoSchedule')],
    want: [],
  },
];
for (const c of taintCases) {
  test(`TaintToleration: ${c.name}`, (t) => {
    const pod = makePod('p', { spec: { tolerations: c.tolerations } });
    t.deepEqual(
      filterAll(taintTolerationFilter, cycle(pod, [makeNode('n', {}, { taints: c.taints })])).n,
      c.want,
    );
  });
}

test('TaintToleration: a node that is not Ready counts as tainted node.kubernetes.io/not-ready', (t) => {
  const notReady = makeNode('n', {}, {}, { conditions: [{ type: 'Ready', status: 'False' }] });
  t.deepEqual(filterAll(taintTolerationFilter, cycle(makePod('p'), [notReady])).n, [
    'node(s) had untolerated taint {node.kubernetes.io/not-ready: }',
  ]);
});

test('TaintToleration score: the more intolerable PreferNoSchedule taints a node has, the lower it scores', (t) => {
  const prefer = (key: string) => taint(key, 'v', 'PreferNoSchedule');
  const nodes = [
    makeNode('nodeA', {}, {}),
    makeNode('nodeB', {}, { taints: [prefer('cpu-type')] }),
    makeNode('nodeC', {}, { taints: [prefer('cpu-type'), prefer('disk-type')] }),
  ];
  t.deepEqual(scoreAll(taintTolerationScore, cycle(makePod('p'), nodes)), {
    nodeA: 100,
    nodeB: 50,
    nodeC: 0,
  });
  const tolerating = makePod('p', { spec: { tolerations: [{ key: 'cpu-type', operator: 'Exists' }] } });
  t.deepEqual(scoreAll(taintTolerationScore, cycle(tolerating, nodes)), { nodeA: 100, nodeB: 100, nodeC: 0 });
});

const affinity = (required?: object[], preferred?: object[]) => ({
  affinity: {
    nodeAffinity: {
      ...(required
        ? { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: required } }
        : {}),
      ...(preferred ? { preferredDuringSchedulingIgnoredDuringExecution: preferred } : {}),
    },
  },
});
const expr = (key: string, operator: string, values?: string[]) => ({
  key,
  operator,
  ...(values ? { values } : {}),
});

test('NodeAffinity: nodeSelector and required terms (terms ORed, expressions ANDed, an empty term matches nothing)', (t) => {
  const node = makeNode('n', { foo: 'bar', gpu: '3' });
  const no = ["node(s) didn't match Pod's node affinity/selector"];
  const check = (spec: Record<string, unknown>) =>
    filterAll(nodeAffinityFilter, cycle(makePod('p', { spec }), [node])).n;
  t.deepEqual(check({ nodeSelector: { foo: 'bar' } }), []);
  t.deepEqual(check({ nodeSelector: { foo: 'baz' } }), no);
  t.deepEqual(check(affinity([{ matchExpressions: [expr('foo', 'In', ['bar', 'value2'])] }])), []);
  t.deepEqual(check(affinity([{ matchExpressions: [expr('gpu', 'Gt', ['2'])] }])), []);
  t.deepEqual(check(affinity([{ matchExpressions: [expr('gpu', 'Lt', ['2'])] }])), no);
  t.deepEqual(check(affinity([{ matchExpressions: [expr('kernel', 'DoesNotExist')] }])), []);
  t.deepEqual(
    check(affinity([{ matchExpressions: [expr('foo', 'Exists'), expr('foo', 'NotIn', ['bar'])] }])),
    no,
  );
  t.deepEqual(
    check(
      affinity([
        { matchExpressions: [expr('foo', 'In', ['x'])] },
        { matchFields: [expr('metadata.name', 'In', ['n'])] },
      ]),
    ),
    [],
  );
  t.deepEqual(check(affinity([{}])), no);
  t.deepEqual(check(affinity([])), [], 'no terms: no constraint');
});

test('NodeAffinity score: the weights of the preferred terms each node matches, scaled to the best', (t) => {
  const nodes = [
    makeNode('machine1', { foo: 'bar' }),
    makeNode('machine2', { key: 'value' }),
    makeNode('machine3', { foo: 'bar', key: 'value', az: 'az1' }),
  ];
  const preferred = [
    { weight: 2, preference: { matchExpressions: [expr('foo', 'In', ['bar'])] } },
    { weight: 4, preference: { matchExpressions: [expr('key', 'In', ['value'])] } },
    { weight: 2, preference: { matchExpressions: [expr('az', 'In', ['az1'])] } },
  ];
  t.deepEqual(
    scoreAll(nodeAffinityScore, cycle(makePod('p', { spec: affinity(undefined, preferred) }), nodes)),
    {
      machine1: 25,
      machine2: 50,
      machine3: 100,
    },
  );
  t.deepEqual(scoreAll(nodeAffinityScore, cycle(makePod('p'), nodes)), {
    machine1: 0,
    machine2: 0,
    machine3: 0,
  });
});

const port = (protocol: string, hostIP: string, hostPort: number) => ({
  containerPort: hostPort,
  protocol,
  hostIP,
  hostPort,
});
const portPod = (name: string, ports: object[], node?: string) =>
  makePod(name, { ...(node ? { node } : {}), spec: { containers: [{ name: 'c', image: 'i', ports }] } });
const portCases = [
  { name: 'nothing running', pod: [port('UDP', '127.0.0.1', 8080)], existing: [], fits: true },
  {
    name: 'other port',
    pod: [port('UDP', '127.0.0.1', 8080)],
    existing: [port('UDP', '127.0.0.1', 9090)],
    fits: true,
  },
  {
    name: 'same udp port',
    pod: [port('UDP', '127.0.0.1', 8080)],
    existing: [port('UDP', '127.0.0.1', 8080)],
    fits: false,
  },
  {
    name: 'same tcp port',
    pod: [port('TCP', '127.0.0.1', 8080)],
    existing: [port('TCP', '127.0.0.1', 8080)],
    fits: false,
  },
  {
    name: 'different host ip',
    pod: [port('TCP', '127.0.0.1', 8080)],
    existing: [port('TCP', '127.0.0.2', 8080)],
    fits: true,
  },
  {
    name: 'different protocol',
    pod: [port('UDP', '127.0.0.1', 8080)],
    existing: [port('TCP', '127.0.0.1', 8080)],
    fits: true,
  },
  {
    name: 'second udp port conflict',
    pod: [port('UDP', '127.0.0.1', 8000), port('UDP', '127.0.0.1', 8080)],
    existing: [port('UDP', '127.0.0.1', 8080)],
    fits: false,
  },
  {
    name: 'first tcp port conflict due to 0.0.0.0 hostIP',
    pod: [port('TCP', '0.0.0.0', 8001), port('UDP', '127.0.0.1', 8001)],
    existing: [port('TCP', '127.0.0.1', 8001)],
    fits: false,
  },
  {
    name: 'TCP hostPort conflict due to 0.0.0.0 hostIP',
    pod: [port('TCP', '10.0.10.10', 8001), port('TCP', '0.0.0.0', 8001)],
    existing: [port('TCP', '0.0.0.0', 8001)],
    fits: false,
  },
  {
    name: 'second different protocol',
    pod: [port('TCP', '0.0.0.0', 8001)],
    existing: [port('UDP', '0.0.0.0', 8001)],
    fits: true,
  },
  {
    name: 'UDP hostPort conflict due to 0.0.0.0 hostIP',
    pod: [port('UDP', '0.0.0.0', 8001)],
    existing: [port('TCP', '0.0.0.0', 8001), port('UDP', '0.0.0.0', 8001)],
    fits: false,
  },
];
for (const c of portCases) {
  test(`NodePorts: ${c.name}`, (t) => {
    const ctx = cycle(
      portPod('p', c.pod),
      [makeNode('n')],
      c.existing.length ? [portPod('e', c.existing, 'n')] : [],
    );
    t.deepEqual(
      filterAll(nodePorts, ctx).n,
      c.fits ? [] : ["node(s) didn't have free ports for the requested pod ports"],
    );
  });
}

const sized = (name: string, cpu: string, memory: string, pods = '110') =>
  makeNode(
    name,
    {},
    {},
    { conditions: [{ type: 'Ready', status: 'True' }], allocatable: { cpu, memory, pods } },
  );
const requesting = (name: string, cpu: string, memory: string, node?: string) =>
  makePod(name, {
    ...(node ? { node } : {}),
    spec: { containers: [{ name: 'c', image: 'i', resources: { requests: { cpu, memory } } }] },
  });

test('NodeResourcesFit: requests against what the placed pods leave; every insufficient resource is named', (t) => {
  const node = sized('n', '10m', '20', '3');
  const placed = [requesting('e', '5m', '19', 'n')];
  t.deepEqual(filterAll(nodeResourcesFitFilter, cycle(requesting('p', '1m', '1'), [node], placed)).n, []);
  t.deepEqual(filterAll(nodeResourcesFitFilter, cycle(requesting('p', '8m', '2'), [node], placed)).n, [
    'Insufficient cpu',
    'Insufficient memory',
  ]);
  const full = [0, 1, 2].map((i) => requesting(`e${i}`, '0', '0', 'n'));
  t.deepEqual(filterAll(nodeResourcesFitFilter, cycle(requesting('p', '0', '0'), [node], full)).n, [
    'Too many pods',
  ]);
});

test('NodeResourcesFit score (LeastAllocated): nothing scheduled, resources requested, differently sized nodes', (t) => {
  // Upstream scores these 37 and 50 in integers; nodelet keeps the fraction.
  const nodes = [sized('node1', '4', '10000'), sized('node2', '6', '10000')];
  t.deepEqual(scoreAll(nodeResourcesFitScore, cycle(requesting('p', '3', '5000'), nodes)), {
    node1: 37.5,
    node2: 50,
  });
});

test("the framework: the first failing filter gives a node's reasons; upstream's message sorts them with their counts", (t) => {
  const nodes = [
    makeNode('a', {}, { unschedulable: true, taints: [{ key: 'k', effect: 'NoSchedule' }] }),
    makeNode('b', {}, { taints: [{ key: 'k', effect: 'NoSchedule' }] }),
    makeNode('c', {}, { taints: [{ key: 'k', effect: 'NoSchedule' }] }),
  ];
  const decision = schedulePod(defaultProfile, cycle(makePod('p'), nodes));
  t.false('node' in decision);
  if ('node' in decision) return;
  t.is(
    unschedulableMessage(3, decision.reasons),
    '0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated taint {k: }.',
  );
  t.is(unschedulableMessage(0, new Map()), 'no nodes available to schedule pods');
});

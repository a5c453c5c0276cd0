import test from 'ava';
import type { Pod } from '@nodelet/api';
import { formatTable, humanDuration, podRow, printPodTable, sortPods } from './pod-printer.js';

const NOW = Date.parse('2026-01-01T12:00:00Z');
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString().replace('.000Z', 'Z');

test('humanDuration matches apimachinery HumanDuration', (t) => {
  const s = 1000;
  const m = 60 * s;
  const h = 60 * m;
  const d = 24 * h;
  const cases: Array<[number, string]> = [
    [-2500, '<invalid>'],
    [-1500, '0s'],
    [-999, '0s'],
    [0, '0s'],
    [999, '0s'],
    [5 * s, '5s'],
    [59 * s, '59s'],
    [119 * s + 900, '119s'],
    [2 * m, '2m'],
    [3 * m + 2 * s, '3m2s'],
    [9 * m + 59 * s, '9m59s'],
    [10 * m + 30 * s, '10m'],
    [179 * m, '179m'],
    [3 * h, '3h'],
    [5 * h + 30 * m, '5h30m'],
    [7 * h + 59 * m, '7h59m'],
    [8 * h + 30 * m, '8h'],
    [47 * h, '47h'],
    [2 * d, '2d'],
    [3 * d + 4 * h, '3d4h'],
    [7 * d + 23 * h, '7d23h'],
    [8 * d + 5 * h, '8d'],
    [400 * d, '400d'],
    [730 * d, '2y'],
    [735 * d, '2y5d'],
    [8 * 365 * d + 3 * d, '8y'],
  ];
  for (const [ms, want] of cases) t.is(humanDuration(ms), want, `${ms} ms`);
});

const container = (name: string, image = 'busybox') => ({ name, image });

/** A pod as the kubelet's /pods returns it; `status` is spread over a Running base. */
function pod(
  name: string,
  options: {
    containers?: string[];
    initContainers?: Array<{ name: string; restartPolicy?: string }>;
    status?: Record<string, unknown>;
    metadata?: Record<string, unknown>;
    spec?: Record<string, unknown>;
  } = {},
): Pod {
  return {
    metadata: {
      name,
      namespace: 'default',
      uid: `uid-${name}`,
      annotations: { 'kubernetes.io/config.seen': new Date(NOW - 5000).toISOString() },
      ...options.metadata,
    },
    spec: {
      nodeName: 'node1',
      containers: (options.containers ?? ['app']).map((c) => container(c)),
      ...(options.initContainers
        ? { initContainers: options.initContainers.map((c) => ({ ...container(c.name), ...c })) }
        : {}),
      ...options.spec,
    },
    status: { phase: 'Running', podIP: '10.244.0.2', podIPs: [{ ip: '10.244.0.2' }], ...options.status },
  } as Pod;
}

const running = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  ready: true,
  started: true,
  restartCount: 0,
  image: 'busybox',
  imageID: '',
  state: { running: { startedAt: ago(5) } },
  ...extra,
});
const waiting = (name: string, reason: string, extra: Record<string, unknown> = {}) => ({
  name,
  ready: false,
  restartCount: 0,
  image: 'busybox',
  imageID: '',
  state: { waiting: { reason } },
  ...extra,
});
const terminated = (name: string, t: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  name,
  ready: false,
  restartCount: 0,
  image: 'busybox',
  imageID: '',
  state: { terminated: { startedAt: ago(20), finishedAt: ago(10), ...t } },
  ...extra,
});
const readyCondition = (status: 'True' | 'False') => ({ type: 'Ready', status });
const initializedCondition = (status: 'True' | 'False') => ({ type: 'Initialized', status });

interface Case {
  title: string;
  pod: Pod;
  ready: string;
  status: string;
  restarts: string;
  age?: string;
}

const cases: Case[] = [
  {
    title: 'running and ready',
    pod: pod('web', {
      status: { containerStatuses: [running('app')], conditions: [readyCondition('True')] },
    }),
    ready: '1/1',
    status: 'Running',
    restarts: '0',
    age: '5s',
  },
  {
    title: 'pending without statuses yet shows the phase',
    pod: pod('new', { status: { phase: 'Pending' } }),
    ready: '0/1',
    status: 'Pending',
    restarts: '0',
  },
  {
    title: 'container creating',
    pod: pod('web', {
      status: { phase: 'Pending', containerStatuses: [waiting('app', 'ContainerCreating')] },
    }),
    ready: '0/1',
    status: 'ContainerCreating',
    restarts: '0',
  },
  {
    title: 'image pull error',
    pod: pod('web', { status: { phase: 'Pending', containerStatuses: [waiting('app', 'ErrImagePull')] } }),
    ready: '0/1',
    status: 'ErrImagePull',
    restarts: '0',
  },
  {
    title: 'image pull backoff',
    pod: pod('web', {
      status: { phase: 'Pending', containerStatuses: [waiting('app', 'ImagePullBackOff')] },
    }),
    ready: '0/1',
    status: 'ImagePullBackOff',
    restarts: '0',
  },
  {
    title: 'crash loop with the time of the last restart',
    pod: pod('crash', {
      status: {
        containerStatuses: [
          waiting('app', 'CrashLoopBackOff', {
            restartCount: 3,
            lastState: {
              terminated: { exitCode: 1, reason: 'Error', startedAt: ago(21), finishedAt: ago(20) },
            },
          }),
        ],
      },
    }),
    ready: '0/1',
    status: 'CrashLoopBackOff',
    restarts: '3 (20s ago)',
  },
  {
    title: 'restarted and running again: restarts with the last termination time',
    pod: pod('web', {
      status: {
        containerStatuses: [
          running('app', {
            restartCount: 1,
            lastState: { terminated: { exitCode: 137, reason: 'OOMKilled', finishedAt: ago(185) } },
          }),
        ],
      },
    }),
    ready: '1/1',
    status: 'Running',
    restarts: '1 (3m5s ago)',
  },
  {
    title: 'restart count without a termination time is a bare number',
    pod: pod('web', { status: { containerStatuses: [running('app', { restartCount: 2 })] } }),
    ready: '1/1',
    status: 'Running',
    restarts: '2',
  },
  {
    title: 'completed',
    pod: pod('job', {
      status: {
        phase: 'Succeeded',
        containerStatuses: [terminated('app', { exitCode: 0, reason: 'Completed' })],
      },
    }),
    ready: '0/1',
    status: 'Completed',
    restarts: '0',
  },
  {
    title: 'error',
    pod: pod('job', {
      status: { phase: 'Failed', containerStatuses: [terminated('app', { exitCode: 1, reason: 'Error' })] },
    }),
    ready: '0/1',
    status: 'Error',
    restarts: '0',
  },
  {
    title: 'terminated by a signal without a reason',
    pod: pod('job', {
      status: { phase: 'Failed', containerStatuses: [terminated('app', { exitCode: 137, signal: 9 })] },
    }),
    ready: '0/1',
    status: 'Signal:9',
    restarts: '0',
  },
  {
    title: 'terminated with an exit code and no reason',
    pod: pod('job', { status: { phase: 'Failed', containerStatuses: [terminated('app', { exitCode: 2 })] } }),
    ready: '0/1',
    status: 'ExitCode:2',
    restarts: '0',
  },
  {
    title: 'the first container decides the status (kubectl walks them backwards)',
    pod: pod('two', {
      containers: ['a', 'b'],
      status: { containerStatuses: [waiting('a', 'CrashLoopBackOff'), waiting('b', 'ErrImagePull')] },
    }),
    ready: '0/2',
    status: 'CrashLoopBackOff',
    restarts: '0',
  },
  {
    title: 'two containers, one ready',
    pod: pod('two', {
      containers: ['a', 'b'],
      status: {
        containerStatuses: [running('a'), running('b', { ready: false })],
        conditions: [readyCondition('False')],
      },
    }),
    ready: '1/2',
    status: 'Running',
    restarts: '0',
  },
  {
    title: 'restarts add up over containers',
    pod: pod('two', {
      containers: ['a', 'b'],
      status: {
        containerStatuses: [
          running('a', { restartCount: 2, lastState: { terminated: { exitCode: 1, finishedAt: ago(300) } } }),
          running('b', { restartCount: 1, lastState: { terminated: { exitCode: 1, finishedAt: ago(30) } } }),
        ],
      },
    }),
    ready: '2/2',
    status: 'Running',
    restarts: '3 (30s ago)',
  },
  {
    title: 'completed container beside a running one, pod ready → Running',
    pod: pod('mixed', {
      containers: ['a', 'b'],
      status: {
        containerStatuses: [terminated('a', { exitCode: 0, reason: 'Completed' }), running('b')],
        conditions: [readyCondition('True')],
      },
    }),
    ready: '1/2',
    status: 'Running',
    restarts: '0',
  },
  {
    title: 'completed container beside a running one, pod not ready → NotReady',
    pod: pod('mixed', {
      containers: ['a', 'b'],
      status: {
        containerStatuses: [terminated('a', { exitCode: 0, reason: 'Completed' }), running('b')],
        conditions: [readyCondition('False')],
      },
    }),
    ready: '1/2',
    status: 'NotReady',
    restarts: '0',
  },
  {
    title: 'first init container running: Init:0/2',
    pod: pod('init', {
      initContainers: [{ name: 'i1' }, { name: 'i2' }],
      status: {
        phase: 'Pending',
        initContainerStatuses: [running('i1', { ready: false }), waiting('i2', 'PodInitializing')],
        containerStatuses: [waiting('app', 'PodInitializing')],
        conditions: [initializedCondition('False')],
      },
    }),
    ready: '0/1',
    status: 'Init:0/2',
    restarts: '0',
  },
  {
    title: 'first init container done, second waiting: Init:1/2',
    pod: pod('init', {
      initContainers: [{ name: 'i1' }, { name: 'i2' }],
      status: {
        phase: 'Pending',
        initContainerStatuses: [
          terminated('i1', { exitCode: 0, reason: 'Completed' }),
          waiting('i2', 'PodInitializing'),
        ],
        containerStatuses: [waiting('app', 'PodInitializing')],
        conditions: [initializedCondition('False')],
      },
    }),
    ready: '0/1',
    status: 'Init:1/2',
    restarts: '0',
  },
  {
    title: 'init container crash-looping: Init:CrashLoopBackOff, its restarts count',
    pod: pod('init', {
      initContainers: [{ name: 'i1' }],
      status: {
        phase: 'Pending',
        initContainerStatuses: [
          waiting('i1', 'CrashLoopBackOff', {
            restartCount: 4,
            lastState: { terminated: { exitCode: 1, finishedAt: ago(8) } },
          }),
        ],
        containerStatuses: [waiting('app', 'PodInitializing')],
        conditions: [initializedCondition('False')],
      },
    }),
    ready: '0/1',
    status: 'Init:CrashLoopBackOff',
    restarts: '4 (8s ago)',
  },
  {
    title: 'init container failed with a reason: Init:Error',
    pod: pod('init', {
      initContainers: [{ name: 'i1' }],
      spec: { restartPolicy: 'Never' },
      status: {
        phase: 'Failed',
        initContainerStatuses: [terminated('i1', { exitCode: 1, reason: 'Error' })],
        containerStatuses: [waiting('app', 'PodInitializing')],
      },
    }),
    ready: '0/1',
    status: 'Init:Error',
    restarts: '0',
  },
  {
    title: 'init container failed without a reason: the first failed one decides, Init:ExitCode:3',
    pod: pod('init', {
      initContainers: [{ name: 'i1' }, { name: 'i2' }],
      status: {
        phase: 'Failed',
        initContainerStatuses: [
          terminated('i1', { exitCode: 3 }),
          terminated('i2', { exitCode: 143, signal: 15 }),
        ],
      },
    }),
    ready: '0/1',
    status: 'Init:ExitCode:3',
    restarts: '0',
  },
  {
    title: 'init container killed by a signal without a reason: Init:Signal:15',
    pod: pod('init', {
      initContainers: [{ name: 'i1' }],
      status: { phase: 'Failed', initContainerStatuses: [terminated('i1', { exitCode: 143, signal: 15 })] },
    }),
    ready: '0/1',
    status: 'Init:Signal:15',
    restarts: '0',
  },
  {
    title: 'init done, app containers still starting: PodInitializing',
    pod: pod('init', {
      initContainers: [{ name: 'i1' }],
      status: {
        phase: 'Pending',
        initContainerStatuses: [terminated('i1', { exitCode: 0, reason: 'Completed' })],
        containerStatuses: [waiting('app', 'PodInitializing')],
        conditions: [initializedCondition('True')],
      },
    }),
    ready: '0/1',
    status: 'PodInitializing',
    restarts: '0',
  },
  {
    title: 'sidecar (restartable init container) counts in READY and RESTARTS',
    pod: pod('sidecar', {
      initContainers: [{ name: 'proxy', restartPolicy: 'Always' }],
      status: {
        initContainerStatuses: [
          running('proxy', {
            restartCount: 1,
            lastState: { terminated: { exitCode: 1, finishedAt: ago(60) } },
          }),
        ],
        containerStatuses: [running('app')],
        conditions: [initializedCondition('True'), readyCondition('True')],
      },
    }),
    ready: '2/2',
    status: 'Running',
    restarts: '1 (60s ago)',
  },
  {
    title: 'deletion requested: Terminating',
    pod: pod('bye', {
      metadata: { deletionTimestamp: ago(1) },
      status: { containerStatuses: [running('app')] },
    }),
    ready: '1/1',
    status: 'Terminating',
    restarts: '0',
  },
  {
    title: 'deletion requested of a finished pod keeps its status',
    pod: pod('bye', {
      metadata: { deletionTimestamp: ago(1) },
      status: {
        phase: 'Succeeded',
        containerStatuses: [terminated('app', { exitCode: 0, reason: 'Completed' })],
      },
    }),
    ready: '0/1',
    status: 'Completed',
    restarts: '0',
  },
  {
    title: 'deletion on a lost node: Unknown',
    pod: pod('lost', {
      metadata: { deletionTimestamp: ago(1) },
      status: { reason: 'NodeLost', containerStatuses: [running('app')] },
    }),
    ready: '1/1',
    status: 'Unknown',
    restarts: '0',
  },
  {
    title: 'pod status reason wins over the phase (Evicted)',
    pod: pod('evicted', { status: { phase: 'Failed', reason: 'Evicted' } }),
    ready: '0/1',
    status: 'Evicted',
    restarts: '0',
  },
  {
    title: 'scheduling gated',
    pod: pod('gated', {
      status: {
        phase: 'Pending',
        conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }],
      },
    }),
    ready: '0/1',
    status: 'SchedulingGated',
    restarts: '0',
  },
  {
    title: 'AGE from creationTimestamp before config.seen',
    pod: pod('old', {
      metadata: { creationTimestamp: ago(3 * 86400 + 4 * 3600) },
      status: { containerStatuses: [running('app')] },
    }),
    ready: '1/1',
    status: 'Running',
    restarts: '0',
    age: '3d4h',
  },
  {
    title: 'AGE unknown without either time',
    pod: pod('nodate', { metadata: { annotations: {} }, status: { containerStatuses: [running('app')] } }),
    ready: '1/1',
    status: 'Running',
    restarts: '0',
    age: '<unknown>',
  },
];

for (const c of cases) {
  test(`printPod: ${c.title}`, (t) => {
    const row = podRow(c.pod, NOW);
    t.deepEqual(
      { ready: row.ready, status: row.status, restarts: row.restarts, ...(c.age ? { age: row.age } : {}) },
      { ready: c.ready, status: c.status, restarts: c.restarts, ...(c.age ? { age: c.age } : {}) },
    );
  });
}

test('wide columns: IP, NODE, NOMINATED NODE, READINESS GATES', (t) => {
  const row = podRow(
    pod('web', {
      spec: { readinessGates: [{ conditionType: 'example.com/lb' }, { conditionType: 'example.com/dns' }] },
      status: { conditions: [{ type: 'example.com/lb', status: 'True' }] },
    }),
    NOW,
  );
  t.is(row.ip, '10.244.0.2');
  t.is(row.node, 'node1');
  t.is(row.nominatedNode, '<none>');
  t.is(row.readinessGates, '1/2');
  const bare = podRow({ metadata: { name: 'x' }, spec: { containers: [] }, status: {} } as Pod, NOW);
  t.is(bare.ip, '<none>');
  t.is(bare.node, '<none>');
});

test('table is laid out like kubectl (tabwriter: min width 6, padding 3)', (t) => {
  const pods = [
    pod('nginx-node1', { status: { containerStatuses: [running('app')] } }),
    pod('crash-node1', {
      status: {
        containerStatuses: [
          waiting('app', 'CrashLoopBackOff', {
            restartCount: 2,
            lastState: { terminated: { exitCode: 1, finishedAt: ago(4) } },
          }),
        ],
      },
    }),
  ];
  t.is(
    printPodTable(sortPods(pods), { now: NOW }),
    [
      'NAME          READY   STATUS             RESTARTS     AGE',
      'crash-node1   0/1     CrashLoopBackOff   2 (4s ago)   5s',
      'nginx-node1   1/1     Running            0            5s',
      '',
    ].join('\n'),
  );
  t.is(
    printPodTable([pods[0]!], { now: NOW, wide: true, withNamespace: true }),
    [
      'NAMESPACE   NAME          READY   STATUS    RESTARTS   AGE   IP           NODE    NOMINATED NODE   READINESS GATES',
      'default     nginx-node1   1/1     Running   0          5s    10.244.0.2   node1   <none>           <none>',
      '',
    ].join('\n'),
  );
  t.is(printPodTable([pods[0]!], { now: NOW, noHeaders: true }), 'nginx-node1   1/1   Running   0     5s\n');
  t.is(
    formatTable([
      ['a', 'b'],
      ['ccccccc', 'd'],
    ]),
    'a         b\nccccccc   d\n',
  );
});

test('pods are listed by namespace, then name', (t) => {
  const p = (ns: string, name: string) => ({ metadata: { namespace: ns, name } }) as Pod;
  t.deepEqual(
    sortPods([p('kube-system', 'a'), p('default', 'b'), p('default', 'a')]).map(
      (x) => `${x.metadata!.namespace}/${x.metadata!.name}`,
    ),
    ['default/a', 'default/b', 'kube-system/a'],
  );
});

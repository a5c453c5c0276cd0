import test from 'ava';
import { podCells } from './pod-printing.js';
import type { Pod } from './types.js';
import {
  NOW,
  ago,
  pod,
  running,
  waiting,
  terminated,
  readyCondition,
  printPodCases,
  type Case,
} from './pod-printing-fixtures.js';

// kubectl's printPod, case by case: pods as a kubelet reports them (JSON fixtures), the cells kubectl shows.

const cases: Case[] = [
  {
    title: 'running and ready',
    pod: pod('web', {
      status: { containerStatuses: [running('app')], conditions: [readyCondition('True')] },
    }),
    ready: '1/1',
    status: 'Running',
    restarts: '0',
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
];

printPodCases(cases);

test('wide cells: IP (the first of podIPs), NODE, NOMINATED NODE, READINESS GATES (true/total)', (t) => {
  const gated = podCells(
    pod('web', {
      spec: {
        readinessGates: [
          { conditionType: 'example.com/lb' },
          { conditionType: 'example.com/dns' },
          { conditionType: 'example.com/cert' },
        ],
      },
      status: {
        podIP: '10.244.0.9',
        podIPs: [{ ip: '10.244.0.2' }, { ip: 'fd00::2' }],
        nominatedNodeName: 'node2',
        conditions: [
          { type: 'example.com/lb', status: 'True' },
          { type: 'example.com/dns', status: 'False' },
        ],
      },
    }),
    NOW,
  );
  t.like(gated, { ip: '10.244.0.2', node: 'node1', nominatedNode: 'node2', readinessGates: '1/3' });
  const bare = podCells({ metadata: { name: 'x' }, spec: { containers: [] }, status: {} } as Pod, NOW);
  t.deepEqual(bare, {
    ready: '0/0',
    status: '',
    restarts: '0',
    ip: '<none>',
    node: '<none>',
    nominatedNode: '<none>',
    readinessGates: '<none>',
  });
});

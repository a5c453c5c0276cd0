import {
  ago,
  pod,
  running,
  waiting,
  terminated,
  readyCondition,
  initializedCondition,
  printPodCases,
  type Case,
} from './pod-printing-fixtures.js';

// kubectl's printPod for pods with init containers and sidecars (restartable init containers).

const cases: Case[] = [
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
    title: 'restarts of init containers that finished no longer count once the pod is initialized',
    pod: pod('init', {
      initContainers: [{ name: 'i1' }],
      status: {
        initContainerStatuses: [
          terminated(
            'i1',
            { exitCode: 0, reason: 'Completed' },
            {
              restartCount: 2,
              lastState: { terminated: { exitCode: 1, finishedAt: ago(40) } },
            },
          ),
        ],
        containerStatuses: [running('app')],
        conditions: [initializedCondition('True'), readyCondition('True')],
      },
    }),
    ready: '1/1',
    status: 'Running',
    restarts: '0',
  },
  {
    title: 'sidecar started but not ready: counted in the total only',
    pod: pod('sidecar', {
      initContainers: [{ name: 'proxy', restartPolicy: 'Always' }],
      status: {
        initContainerStatuses: [running('proxy', { ready: false })],
        containerStatuses: [running('app')],
        conditions: [initializedCondition('True'), readyCondition('False')],
      },
    }),
    ready: '1/2',
    status: 'Running',
    restarts: '0',
  },
  {
    title: 'sidecar not started yet holds the pod in Init:0/1',
    pod: pod('sidecar', {
      initContainers: [{ name: 'proxy', restartPolicy: 'Always' }],
      status: {
        phase: 'Pending',
        initContainerStatuses: [running('proxy', { ready: false, started: false })],
        containerStatuses: [waiting('app', 'PodInitializing')],
        conditions: [initializedCondition('False')],
      },
    }),
    ready: '0/2',
    status: 'Init:0/1',
    restarts: '0',
  },
];

printPodCases(cases);

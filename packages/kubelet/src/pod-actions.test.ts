import test from 'ava';
import type { Pod, PodPhase } from '@nodelet/api';
import { hashContainer } from './container-hash.js';
import { computePodActions } from './pod-actions.js';
import { getPhase } from './pod-status.js';
import type { RuntimeContainer, RuntimePodStatus } from './runtime-pod.js';

const main = { name: 'main', image: 'busybox:1.36' };
const side = { name: 'side', image: 'busybox:1.36' };
const pod = (spec: Partial<NonNullable<Pod['spec']>> = {}): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u' },
  spec: { restartPolicy: 'Always', containers: [main], ...spec },
});
const sandbox = { id: 'sb1', ready: true, attempt: 0, createdAt: 1, ip: '10.0.0.2', additionalIps: [] };
let seq = 0;
const ctr = (
  name: string,
  state: RuntimeContainer['state'],
  exitCode = 0,
  spec = name === 'side' ? side : main,
): RuntimeContainer => ({
  id: `c${++seq}`,
  name,
  state,
  image: 'busybox:1.36',
  imageRef: 'sha256:x',
  createdAt: 100 - seq,
  startedAt: 1,
  finishedAt: state === 'exited' ? 2 : 0,
  exitCode,
  reason: '',
  message: '',
  restartCount: 0,
  hash: hashContainer(spec),
});
const status = (containers: RuntimeContainer[], sandboxes = [sandbox]): RuntimePodStatus => ({
  uid: 'u',
  name: 'p',
  namespace: 'default',
  sandboxes,
  containers,
});

const names = (a: ReturnType<typeof computePodActions>) => ({
  killPod: a.killPod,
  createSandbox: a.createSandbox,
  init: a.nextInitContainerToStart?.name,
  start: a.containersToStart.map((c) => c.name),
  kill: a.containersToKill.map((k) => `${k.container.name}:${k.reason}`),
});

const cases: [string, Pod, RuntimePodStatus, ReturnType<typeof names>][] = [
  [
    'new pod: create sandbox, start containers',
    pod({ containers: [main, side] }),
    status([], []),
    { killPod: true, createSandbox: true, init: undefined, start: ['main', 'side'], kill: [] },
  ],
  [
    'running and unchanged: nothing',
    pod(),
    status([ctr('main', 'running')]),
    { killPod: false, createSandbox: false, init: undefined, start: [], kill: [] },
  ],
  [
    'Always + exited 0: restart',
    pod(),
    status([ctr('main', 'exited', 0)]),
    { killPod: false, createSandbox: false, init: undefined, start: ['main'], kill: [] },
  ],
  [
    'OnFailure + exited 0: nothing left, kill pod',
    pod({ restartPolicy: 'OnFailure' }),
    status([ctr('main', 'exited', 0)]),
    { killPod: true, createSandbox: false, init: undefined, start: [], kill: [] },
  ],
  [
    'OnFailure + exited 1: restart',
    pod({ restartPolicy: 'OnFailure' }),
    status([ctr('main', 'exited', 1)]),
    { killPod: false, createSandbox: false, init: undefined, start: ['main'], kill: [] },
  ],
  [
    'Never + exited 1: kill pod',
    pod({ restartPolicy: 'Never' }),
    status([ctr('main', 'exited', 1)]),
    { killPod: true, createSandbox: false, init: undefined, start: [], kill: [] },
  ],
  [
    'spec changed: kill and restart',
    pod({ containers: [{ ...main, image: 'busybox:1.37' }] }),
    status([ctr('main', 'running')]),
    { killPod: false, createSandbox: false, init: undefined, start: ['main'], kill: ['main:SpecChanged'] },
  ],
  [
    'container not in spec: killed',
    pod(),
    status([ctr('main', 'running'), ctr('side', 'running')]),
    { killPod: false, createSandbox: false, init: undefined, start: [], kill: ['side:NotInSpec'] },
  ],
  [
    'sandbox not ready: new sandbox',
    pod(),
    status([ctr('main', 'exited', 0)], [{ ...sandbox, ready: false }]),
    { killPod: true, createSandbox: true, init: undefined, start: ['main'], kill: [] },
  ],
  [
    'Never + sandbox died after running: no new sandbox',
    pod({ restartPolicy: 'Never' }),
    status([ctr('main', 'exited', 0)], [{ ...sandbox, ready: false }]),
    { killPod: true, createSandbox: false, init: undefined, start: [], kill: [] },
  ],
  [
    'init: first one first',
    pod({
      initContainers: [
        { name: 'i1', image: 'b' },
        { name: 'i2', image: 'b' },
      ],
    }),
    status([]),
    { killPod: false, createSandbox: false, init: 'i1', start: [], kill: [] },
  ],
  [
    'init: next after a success',
    pod({
      initContainers: [
        { name: 'i1', image: 'b' },
        { name: 'i2', image: 'b' },
      ],
    }),
    status([ctr('i1', 'exited', 0)]),
    { killPod: false, createSandbox: false, init: 'i2', start: [], kill: [] },
  ],
  [
    'init: running one blocks',
    pod({ initContainers: [{ name: 'i1', image: 'b' }] }),
    status([ctr('i1', 'running')]),
    { killPod: false, createSandbox: false, init: undefined, start: [], kill: [] },
  ],
  [
    'init: failed is retried (Always)',
    pod({ initContainers: [{ name: 'i1', image: 'b' }] }),
    status([ctr('i1', 'exited', 1)]),
    { killPod: false, createSandbox: false, init: 'i1', start: [], kill: [] },
  ],
  [
    'init: failed kills the pod (Never)',
    pod({ restartPolicy: 'Never', initContainers: [{ name: 'i1', image: 'b' }] }),
    status([ctr('i1', 'exited', 1)]),
    { killPod: true, createSandbox: false, init: undefined, start: [], kill: [] },
  ],
  [
    'init: all done, app containers start',
    pod({ initContainers: [{ name: 'i1', image: 'b' }] }),
    status([ctr('i1', 'exited', 0)]),
    { killPod: false, createSandbox: false, init: undefined, start: ['main'], kill: [] },
  ],
];

for (const [title, p, s, expected] of cases) {
  test(`computePodActions: ${title}`, (t) => {
    t.deepEqual(names(computePodActions(p, s)), expected);
  });
}

test('computePodActions: a failed liveness probe kills and restarts the container', (t) => {
  const c = ctr('main', 'running');
  const a = computePodActions(pod(), status([c]), {
    livenessFailed: (id) => id === c.id,
    startupFailed: () => false,
  });
  t.deepEqual(names(a).kill, ['main:LivenessProbe']);
  t.deepEqual(names(a).start, ['main']);
  t.is(a.containersToKill[0]!.message, 'Container main failed liveness probe, will be restarted');
});

const running = { name: 'main', state: { running: { startedAt: 'x' } } };
const exited = (code: number) => ({ name: 'main', state: { terminated: { exitCode: code } } });
const waitingAfter = (code: number) => ({
  name: 'main',
  state: { waiting: { reason: 'CrashLoopBackOff' } },
  lastState: { terminated: { exitCode: code } },
});
const phaseCases: [string, Partial<NonNullable<Pod['spec']>>, any[], any[], PodPhase][] = [
  ['no status yet', {}, [], [], 'Pending'],
  [
    'waiting to start',
    {},
    [],
    [{ name: 'main', state: { waiting: { reason: 'ContainerCreating' } } }],
    'Pending',
  ],
  ['running', {}, [], [running], 'Running'],
  ['Always, exited: restarting', {}, [], [exited(0)], 'Running'],
  ['Always, crash-looping', {}, [], [waitingAfter(1)], 'Running'],
  ['OnFailure, exited 0', { restartPolicy: 'OnFailure' }, [], [exited(0)], 'Succeeded'],
  ['OnFailure, exited 1: restarting', { restartPolicy: 'OnFailure' }, [], [exited(1)], 'Running'],
  ['Never, exited 0', { restartPolicy: 'Never' }, [], [exited(0)], 'Succeeded'],
  ['Never, exited 1', { restartPolicy: 'Never' }, [], [exited(1)], 'Failed'],
  [
    'init running',
    { initContainers: [{ name: 'i', image: 'b' }] },
    [{ name: 'i', state: { running: {} } }],
    [],
    'Pending',
  ],
  [
    'init failed, Never',
    { restartPolicy: 'Never', initContainers: [{ name: 'i', image: 'b' }] },
    [{ name: 'i', state: { terminated: { exitCode: 1 } } }],
    [],
    'Failed',
  ],
];
for (const [title, spec, init, app, phase] of phaseCases) {
  test(`getPhase: ${title}`, (t) => {
    t.is(getPhase(pod(spec), init, app), phase);
  });
}

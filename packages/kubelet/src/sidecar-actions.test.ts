import test from 'ava';
import type { Container, ContainerStatus, Pod } from '@nodelet/api';
import { hashContainer } from './container-hash.js';
import { computePodActions, type ProbeVerdicts } from './pod-actions.js';
import { getPhase } from './pod-status.js';
import type { RuntimeContainer, RuntimePodStatus } from './runtime-pod.js';

// The sync decisions and phases of pods with sidecars, table-driven after upstream's
// computeInitContainerActions and getPhase cases.

const spec = (name: string, extra: Partial<Container> = {}): Container => ({
  name,
  image: 'busybox:1.36',
  ...extra,
});
const proxy = spec('proxy', { restartPolicy: 'Always' });
const setup = spec('setup');
const logger = spec('logger', { restartPolicy: 'Always' });
const main = spec('main');
const specs = new Map([proxy, setup, logger, main].map((c) => [c.name, c]));
const pod = (extra: Partial<NonNullable<Pod['spec']>> = {}): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u' },
  spec: { restartPolicy: 'Always', initContainers: [proxy, setup, logger], containers: [main], ...extra },
});
let seq = 0;
const ctr = (
  name: string,
  state: RuntimeContainer['state'],
  exitCode = 0,
  from: Container = specs.get(name)!,
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
  hash: hashContainer(from),
});
const sandbox = { id: 'sb1', ready: true, attempt: 0, createdAt: 1, ip: '10.0.0.2', additionalIps: [] };
const status = (containers: RuntimeContainer[], sandboxes = [sandbox]): RuntimePodStatus => ({
  uid: 'u',
  name: 'p',
  namespace: 'default',
  sandboxes,
  containers,
});
const noProbes: ProbeVerdicts = { livenessFailed: () => false, startupFailed: () => false };
const names = (p: Pod, s: RuntimePodStatus, probes = noProbes) => {
  const a = computePodActions(p, s, probes);
  return {
    killPod: a.killPod,
    createSandbox: a.createSandbox,
    init: (a.initContainersToStart ?? []).map((c) => c.name),
    start: a.containersToStart.map((c) => c.name),
    kill: a.containersToKill.map((k) => `${k.container.name}:${k.reason}`),
  };
};

test('a new pod starts its first init container in a new sandbox', (t) => {
  t.like(names(pod(), status([], [])), { createSandbox: true, init: ['proxy'], start: [] });
});

test('each init container waits for the one before: a sidecar running, an init container exited 0', (t) => {
  t.like(names(pod(), status([ctr('proxy', 'running')])), { init: ['setup'], start: [] });
  t.like(names(pod(), status([ctr('setup', 'running'), ctr('proxy', 'running')])), { init: [], start: [] });
  t.like(names(pod(), status([ctr('setup', 'exited'), ctr('proxy', 'running')])), {
    init: ['logger'],
    start: [],
  });
  t.like(names(pod(), status([ctr('logger', 'running'), ctr('setup', 'exited'), ctr('proxy', 'running')])), {
    init: [],
    start: ['main'],
  });
});

test('a sidecar with a startup probe holds the next one until the probe succeeded; a failed one restarts it', (t) => {
  const p = pod({ initContainers: [{ ...proxy, startupProbe: { exec: { command: ['true'] } } }, setup] });
  const s = status([ctr('proxy', 'running', 0, p.spec!.initContainers![0])]);
  t.like(names(p, s, { ...noProbes, started: () => false }), { init: [] });
  t.like(names(p, s, { ...noProbes, started: () => true }), { init: ['setup'] });
  t.like(names(p, s, { ...noProbes, startupFailed: () => true }), {
    init: ['proxy'],
    kill: ['proxy:StartupProbe'],
  });
});

test('an exited sidecar is restarted whatever the restart policy; a failed liveness probe kills and restarts it', (t) => {
  const running = [
    ctr('main', 'running'),
    ctr('logger', 'running'),
    ctr('setup', 'exited'),
    ctr('proxy', 'exited', 1),
  ];
  t.like(names(pod({ restartPolicy: 'Never' }), status(running)), {
    init: ['proxy'],
    start: [],
    killPod: false,
  });
  const p = pod({
    initContainers: [{ ...proxy, livenessProbe: { exec: { command: ['true'] } } }, setup, logger],
  });
  const all = [
    ctr('main', 'running'),
    ctr('logger', 'running'),
    ctr('setup', 'exited'),
    ctr('proxy', 'running', 0, p.spec!.initContainers![0]),
  ];
  const failing = all.find((c) => c.name === 'proxy')!.id;
  t.like(names(p, status(all), { ...noProbes, livenessFailed: (id: string) => id === failing }), {
    init: ['proxy'],
    kill: ['proxy:LivenessProbe'],
  });
});

test('app containers done under Never: the pod is killed, sidecars are not restarted', (t) => {
  const s = status([
    ctr('main', 'exited'),
    ctr('logger', 'running'),
    ctr('setup', 'exited'),
    ctr('proxy', 'exited', 1),
  ]);
  t.like(names(pod({ restartPolicy: 'Never' }), s), { killPod: true, init: [], start: [] });
  // …and no new sandbox once it is stopped.
  const stopped = status(s.containers, [{ ...sandbox, ready: false }]);
  t.like(names(pod({ restartPolicy: 'Never' }), stopped), { createSandbox: false, init: [] });
});

test('a regular init container failing under Never kills the pod', (t) => {
  t.like(
    names(pod({ restartPolicy: 'Never' }), status([ctr('setup', 'exited', 1), ctr('proxy', 'running')])),
    {
      killPod: true,
      init: [],
    },
  );
});

const cs = (
  name: string,
  state: ContainerStatus['state'],
  extra: Partial<ContainerStatus> = {},
): ContainerStatus => ({
  name,
  image: 'busybox:1.36',
  imageID: '',
  ready: false,
  restartCount: 0,
  state,
  ...extra,
});
const running = { running: { startedAt: '2026-01-01T00:00:00Z' } };
const done = (exitCode: number) => ({ terminated: { exitCode } });

test('getPhase with sidecars, as upstream', (t) => {
  const p = pod({ initContainers: [proxy], restartPolicy: 'Never' });
  const phase = (init: ContainerStatus[], app: ContainerStatus[], terminal = false) =>
    getPhase(p, init, app, terminal);
  // A sidecar running but not started yet: still initializing.
  t.is(
    phase(
      [cs('proxy', running, { started: false })],
      [cs('main', { waiting: { reason: 'PodInitializing' } })],
    ),
    'Pending',
  );
  t.is(phase([cs('proxy', running, { started: true })], [cs('main', running)]), 'Running');
  // The app done, the sidecar still running: Running until the sidecar is stopped.
  t.is(phase([cs('proxy', running, { started: true })], [cs('main', done(0))]), 'Running');
  t.is(
    phase([cs('proxy', done(143))], [cs('main', done(0))]),
    'Succeeded',
    'a stopped sidecar does not count',
  );
  t.is(phase([cs('proxy', done(143))], [cs('main', done(1))]), 'Failed');
  // A sidecar restarting after the app ran does not bring the pod back to Pending.
  const restarting = cs('proxy', { waiting: { reason: 'CrashLoopBackOff' } }, { lastState: done(1) });
  t.is(phase([restarting], [cs('main', running)]), 'Running');
});

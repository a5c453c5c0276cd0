import test from 'ava';
import type { Container } from '@nodelet/api';
import { makePod, recordStarts, startHarness, type Harness } from './test-harness.js';

// Sidecar containers (init containers with restartPolicy Always) on the fake runtime under the virtual
// clock, as upstream's SidecarContainers: started in order, each running (and started, by its startup
// probe) before the next init container; restarted with CrashLoopBackOff; not blocking completion; the
// Initialized condition does not wait for them, ContainersReady does; stopped after the app containers,
// in reverse order.

const B = 'runtime-fake.nodelet.dev/';

const c = (name: string, extra: Partial<Container> = {}): Container => ({
  name,
  image: 'busybox:1.36',
  imagePullPolicy: 'IfNotPresent',
  ...extra,
});
const sidecar = (name: string, extra: Partial<Container> = {}) =>
  c(name, { restartPolicy: 'Always', ...extra });

/** Records the virtual time of every StopContainer, by container name. */
function recordStops(h: Harness): { name: string; at: number }[] {
  const stops: { name: string; at: number }[] = [];
  const stop = h.runtime.stopContainer.bind(h.runtime);
  h.runtime.stopContainer = async (req: Parameters<typeof stop>[0]) => {
    const st = await h.runtime.containerStatus({ containerId: req.containerId, verbose: false });
    stops.push({ name: st.status?.metadata?.name ?? '?', at: h.clock.elapsed() });
    return stop(req);
  };
  return stops;
}

const cond = (h: Harness, uid: string, type: string) =>
  h.status(uid).conditions?.find((x) => x.type === type);

test('init containers start in order; a sidecar must be running and started before the next one', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  h.source.set([
    makePod(
      'order',
      {
        initContainers: [
          sidecar('proxy'),
          c('setup'),
          // Its startup probe succeeds 5 s after the start at the earliest.
          sidecar('logger', {
            startupProbe: { exec: { command: ['true'] }, initialDelaySeconds: 5, periodSeconds: 1 },
          }),
        ],
        containers: [c('main')],
      },
      { [`${B}setup`]: 'exitAfter=2s,exitCode=0' },
    ),
  ]);
  await h.clock.advance(1_000);
  t.like(cond(h, 'uid-order', 'Initialized'), {
    status: 'False',
    message: 'containers with incomplete status: [setup logger]',
  });
  t.is(h.status('uid-order').phase, 'Pending');
  await h.clock.advance(21_000);
  t.deepEqual(
    starts.map((s) => s.name),
    ['proxy', 'setup', 'logger', 'main'],
  );
  const at = (name: string) => starts.find((s) => s.name === name)!.at;
  t.true(at('setup') >= at('proxy'), 'right after the sidecar runs');
  t.true(at('logger') >= at('setup') + 2_000, 'after setup exited');
  t.true(at('main') >= at('logger') + 5_000, 'after the startup probe succeeded');
  const status = h.status('uid-order');
  t.is(status.phase, 'Running');
  t.is(cond(h, 'uid-order', 'Initialized')?.status, 'True');
  t.is(cond(h, 'uid-order', 'Ready')?.status, 'True');
  const inits = status.initContainerStatuses!;
  t.truthy(inits.find((s) => s.name === 'proxy')!.state?.running, 'sidecars keep running');
  t.truthy(inits.find((s) => s.name === 'logger')!.state?.running);
  t.is(inits.find((s) => s.name === 'setup')!.state?.terminated?.exitCode, 0);
  await h.kubelet.stop();
});

test('a sidecar that exits is restarted with CrashLoopBackOff while the app keeps running', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  h.source.set([
    makePod(
      'crash',
      { initContainers: [sidecar('proxy')], containers: [c('main')] },
      { [`${B}proxy`]: 'exitAfter=1s,exitCode=1' },
    ),
  ]);
  await h.clock.advance(120_000);
  const proxyStarts = starts.filter((s) => s.name === 'proxy').map((s) => s.at);
  const gaps = proxyStarts.slice(1).map((at, i) => at - proxyStarts[i]!);
  // Each instance runs 1 s; the first restart is at once, then 10 s, 20 s, 40 s of backoff (PLEG sees
  // an exit within its 1 s relist).
  t.true(gaps.length >= 4, JSON.stringify(proxyStarts));
  t.true(gaps[0]! <= 3_000, JSON.stringify(gaps));
  for (const [i, backoff] of [10_000, 20_000, 40_000].entries()) {
    t.true(gaps[i + 1]! >= 1_000 + backoff && gaps[i + 1]! <= 1_000 + backoff + 2_000, JSON.stringify(gaps));
  }
  t.is(starts.filter((s) => s.name === 'main').length, 1, 'the app container is not restarted');
  const status = h.status('uid-crash');
  t.is(status.phase, 'Running');
  t.is(cond(h, 'uid-crash', 'Initialized')?.status, 'True', 'Initialized does not wait for the sidecar');
  const proxy = status.initContainerStatuses![0]!;
  t.true(proxy.restartCount >= 4);
  await h.kubelet.stop();
});

test('a Job-like pod (restartPolicy Never) is Succeeded once its app exits 0; the sidecar is stopped after it', async (t) => {
  const h = await startHarness();
  const starts = recordStarts(h);
  const stops = recordStops(h);
  h.source.set([
    makePod(
      'job',
      { restartPolicy: 'Never', initContainers: [sidecar('proxy')], containers: [c('main')] },
      { [`${B}main`]: 'exitAfter=5s,exitCode=0' },
    ),
  ]);
  await h.clock.advance(3_000);
  t.is(h.status('uid-job').phase, 'Running');
  await h.clock.advance(10_000);
  const status = h.status('uid-job');
  t.is(status.phase, 'Succeeded', JSON.stringify(status));
  t.like(cond(h, 'uid-job', 'Ready'), { status: 'False', reason: 'PodCompleted' });
  t.is(status.containerStatuses![0]!.state?.terminated?.exitCode, 0);
  t.truthy(status.initContainerStatuses![0]!.state?.terminated, 'the sidecar was stopped');
  const mainStart = starts.find((s) => s.name === 'main')!.at;
  const proxyStop = stops.find((s) => s.name === 'proxy');
  t.truthy(proxyStop);
  t.true(proxyStop!.at >= mainStart + 5_000, 'stopped after the app exited');
  t.deepEqual(
    starts.map((s) => s.name),
    ['proxy', 'main'],
    'nothing restarted',
  );
  await h.kubelet.stop();
});

test('on termination sidecars stop after the app containers, in reverse order', async (t) => {
  const h = await startHarness();
  const stops = recordStops(h);
  h.source.set([
    makePod(
      'order-stop',
      {
        terminationGracePeriodSeconds: 30,
        initContainers: [sidecar('first'), sidecar('second')],
        containers: [c('app1'), c('app2')],
      },
      { [`${B}all`]: 'stopDelay=2s', [`${B}app2`]: 'stopDelay=4s' },
    ),
  ]);
  await h.clock.advance(5_000);
  t.is(h.status('uid-order-stop').phase, 'Running');
  const t0 = h.clock.elapsed();
  h.source.set([]);
  await h.clock.advance(20_000);
  const at = (name: string) => stops.find((s) => s.name === name)!.at - t0;
  t.is(at('app1'), 0);
  t.is(at('app2'), 0);
  t.is(at('second'), 4_000, 'after the last app container exited');
  t.is(at('first'), 6_000, 'after the later sidecar exited');
  await h.kubelet.stop();
});

test('a sidecar’s preStop runs at once, beside the app’s stop; its wait for its turn comes after', async (t) => {
  const h = await startHarness();
  const stops = recordStops(h);
  const hookRan: number[] = [];
  const exec = h.runtime.execSync.bind(h.runtime);
  h.runtime.execSync = async (req: Parameters<typeof exec>[0]) => {
    if (req.cmd.join(' ') === 'drain') hookRan.push(h.clock.elapsed());
    return exec({ ...req, cmd: ['true'] });
  };
  h.source.set([
    makePod(
      'hooked-sidecar',
      {
        terminationGracePeriodSeconds: 30,
        initContainers: [sidecar('proxy', { lifecycle: { preStop: { exec: { command: ['drain'] } } } })],
        containers: [c('main')],
      },
      { [`${B}main`]: 'stopDelay=4s' },
    ),
  ]);
  await h.clock.advance(5_000);
  const t0 = h.clock.elapsed();
  h.source.set([]);
  await h.clock.advance(20_000);
  t.deepEqual(
    hookRan.map((at) => at - t0),
    [0],
    'the preStop ran when the pod began to stop (upstream: before waiting for the turn)',
  );
  t.is(stops.find((s) => s.name === 'proxy')!.at - t0, 4_000, 'SIGTERM only after the app exited');
  await h.kubelet.stop();
});

test('a sidecar past the grace period is stopped anyway, with the minimum grace', async (t) => {
  const h = await startHarness();
  const stops = recordStops(h);
  h.source.set([
    makePod(
      'slow',
      { terminationGracePeriodSeconds: 5, initContainers: [sidecar('proxy')], containers: [c('main')] },
      { [`${B}main`]: 'ignoreStop' },
    ),
  ]);
  await h.clock.advance(5_000);
  const t0 = h.clock.elapsed();
  h.source.set([]);
  await h.clock.advance(20_000);
  t.is(stops.find((s) => s.name === 'main')!.at - t0, 0);
  t.is(stops.find((s) => s.name === 'proxy')!.at - t0, 5_000, 'not waiting past the grace period');
  await h.kubelet.stop();
});

test('a sidecar that is not ready keeps ContainersReady and Ready False', async (t) => {
  const h = await startHarness();
  h.source.set([
    makePod('unready', {
      initContainers: [
        sidecar('proxy', { readinessProbe: { exec: { command: ['false'] }, periodSeconds: 1 } }),
      ],
      containers: [c('main')],
    }),
  ]);
  await h.clock.advance(10_000);
  t.is(cond(h, 'uid-unready', 'Initialized')?.status, 'True');
  t.like(cond(h, 'uid-unready', 'ContainersReady'), {
    status: 'False',
    message: 'containers with unready status: [proxy]',
  });
  t.is(cond(h, 'uid-unready', 'Ready')?.status, 'False');
  t.is(h.status('uid-unready').initContainerStatuses![0]!.ready, false);
  await h.kubelet.stop();
});

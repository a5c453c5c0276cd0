import test from 'ava';
import type { Container, LifecycleHandler, Pod } from '@nodelet/api';
import { BEHAVIOR_ANNOTATION_PREFIX as B } from '@nodelet/runtime-fake';
import { type Harness, makePod, recordStarts, startHarness } from '../test-harness.js';

/**
 * Lifecycle hooks on the fake runtime, under virtual time: postStart holds the container back from
 * Running until it returns and, failing, kills it (restarted at the CrashLoopBackOff schedule);
 * preStop runs before StopContainer and its time counts against the grace period, with at least 2 s
 * left for the container after it.
 */

const withHooks = (
  name: string,
  lifecycle: { postStart?: LifecycleHandler; preStop?: LifecycleHandler },
  spec: Partial<NonNullable<Pod['spec']>> = {},
  annotations: Record<string, string> = {},
  extra: Partial<Container> = {},
): Pod =>
  makePod(
    name,
    {
      containers: [
        { name: 'main', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent', lifecycle, ...extra },
      ],
      ...spec,
    },
    annotations,
  );

/** The pod events the kubelet publishes, as `<type> <reason>: <message>`, from now on. */
function recordEvents(h: Harness): string[] {
  const seen: string[] = [];
  h.bus.subscribe('[Kubelet] Pod Event', (e) => seen.push(`${e.eventType} ${e.reason}: ${e.message}`));
  return seen;
}

/** Every StopContainer, with the virtual time it was called at and its timeout (seconds). */
function recordStops(h: Harness): { at: number; timeout: number }[] {
  const stops: { at: number; timeout: number }[] = [];
  const stop = h.runtime.stopContainer.bind(h.runtime);
  h.runtime.stopContainer = async (req: Parameters<typeof stop>[0]) => {
    stops.push({ at: h.clock.elapsed(), timeout: Number(req.timeout) });
    return stop(req);
  };
  return stops;
}

const mainStatus = (h: Harness, uid: string) => h.status(uid).containerStatuses?.[0];

test('postStart: the container shows Running only once its hook returned', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const starts = recordStarts(h);
  h.source.set([withHooks('slow-hook', { postStart: { sleep: { seconds: 5 } } })]);
  await h.clock.advance(1_000);
  t.is(starts.length, 1, 'StartContainer was called');
  const startedAt = starts[0]!.at;
  await h.clock.advance(startedAt + 4_900 - h.clock.elapsed());
  t.falsy(mainStatus(h, 'uid-slow-hook')?.state?.running, 'not Running while the hook sleeps');
  t.not(h.status('uid-slow-hook').phase, 'Running');
  await h.clock.advance(200);
  t.truthy(mainStatus(h, 'uid-slow-hook')?.state?.running, 'Running once it returned');
  t.is(h.status('uid-slow-hook').phase, 'Running');
});

test('postStart fails: FailedPostStartHook, the container is killed and restarted with back-off', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const starts = recordStarts(h);
  const seen = recordEvents(h);
  h.source.set([
    withHooks('bad-hook', { postStart: { exec: { command: ['sh', '-c', 'echo no; exit 3'] } } }),
  ]);
  await h.clock.advance(500);
  const waiting = mainStatus(h, 'uid-bad-hook')?.state?.waiting;
  t.is(waiting?.reason, 'PostStartHookError');
  t.is(
    waiting?.message,
    'Exec lifecycle hook ([sh -c echo no; exit 3]) for Container "main" in Pod "bad-hook_default(uid-bad-hook)" ' +
      `failed - error: command 'sh -c echo no; exit 3' exited with 3: , message: "no\\n"`,
  );
  t.true(seen.includes('Warning FailedPostStartHook: PostStartHook failed'), seen.join('\n'));
  t.true(seen.includes('Normal Killing: FailedPostStartHook'), seen.join('\n'));
  await h.clock.advance(120_000);
  const at = starts.map((s) => Math.round(s.at / 1000));
  const gaps = at.slice(1).map((s, i) => s - at[i]!);
  t.log('started at', at.join(' '), 's');
  t.true(gaps.length >= 3, `restarted again and again: ${gaps.join(', ')}`);
  // The first restart at once, as for any container's first death; then 10, 20, 40 s.
  t.deepEqual(gaps.slice(1, 4), [10, 20, 40]);
  t.is(mainStatus(h, 'uid-bad-hook')?.restartCount, starts.length - 1);
});

test('preStop sleeps 5 s of a 10 s grace: SIGTERM comes 5 s after the deletion, the pod is gone within 10 s', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const stops = recordStops(h);
  h.source.set([
    withHooks('drain', { preStop: { sleep: { seconds: 5 } } }, { terminationGracePeriodSeconds: 10 }),
  ]);
  await h.clock.advance(2_000);
  t.truthy(mainStatus(h, 'uid-drain')?.state?.running);
  const deletedAt = h.clock.elapsed();
  h.source.set([]);
  await h.clock.advance(4_900);
  t.deepEqual(stops, [], 'no SIGTERM while the hook runs');
  await h.clock.advance(200);
  t.deepEqual(stops, [{ at: deletedAt + 5_000, timeout: 5 }], 'then StopContainer with the 5 s left');
  await h.clock.advance(4_900);
  t.is(h.kubelet.podList().items.length, 0, 'gone within the grace period');
});

test('preStop outlives the grace period: cut off at 10 s, the container still gets 2 s after SIGTERM', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const stops = recordStops(h);
  h.source.set([
    withHooks(
      'stubborn',
      { preStop: { sleep: { seconds: 60 } } },
      { terminationGracePeriodSeconds: 10 },
      { [`${B}main`]: 'ignoreStop=true' },
    ),
  ]);
  await h.clock.advance(2_000);
  const [container] = (await h.runtime.listContainers({})).containers;
  const deletedAt = h.clock.elapsed();
  h.source.set([]);
  await h.clock.advance(10_100);
  t.deepEqual(stops, [{ at: deletedAt + 10_000, timeout: 2 }]);
  await h.clock.advance(1_800);
  const running = await h.runtime.containerStatus({ containerId: container!.id, verbose: false });
  t.is(running.status?.state, 1 /* RUNNING */, 'SIGTERM ignored, not killed before the 2 s');
  await h.clock.advance(5_000);
  t.is(h.kubelet.podList().items.length, 0, 'killed after the 2 s, then removed');
});

test('preStop fails: FailedPreStopHook without the output, and the container is stopped anyway', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const stops = recordStops(h);
  const seen = recordEvents(h);
  h.source.set([
    withHooks(
      'secretive',
      { preStop: { exec: { command: ['sh', '-c', 'echo s3cr3t; exit 1'] } } },
      { terminationGracePeriodSeconds: 10 },
    ),
  ]);
  await h.clock.advance(2_000);
  h.source.set([]);
  await h.clock.advance(1);
  t.true(seen.includes('Warning FailedPreStopHook: PreStopHook failed'), seen.join('\n'));
  t.false(
    seen.some((e) => e.includes('s3cr3t')),
    'the output stays out of the events',
  );
  t.is(stops.length, 1);
  t.is(stops[0]!.timeout, 10, 'the hook took no time: the whole grace period is left');
  await h.clock.advance(5_000);
  t.is(h.kubelet.podList().items.length, 0);
});

test('a hook on a port name the container does not have: a clear waiting message; the next pod runs', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  h.source.set([
    withHooks('no-port', { postStart: { httpGet: { path: '/ready', port: 'metrics', host: '127.0.0.1' } } }),
    makePod('neighbour', {}),
  ]);
  await h.clock.advance(500);
  const waiting = mainStatus(h, 'uid-no-port')?.state?.waiting;
  t.is(waiting?.reason, 'PostStartHookError');
  t.is(
    waiting?.message,
    'HTTP lifecycle hook (/ready) for Container "main" in Pod "no-port_default(uid-no-port)" failed - ' +
      'error: port "metrics" not found in the ports of container "main"',
  );
  t.is(h.status('uid-neighbour').phase, 'Running');
});

test('a tcpSocket hook (kept by the API, never run upstream) fails with a message saying so', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  h.source.set([withHooks('tcp', { postStart: { tcpSocket: { port: 80 } } as LifecycleHandler })]);
  await h.clock.advance(500);
  const waiting = mainStatus(h, 'uid-tcp')?.state?.waiting;
  t.is(waiting?.reason, 'PostStartHookError');
  t.regex(waiting?.message ?? '', /^Cannot run handler: invalid handler: postStart sets tcpSocket/);
});

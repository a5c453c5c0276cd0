import { Socket } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import type { Container, Pod } from '@nodelet/api';
import { makePod } from '../test-harness.js';
import { startFakeNode } from './test-fake-node.js';
import { grpcHandler, httpGetHandler, tcpSocketHandler } from './handlers.js';
import type { ProbeHandler } from './probe-handler.js';

/**
 * A kubelet on the fake runtime, composed as `nodelet up` and `nodelet kubelet --runtime fake` compose it
 * (the runtime-fake plugin, then the kubelet plugin, on one kernel), under virtual time. Its pods' IPs
 * reach no host, so their httpGet, tcpSocket and grpc probes are answered by the fake runtime's
 * `probe.handler`s: the built-in network handlers are never called and no socket is opened.
 *
 * Both are watched without letting anything out: the built-in handlers are replaced by stubs that
 * record the call and fail, and `Socket.prototype.connect` records the address and refuses to dial it.
 * Serial, because the spies are process-wide.
 */

const builtIns: ProbeHandler[] = [httpGetHandler, tcpSocketHandler, grpcHandler];

function spy(t: ExecutionContext): { handlerCalls: string[]; connects: string[] } {
  const handlerCalls: string[] = [];
  const connects: string[] = [];
  for (const h of builtIns) {
    const original = h.probe;
    (h as { probe: ProbeHandler['probe'] }).probe = async (ctx) => {
      handlerCalls.push(`${h.type} ${ctx.podIP}`);
      return { result: 'failure', output: 'the built-in handler was called' };
    };
    t.teardown(() => void ((h as { probe: ProbeHandler['probe'] }).probe = original));
  }
  const connect = Socket.prototype.connect;
  Socket.prototype.connect = function (this: Socket, ...args: unknown[]) {
    const opts = args[0] as { host?: string; port?: number } | number;
    connects.push(typeof opts === 'object' ? `${opts.host}:${opts.port}` : `${String(args[1])}:${opts}`);
    this.destroy(new Error('test: no sockets for fake pods'));
    return this;
  } as typeof connect;
  t.teardown(() => void (Socket.prototype.connect = connect));
  return { handlerCalls, connects };
}

const probed = (name: string, probe: Pick<Container, 'readinessProbe'>['readinessProbe']): Container => ({
  name,
  image: 'busybox:1.36',
  imagePullPolicy: 'IfNotPresent',
  ports: [{ name: 'serve', containerPort: 8080 }],
  readinessProbe: { ...probe, periodSeconds: 1, failureThreshold: 1 },
  livenessProbe: { ...probe, periodSeconds: 1, failureThreshold: 3 },
});

const threeKinds = (name: string, annotations: Record<string, string> = {}): Pod =>
  makePod(
    name,
    {
      containers: [
        probed('web', { httpGet: { path: '/healthz', port: 'serve' } }),
        probed('db', { tcpSocket: { port: 5432 } }),
        probed('api', { grpc: { port: 9090 } }),
      ],
    },
    annotations,
  );

const readyCondition = (s: NonNullable<Pod['status']>) =>
  s.conditions?.find((c) => c.type === 'Ready')?.status;

test.serial(
  'httpGet, tcpSocket and grpc probes of a fake pod: Ready and staying Ready, no socket opened',
  async (t) => {
    const { handlerCalls, connects } = spy(t);
    const { clock, source, status } = await startFakeNode(t);
    source.set([threeKinds('sim')]);
    await clock.advance(2_000);
    t.regex(status('sim').podIP ?? '', /^10\.244\.\d+\.\d+$/, 'a simulated pod IP');
    t.is(readyCondition(status('sim')), 'True');
    for (let i = 0; i < 6; i++) {
      await clock.advance(10_000);
      t.is(readyCondition(status('sim')), 'True', `still Ready at ${2 + 10 * (i + 1)} s`);
    }
    const containers = status('sim').containerStatuses ?? [];
    t.deepEqual(
      containers.map((c) => [c.name, c.ready, c.restartCount]),
      [
        ['web', true, 0],
        ['db', true, 0],
        ['api', true, 0],
      ],
    );
    t.deepEqual(handlerCalls, [], 'the built-in network handlers were never called');
    t.deepEqual(connects, [], 'no socket was opened');
  },
);

test.serial('readinessFail makes the pod NotReady and keeps it running', async (t) => {
  const { handlerCalls, connects } = spy(t);
  const { clock, source, status, kubelet } = await startFakeNode(t);
  source.set([threeKinds('unready', { 'runtime-fake.nodelet.dev/db': 'readinessFail' })]);
  await clock.advance(30_000);
  const s = status('unready');
  t.is(readyCondition(s), 'False');
  const byName = new Map((s.containerStatuses ?? []).map((c) => [c.name, c]));
  t.false(byName.get('db')!.ready);
  t.true(byName.get('web')!.ready);
  t.true(byName.get('api')!.ready);
  t.is(byName.get('db')!.restartCount, 0, 'liveness still passes');
  const events = (kubelet.podEvents('default', 'unready') as { items: { reason: string; message: string }[] })
    .items;
  t.true(
    events.some(
      (e) =>
        e.reason === 'Unhealthy' &&
        /^Readiness probe failed: dial tcp 10\.244\.\d+\.\d+:5432: connect: connection refused$/.test(
          e.message,
        ),
    ),
    JSON.stringify(events),
  );
  t.deepEqual(handlerCalls, []);
  t.deepEqual(connects, []);
});

test.serial(
  'probeFailAfter: liveness restarts the container, again and again, with CrashLoop back-off',
  async (t) => {
    const { handlerCalls, connects } = spy(t);
    const { clock, source, status, kubelet } = await startFakeNode(t);
    // Each new container passes 2 probes of each type, then fails: ready, unready, restarted.
    source.set([threeKinds('flaky', { 'runtime-fake.nodelet.dev/web': 'probeFailAfter=2' })]);
    const web = () => (status('flaky').containerStatuses ?? []).find((c) => c.name === 'web')!;
    await clock.advance(1_500);
    t.true(web().ready, 'healthy for its first probes');
    await clock.advance(1_000);
    t.false(web().ready, 'readiness fails at the third probe');
    t.is(readyCondition(status('flaky')), 'False');

    // Seconds (virtual) at which the restart count went up, and the back-off messages seen in between.
    const restartedAt: number[] = [];
    const backOffs = new Set<string>();
    for (let s = 3; s <= 120; s++) {
      await clock.advance(1_000);
      if ((web().restartCount ?? 0) > restartedAt.length) restartedAt.push(s);
      const waiting = web().state?.waiting;
      if (waiting?.reason === 'CrashLoopBackOff') backOffs.add(waiting.message!.split(' restarting')[0]!);
    }
    t.log('restarted at', restartedAt, 'back-offs', [...backOffs]);
    t.true(restartedAt.length >= 3, 'restarted again and again');
    // Without back-off the container would be restarted every ~5 s (2 good probes, 3 failures): 24 times.
    const gaps = restartedAt.slice(1).map((at, i) => at - restartedAt[i]!);
    t.true(
      gaps.slice(1).every((gap, i) => gap > gaps[i]!),
      `the waits between restarts grow: ${gaps.join(', ')} s`,
    );
    t.deepEqual([...backOffs].slice(0, 2), ['back-off 10s', 'back-off 20s'], 'CrashLoopBackOff, doubling');
    const events = (kubelet.podEvents('default', 'flaky') as { items: { reason: string; message: string }[] })
      .items;
    t.true(
      events.some(
        (e) =>
          e.reason === 'Killing' && e.message === 'Container web failed liveness probe, will be restarted',
      ),
    );
    t.true(events.some((e) => e.message === 'Liveness probe failed: HTTP probe failed with statuscode: 500'));
    const others = (status('flaky').containerStatuses ?? []).filter((c) => c.name !== 'web');
    t.deepEqual(
      others.map((c) => [c.name, c.restartCount]),
      [
        ['db', 0],
        ['api', 0],
      ],
    );
    t.deepEqual(handlerCalls, []);
    t.deepEqual(connects, []);
  },
);

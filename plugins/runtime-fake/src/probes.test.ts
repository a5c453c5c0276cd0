import test from 'ava';
import type { Container, Probe } from '@nodelet/api';
import type { ProbeContext, ProbeHandler, ProbeType } from '@nodelet/cri';
import { createLogger, MemorySink, type VirtualClock } from '@nodelet/kernel';
import { parseBehavior, resolveBehavior } from './behavior.js';
import type { FakeRuntime } from './fake-runtime.js';
import { runPod, setup, startContainer, track } from './fixtures.js';
import { fakeProbeHandlers } from './probes.js';

const container: Container = {
  name: 'app',
  image: 'busybox',
  ports: [{ name: 'http', containerPort: 8080 }],
};

function prober(runtime: FakeRuntime, clock: VirtualClock) {
  const handlers = new Map<string, ProbeHandler>(fakeProbeHandlers(runtime).map((h) => [h.type, h]));
  return (containerId: string, probeType: ProbeType, probe: Probe, podIP = '10.244.0.2') => {
    const type = Object.keys(probe).find((k) => handlers.has(k))!;
    const ctx: ProbeContext = {
      probeType,
      probe,
      pod: { metadata: { name: 'p' } },
      container,
      containerId,
      podIP,
      timeoutMs: (probe.timeoutSeconds ?? 1) * 1000,
      runtime,
      clock,
      logger: createLogger({ sink: new MemorySink().sink }),
      userAgent: 'kube-probe/1.34',
    };
    return handlers.get(type)!.probe(ctx);
  };
}

const http: Probe = { httpGet: { path: '/healthz', port: 'http' } };
const tcp: Probe = { tcpSocket: { port: 8080 } };
const grpc: Probe = { grpc: { port: 9090 }, timeoutSeconds: 2 };

async function started(annotation?: string) {
  const { clock, runtime } = setup();
  const annotations: Record<string, string> = annotation
    ? { 'runtime-fake.nodelet.dev/app': annotation }
    : {};
  const pod = await runPod(runtime, 'p', { annotations });
  const id = await startContainer(runtime, pod, 'app');
  return { clock, runtime, id, probe: prober(runtime, clock) };
}

test('the probe keys parse; a container without them is healthy', (t) => {
  t.deepEqual(parseBehavior('probeFail,probeFailAfter=3,probeTimeout,readinessFail=false'), {
    probeFail: true,
    probeFailAfter: 3,
    probeTimeout: true,
    readinessFail: false,
  });
  t.throws(() => parseBehavior('probeFailAfter=soon'), {
    message: '"probeFailAfter" takes a whole number such as 3, not "soon"',
  });
  t.is(resolveBehavior([{ exitAfterMs: 5 }]).probes, undefined);
  t.deepEqual(resolveBehavior([{ livenessFail: true }, { startupFail: true }]).probes, {
    failing: ['liveness', 'startup'],
    failAfter: undefined,
    timeout: false,
  });
});

test('unscripted: every probe succeeds, with what upstream says on success', async (t) => {
  const { id, probe } = await started();
  t.deepEqual(await probe(id, 'readiness', http), { result: 'success', output: '' });
  t.deepEqual(await probe(id, 'liveness', tcp), { result: 'success', output: '' });
  t.deepEqual(await probe(id, 'startup', grpc), { result: 'success', output: 'service healthy' });
});

test('probeFail: each kind fails in upstream words, naming the pod IP and resolved port', async (t) => {
  const { id, probe } = await started('probeFail');
  t.deepEqual(await probe(id, 'liveness', http), {
    result: 'failure',
    output: 'HTTP probe failed with statuscode: 500',
  });
  t.deepEqual(await probe(id, 'readiness', tcp), {
    result: 'failure',
    output: 'dial tcp 10.244.0.2:8080: connect: connection refused',
  });
  t.deepEqual(await probe(id, 'startup', grpc), {
    result: 'failure',
    output: 'service unhealthy (responded with "NOT_SERVING")',
  });
});

test('readinessFail fails only readiness probes', async (t) => {
  const { id, probe } = await started('readinessFail');
  t.is((await probe(id, 'readiness', http)).result, 'failure');
  t.is((await probe(id, 'liveness', http)).result, 'success');
  t.is((await probe(id, 'startup', tcp)).result, 'success');
});

test('probeFailAfter=N: N probes of each type succeed, then every one fails', async (t) => {
  const { id, probe } = await started('probeFailAfter=2');
  const results = [];
  for (let i = 0; i < 4; i++) results.push((await probe(id, 'liveness', tcp)).result);
  t.deepEqual(results, ['success', 'success', 'failure', 'failure']);
  t.is((await probe(id, 'readiness', tcp)).result, 'success', 'readiness is counted on its own');
});

test('probeTimeout: the probe fails after its timeout on the clock, worded as a timeout', async (t) => {
  const { clock, id, probe } = await started('probeTimeout');
  const h = track(probe(id, 'liveness', http));
  await clock.advance(999);
  t.false(h.settled, 'not before timeoutSeconds');
  await clock.advance(1);
  t.deepEqual(await h.promise, {
    result: 'failure',
    output:
      'Get "http://10.244.0.2:8080/healthz": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
  });
  const g = track(probe(id, 'liveness', grpc));
  await clock.advance(2000);
  t.deepEqual(await g.promise, {
    result: 'failure',
    output: 'timeout: health rpc did not complete within 2s',
  });
  const c = track(probe(id, 'liveness', { tcpSocket: { port: 80, host: '10.0.0.1' } }));
  await clock.advance(1000);
  t.deepEqual(await c.promise, { result: 'failure', output: 'dial tcp 10.0.0.1:80: i/o timeout' });
});

test('probeTimeout with probeFailAfter: the failing ones time out', async (t) => {
  const { clock, id, probe } = await started('probeFailAfter=1,probeTimeout');
  t.is((await probe(id, 'readiness', tcp)).result, 'success');
  const second = track(probe(id, 'readiness', tcp));
  await clock.advance(1000);
  t.is((await second.promise).output, 'dial tcp 10.244.0.2:8080: i/o timeout');
});

test('scriptProbes re-scripts a running container now; only probe keys are taken', async (t) => {
  const { runtime, id, probe } = await started();
  t.is((await probe(id, 'readiness', http)).result, 'success');
  runtime.scriptProbes(id, 'readinessFail');
  t.is((await probe(id, 'readiness', http)).result, 'failure');
  runtime.scriptProbes(id, '');
  t.is((await probe(id, 'readiness', http)).result, 'success');
  t.throws(() => runtime.scriptProbes(id, 'exitAfter=1s'), {
    message: /^scriptProbes takes only probe keys \(.*\); not exitAfterMs$/,
  });
  await t.throwsAsync(probe('nope', 'readiness', http), { message: /nope/ });
});

test('a named port the container does not have is an error (unknown), as the kubelet resolves it', async (t) => {
  const { id, probe } = await started();
  await t.throwsAsync(probe(id, 'readiness', { tcpSocket: { port: 'metrics' } }), {
    message: 'port "metrics" not found in the ports of container "app"',
  });
});

import test from 'ava';
import type { Pod } from '@nodelet/api';
import { apiPod, nodeName, startCluster } from './test-harness.js';

const B = 'runtime-fake.nodelet.dev/';

const apiStatus = (h: { api: { pods: Map<string, Pod> } }, name: string, ns = 'default') =>
  h.api.pods.get(`${ns}/${name}`)?.status;

test('a pod created in the API runs, and its status shows Running with the pod IP within 1 s', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  await h.api.createPod(apiPod('web'));
  const ms = await h.clock.advanceUntil(() => apiStatus(h, 'web')?.phase === 'Running', {
    stepMs: 50,
    maxMs: 5_000,
  });
  t.true(ms <= 1_000, `Running in the API after ${ms} ms`);
  const status = apiStatus(h, 'web')!;
  t.regex(status.podIP ?? '', /^\d+\.\d+\.\d+\.\d+$/);
  t.deepEqual(status.podIPs, [{ ip: status.podIP }]);
  t.is(status.hostIP, '192.0.2.10');
  t.is(status.containerStatuses![0]!.ready, true);
  t.truthy(status.containerStatuses![0]!.state!.running);
  t.is(status.conditions!.find((c) => c.type === 'Ready')!.status, 'True');
  t.is(h.runtime.counts().running, 1);
  // Unchanged status: no more writes.
  const writes = h.api.callsOf('patch', 'pod/default/web/status').length;
  await h.clock.advance(60_000);
  t.is(h.api.callsOf('patch', 'pod/default/web/status').length, writes, 'no write when nothing changed');
  await h.kubelet.stop();
});

test('watch: pods are listed with spec.nodeName, followed by watch, and listed again after 410 Gone', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  t.deepEqual(h.api.callsOf('list', 'pods')[0]!.body, `spec.nodeName=${nodeName}`);
  await h.api.createPod(apiPod('other', { nodeName: 'node2' }));
  await h.api.createPod(apiPod('a'));
  await h.clock.advance(2_000);
  t.is(h.runtime.counts().running, 1, "another node's pod is not ours");
  h.api.bookmark();
  h.api.compact();
  await h.api.createPod(apiPod('b')); // created while the watch is gone
  await h.clock.advance(3_000);
  t.is(h.api.callsOf('list', 'pods').length, 2, 'listed again after 410');
  t.is(apiStatus(h, 'b')?.phase, 'Running');
  t.is(h.runtime.counts().running, 2);
  await h.kubelet.stop();
});

test('admission: a pod that does not fit is Failed with OutOfcpu / OutOfmemory / NodeAffinity, and not run', async (t) => {
  const h = await startCluster({ apiServer: { capacity: { cpu: '2', memory: '1Gi', pods: '110' } } });
  await h.clock.advance(1_000);
  const res = (cpu: string, memory: string) => ({ resources: { requests: { cpu, memory } } });
  await h.api.createPod(
    apiPod('fits', { containers: [{ name: 'main', image: 'busybox:1.36', ...res('1500m', '100Mi') }] }),
  );
  await h.clock.advance(1_000);
  await h.api.createPod(
    apiPod('too-much-cpu', { containers: [{ name: 'main', image: 'busybox:1.36', ...res('1', '1Mi') }] }),
  );
  await h.api.createPod(
    apiPod('too-much-mem', { containers: [{ name: 'main', image: 'busybox:1.36', ...res('10m', '2Gi') }] }),
  );
  await h.api.createPod(apiPod('wrong-node', { nodeSelector: { disktype: 'ssd' } }));
  await h.clock.advance(2_000);

  const cpu = apiStatus(h, 'too-much-cpu')!;
  t.is(cpu.phase, 'Failed');
  t.is(cpu.reason, 'OutOfcpu');
  t.is(
    cpu.message,
    "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000",
  );
  const mem = apiStatus(h, 'too-much-mem')!;
  t.is(mem.reason, 'OutOfmemory');
  t.regex(
    mem.message!,
    /^Pod was rejected: Node didn't have enough resource: memory, requested: 2147483648, used: 104857600, capacity: \d+$/,
  );
  const sel = apiStatus(h, 'wrong-node')!;
  t.is(sel.reason, 'NodeAffinity');
  t.is(
    sel.message,
    "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
  );
  t.is(h.runtime.counts().running, 1, 'only the pod that fits runs');
  const warnings = [...h.api.events.values()].filter((e) => e.type === 'Warning').map((e) => e.reason);
  t.true(warnings.includes('OutOfcpu') && warnings.includes('NodeAffinity'));

  // A rejected pod that is deleted is removed at once: nothing runs.
  await h.api.deletePod('default', 'too-much-cpu', {});
  await h.clock.advance(1_000);
  t.false(h.api.pods.has('default/too-much-cpu'));
  await h.kubelet.stop();
});

test('deletion: terminated with the requested grace period, then the final delete (grace 0, UID precondition)', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  await h.api.createPod(apiPod('slow', {}, { [`${B}main`]: 'ignoreStop=true' }));
  await h.clock.advanceUntil(() => apiStatus(h, 'slow')?.phase === 'Running', { maxMs: 5_000 });
  const uid = h.api.pods.get('default/slow')!.metadata!.uid!;
  await h.api.deletePod('default', 'slow', { gracePeriodSeconds: 5 });
  const deletedAt = h.clock.elapsed();
  const ms = await h.clock.advanceUntil(() => !h.api.pods.has('default/slow'), {
    stepMs: 100,
    maxMs: 60_000,
  });
  t.true(ms >= 5_000 && ms <= 6_000, `gone ${ms} ms after the delete: the 5 s grace, then the final delete`);
  const final = h.api.callsOf('delete', 'pod/default/slow').at(-1)!;
  t.deepEqual(final.body, { gracePeriodSeconds: 0, uid });
  t.is(h.runtime.counts().running, 0);
  t.is(h.runtime.counts().containers, 0, 'containers removed');
  const killing = [...h.api.events.values()].find((e) => e.reason === 'Killing');
  t.is(killing?.message, 'Stopping container main');
  t.true(h.clock.elapsed() - deletedAt < 60_000);
  // It does not come back.
  await h.clock.advance(70_000);
  t.is(h.runtime.counts().sandboxes, 0);
  await h.kubelet.stop();
});

test('status: a container state change reaches the API within 1 s; a conflict is retried', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  await h.api.createPod(
    apiPod('job', { restartPolicy: 'Never' }, { [`${B}main`]: 'exitAfter=10s,exitCode=0' }),
  );
  await h.clock.advanceUntil(() => apiStatus(h, 'job')?.phase === 'Running', { maxMs: 5_000 });
  const { ApiError } = await import('@nodelet/client');
  h.api.failNext.set(
    'patch pod/default/job/status',
    new ApiError(409, 'Conflict', 'the object has been modified'),
  );
  const ran = await h.clock.advanceUntil(() => apiStatus(h, 'job')?.phase === 'Succeeded', {
    stepMs: 50,
    maxMs: 20_000,
  });
  t.true(ran <= 11_000, `Succeeded in the API ${ran} ms later (exit at 10 s)`);
  t.is(apiStatus(h, 'job')!.containerStatuses![0]!.state!.terminated!.reason, 'Completed');
  t.true(h.api.callsOf('get', 'pod/default/job').length >= 1, 're-read after the conflict');
  await h.kubelet.stop();
});

test('status keeps the scheduler condition and only writes what changed', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  const pod = await h.api.createPod(apiPod('sched'));
  await h.api.patchPodStatus('default', 'sched', {
    status: {
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: '2025-12-31T00:00:00Z' },
        { type: 'example.com/gate', status: 'True' },
      ],
    },
  });
  void pod;
  await h.clock.advanceUntil(() => apiStatus(h, 'sched')?.phase === 'Running', { maxMs: 5_000 });
  const conditions = apiStatus(h, 'sched')!.conditions!;
  t.is(conditions.find((c) => c.type === 'PodScheduled')!.lastTransitionTime, '2025-12-31T00:00:00Z');
  t.truthy(conditions.find((c) => c.type === 'example.com/gate'));
  t.truthy(conditions.find((c) => c.type === 'Ready'));
  await h.kubelet.stop();
});

test('events: Pulled, Created, Started for a new pod; Unhealthy and Killing for a failed liveness probe', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  await h.api.createPod(apiPod('ev'));
  await h.clock.advanceUntil(() => apiStatus(h, 'ev')?.phase === 'Running', { maxMs: 5_000 });
  await h.clock.advance(1_000);
  const events = [...h.api.events.values()].filter((e) => e.involvedObject.name === 'ev');
  t.deepEqual(
    events.map((e) => [e.type, e.reason, e.message, e.involvedObject.fieldPath]),
    [
      ['Normal', 'Pulling', 'Pulling image "busybox:1.36"', 'spec.containers{main}'],
      ['Normal', 'Pulled', 'Successfully pulled image "busybox:1.36"', 'spec.containers{main}'],
      ['Normal', 'Created', 'Created container: main', 'spec.containers{main}'],
      ['Normal', 'Started', 'Started container main', 'spec.containers{main}'],
    ],
  );
  const e = events[0]!;
  t.is(e.source?.component, 'kubelet');
  t.is(e.source?.host, nodeName);
  t.is(e.involvedObject.uid, h.api.pods.get('default/ev')!.metadata!.uid);
  t.is(e.count, 1);

  // The image is there now; a liveness probe that fails restarts the container.
  await h.api.createPod(
    apiPod('sick', {
      containers: [
        {
          name: 'main',
          image: 'busybox:1.36',
          livenessProbe: { exec: { command: ['false'] }, periodSeconds: 1, failureThreshold: 1 },
        },
      ],
    }),
  );
  await h.clock.advance(5_000);
  const sick = [...h.api.events.values()].filter((e) => e.involvedObject.name === 'sick');
  const byReason = new Map(sick.map((e) => [e.reason, e]));
  t.is(byReason.get('Pulled')?.message, 'Container image "busybox:1.36" already present on machine');
  t.is(byReason.get('Unhealthy')?.type, 'Warning');
  t.regex(byReason.get('Unhealthy')?.message ?? '', /^Liveness probe failed/);
  t.is(byReason.get('Killing')?.message, 'Container main failed liveness probe, will be restarted');
  await h.kubelet.stop();
});

test('crash loop: BackOff events are one Event with a growing count', async (t) => {
  const h = await startCluster();
  await h.clock.advance(1_000);
  await h.api.createPod(apiPod('crash', {}, { [`${B}main`]: 'exitAfter=0s,exitCode=1' }));
  await h.clock.advance(120_000);
  const backoff = [...h.api.events.values()].filter((e) => e.reason === 'BackOff');
  t.is(backoff.length, 1);
  t.regex(backoff[0]!.message!, /^Back-off restarting failed container main in pod crash_default\(.+\)$/);
  t.true(backoff[0]!.count! >= 3, `count ${backoff[0]!.count}`);
  t.true(h.api.callsOf('patch', 'event/').length >= 2, 'repeats are patches of the count');
  const started = [...h.api.events.values()].find(
    (e) => e.reason === 'Started' && e.involvedObject.name === 'crash',
  );
  t.true(started!.count! >= 3);
  await h.kubelet.stop();
});

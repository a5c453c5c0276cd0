import test from 'ava';
import { createLogger, MemorySink, settle, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import { rfc3339, type KubeObject } from '../object.js';
import { jobs } from '../resources/jobs.js';
import { namespaces } from '../resources/namespaces.js';
import { pods } from '../resources/pods.js';
import { RevisionStore } from '../storage/revision-store.js';
import { JobController } from './job-controller.js';
import { TtlAfterFinishedController } from './ttl-after-finished-controller.js';
import { GarbageCollector } from './garbage-collector.js';

// The Job controller one sync at a time, on an in-memory store and a virtual clock; pods "run" by having
// their status set in the store, as a kubelet would.

function setup() {
  const clock = new VirtualClock();
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock,
    types: [namespaces, pods, jobs],
  });
  registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const logger = createLogger({ sink: new MemorySink().sink });
  const controller = new JobController(registry, clock, logger);
  return { clock, registry, controller, logger };
}

function job(
  name: string,
  spec: Record<string, unknown> = {},
  podSpec: Record<string, unknown> = {},
): object {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name },
    spec: {
      template: {
        spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox' }], ...podSpec },
      },
      ...spec,
    },
  };
}

const livePods = (registry: Registry) =>
  registry.store
    .listAll('pods', 'default')
    .map((s) => s.object)
    .filter((p) => !p.metadata.deletionTimestamp && !['Succeeded', 'Failed'].includes(p.status?.phase));

const getJob = (registry: Registry, name: string) => registry.store.get('jobs', 'default', name)!.object;

/** Ends a pod as its kubelet would: the container terminated with `exitCode` at the clock's now. */
function finish(
  registry: Registry,
  clock: VirtualClock,
  pod: KubeObject,
  exitCode: number,
  extra: object = {},
) {
  registry.store.update('pods', 'default', pod.metadata.name!, (p) => {
    p.status = {
      phase: exitCode === 0 ? 'Succeeded' : 'Failed',
      containerStatuses: [
        {
          name: 'main',
          restartCount: 0,
          state: { terminated: { exitCode, finishedAt: rfc3339(clock.now()) } },
        },
      ],
      ...extra,
    };
    return p;
  });
}

/** Lets the started controllers' queues run until `check` holds (bounded: they need no real time). */
async function until(check: () => unknown): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await settle();
}

const conditionTypes = (j: KubeObject) =>
  (j.status?.conditions ?? []).map((c: any) => `${c.type}:${c.reason}`);

test('the API server defaults a Job and generates its selector and pod labels', (t) => {
  const { registry } = setup();
  const { object } = registry.create(jobs, 'default', job('pi'));
  const uid = object.metadata.uid;
  t.like(object.spec, {
    parallelism: 1,
    completions: 1,
    backoffLimit: 6,
    completionMode: 'NonIndexed',
    suspend: false,
  });
  t.deepEqual(object.spec.selector, { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } });
  t.deepEqual(object.spec.template.metadata.labels, {
    'batch.kubernetes.io/controller-uid': uid,
    'batch.kubernetes.io/job-name': 'pi',
    'controller-uid': uid,
    'job-name': 'pi',
  });
  const err = t.throws(() => registry.create(jobs, 'default', job('bad', {}, { restartPolicy: 'Always' })));
  t.regex(
    err!.message,
    /spec\.template\.spec\.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"/,
  );
  const indexed = t.throws(() =>
    registry.create(jobs, 'default', job('idx', { completionMode: 'Indexed', parallelism: 2 })),
  );
  t.regex(indexed!.message, /spec\.completions: Required value: when completion mode is Indexed/);
});

test('completions 3, parallelism 2: two pods at a time until three succeeded, then Complete', (t) => {
  const { clock, registry, controller } = setup();
  const { object: created } = registry.create(
    jobs,
    'default',
    job('work', { completions: 3, parallelism: 2 }),
  );
  controller.sync('default/work');
  const first = livePods(registry);
  t.is(first.length, 2);
  for (const p of first) {
    t.regex(p.metadata.name!, /^work-[a-z0-9]{5}$/);
    t.like(p.metadata.ownerReferences![0], {
      kind: 'Job',
      name: 'work',
      uid: created.metadata.uid,
      controller: true,
    });
    t.is(p.metadata.labels!['batch.kubernetes.io/job-name'], 'work');
  }
  t.like(getJob(registry, 'work').status, { active: 2, ready: 0, startTime: rfc3339(clock.now()) });
  finish(registry, clock, first[0]!, 0);
  controller.sync('default/work');
  t.is(livePods(registry).length, 2, 'one replacement: two completions remain');
  finish(registry, clock, first[1]!, 0);
  controller.sync('default/work');
  t.is(livePods(registry).length, 1, 'only one completion remains');
  t.like(getJob(registry, 'work').status, { active: 1, succeeded: 2 });
  finish(registry, clock, livePods(registry)[0]!, 0);
  controller.sync('default/work');
  const done = getJob(registry, 'work');
  t.deepEqual(conditionTypes(done), ['SuccessCriteriaMet:CompletionsReached', 'Complete:CompletionsReached']);
  t.like(done.status, { succeeded: 3, completionTime: rfc3339(clock.now()), uncountedTerminatedPods: {} });
  t.is(done.status.active, undefined);
  t.deepEqual(jobs.row(done, clock.now()).slice(1, 4), ['Complete', '3/3', '0s']);
});

test('a failing Job waits 10 s, then 20 s between replacements, and fails at backoffLimit', async (t) => {
  const { clock, registry, controller } = setup();
  registry.create(jobs, 'default', job('flaky', { backoffLimit: 2 }));
  controller.start();
  t.teardown(() => controller.stop());
  const waitPods = async (n: number) => {
    await until(() => livePods(registry).length === n);
    return livePods(registry);
  };
  const [a] = await waitPods(1);
  finish(registry, clock, a!, 1);
  await waitPods(0);
  await clock.advance(9_999);
  t.is((await waitPods(0)).length, 0, 'no replacement within the first 10 s');
  await clock.advance(1);
  const [b] = await waitPods(1);
  t.truthy(b, 'replaced after 10 s');
  finish(registry, clock, b!, 1);
  await clock.advance(19_999);
  t.is((await waitPods(0)).length, 0, 'the second backoff is 20 s');
  await clock.advance(1);
  const [c] = await waitPods(1);
  t.truthy(c);
  finish(registry, clock, c!, 1);
  await until(() => getJob(registry, 'flaky').status.conditions);
  const failed = getJob(registry, 'flaky');
  t.deepEqual(conditionTypes(failed), ['FailureTarget:BackoffLimitExceeded', 'Failed:BackoffLimitExceeded']);
  t.is(failed.status.conditions[1].message, 'Job has reached the specified backoff limit');
  t.is(failed.status.failed, 3);
  t.is(failed.status.completionTime, undefined);
  t.is(jobs.row(failed, clock.now())[1], 'Failed');
});

test('activeDeadlineSeconds fails the Job on the clock and deletes its running pods', async (t) => {
  const { clock, registry, controller } = setup();
  registry.create(jobs, 'default', job('slow', { activeDeadlineSeconds: 30 }));
  controller.start();
  t.teardown(() => controller.stop());
  await until(() => livePods(registry).length > 0);
  t.is(livePods(registry).length, 1);
  await clock.advance(29_000);
  t.falsy(getJob(registry, 'slow').status.conditions);
  await clock.advance(1_000);
  await until(() => getJob(registry, 'slow').status.conditions?.[1]);
  const failed = getJob(registry, 'slow');
  t.deepEqual(conditionTypes(failed), ['FailureTarget:DeadlineExceeded', 'Failed:DeadlineExceeded']);
  t.is(failed.status.conditions[1].message, 'Job was active longer than specified deadline');
  t.is(livePods(registry).length, 0, 'the running pod was deleted');
});

test('Indexed: one pod per index with its annotation, label, env and hostname; completedIndexes', async (t) => {
  const { clock, registry, controller } = setup();
  registry.create(jobs, 'default', job('idx', { completionMode: 'Indexed', completions: 3, parallelism: 3 }));
  controller.sync('default/idx');
  const created = livePods(registry).sort((a, b) =>
    a.metadata.annotations!['batch.kubernetes.io/job-completion-index'].localeCompare(
      b.metadata.annotations!['batch.kubernetes.io/job-completion-index'],
    ),
  );
  t.deepEqual(
    created.map((p) => [p.metadata.labels!['batch.kubernetes.io/job-completion-index'], p.spec.hostname]),
    [
      ['0', 'idx-0'],
      ['1', 'idx-1'],
      ['2', 'idx-2'],
    ],
  );
  t.regex(created[1]!.metadata.name!, /^idx-1-[a-z0-9]{5}$/);
  t.deepEqual(created[0]!.spec.containers[0].env, [
    {
      name: 'JOB_COMPLETION_INDEX',
      valueFrom: {
        fieldRef: {
          apiVersion: 'v1',
          fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']",
        },
      },
    },
  ]);
  finish(registry, clock, created[0]!, 0);
  finish(registry, clock, created[2]!, 0);
  await clock.advance(1_000);
  finish(registry, clock, created[1]!, 1);
  controller.sync('default/idx');
  t.like(getJob(registry, 'idx').status, { succeeded: 2, failed: 1, completedIndexes: '0,2' });
  // Index 1 is re-created after its backoff.
  t.is(livePods(registry).length, 0);
  await clock.advance(10_000);
  controller.sync('default/idx');
  const [again] = livePods(registry);
  t.is(again!.metadata.labels!['batch.kubernetes.io/job-completion-index'], '1');
  finish(registry, clock, again!, 0);
  controller.sync('default/idx');
  t.like(getJob(registry, 'idx').status, { succeeded: 3, completedIndexes: '0-2' });
  t.is(getJob(registry, 'idx').status.conditions[1].type, 'Complete');
});

test('podFailurePolicy: an ignored disruption is replaced at once, an exit code fails the Job', (t) => {
  const { clock, registry, controller } = setup();
  registry.create(
    jobs,
    'default',
    job('policy', {
      backoffLimit: 0,
      podFailurePolicy: {
        rules: [
          { action: 'FailJob', onExitCodes: { containerName: 'main', operator: 'In', values: [42] } },
          { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] },
        ],
      },
    }),
  );
  controller.sync('default/policy');
  const [first] = livePods(registry);
  finish(registry, clock, first!, 137, { conditions: [{ type: 'DisruptionTarget', status: 'True' }] });
  controller.sync('default/policy');
  t.falsy(getJob(registry, 'policy').status.conditions, 'not counted against backoffLimit 0');
  t.is(getJob(registry, 'policy').status.failed, undefined);
  const [second] = livePods(registry);
  t.truthy(second, 'replaced without backoff');
  finish(registry, clock, second!, 42);
  controller.sync('default/policy');
  const failed = getJob(registry, 'policy');
  t.deepEqual(conditionTypes(failed), ['FailureTarget:PodFailurePolicy', 'Failed:PodFailurePolicy']);
  t.is(
    failed.status.conditions[1].message,
    `Container main for pod default/${second!.metadata.name} failed with exit code 42 matching FailJob rule at index 0`,
  );
});

test('suspend deletes the running pods; resuming starts them again', (t) => {
  const { registry, controller } = setup();
  registry.create(jobs, 'default', job('pause', { parallelism: 2, completions: 4 }));
  controller.sync('default/pause');
  t.is(livePods(registry).length, 2);
  const current = getJob(registry, 'pause');
  registry.update(jobs, 'default', 'pause', { ...current, spec: { ...current.spec, suspend: true } });
  controller.sync('default/pause');
  t.is(livePods(registry).length, 0);
  t.deepEqual(conditionTypes(getJob(registry, 'pause')), ['Suspended:JobSuspended']);
  t.is(getJob(registry, 'pause').status.startTime, undefined);
  t.is(jobs.row(getJob(registry, 'pause'), 0)[1], 'Suspended');
  const again = getJob(registry, 'pause');
  registry.update(jobs, 'default', 'pause', { ...again, spec: { ...again.spec, suspend: false } });
  controller.sync('default/pause');
  t.is(livePods(registry).length, 2);
  t.deepEqual(conditionTypes(getJob(registry, 'pause')), ['Suspended:JobResumed']);
  t.is(getJob(registry, 'pause').status.failed, undefined, 'pods deleted by suspension are no failures');
});

test('pods deleted by suspension are let go before deletion: a restarted controller counts no failure', (t) => {
  const { registry, controller, clock, logger } = setup();
  registry.create(jobs, 'default', job('pause', { parallelism: 2, completions: 4 }));
  controller.sync('default/pause');
  for (const pod of livePods(registry)) {
    registry.store.update('pods', 'default', pod.metadata.name!, (p) => ({
      ...p,
      spec: { ...p.spec, nodeName: 'n1' },
    }));
  }
  const current = getJob(registry, 'pause');
  registry.update(jobs, 'default', 'pause', { ...current, spec: { ...current.spec, suspend: true } });
  controller.sync('default/pause');
  const deleted = registry.store.listAll('pods', 'default').map((s) => s.object);
  t.is(deleted.length, 2, 'still terminating on their node');
  for (const pod of deleted) {
    t.truthy(pod.metadata.deletionTimestamp);
    t.deepEqual(pod.metadata.finalizers ?? [], [], 'the tracking finalizer was removed before the delete');
    finish(registry, clock, pod, 137); // killed by the kubelet: Failed
  }
  const restarted = new JobController(registry, clock, logger);
  restarted.sync('default/pause');
  t.is(getJob(registry, 'pause').status.failed, undefined);
  t.deepEqual(getJob(registry, 'pause').status.uncountedTerminatedPods ?? {}, {});
});

test('ttlSecondsAfterFinished deletes the finished Job, and the garbage collector its pods', async (t) => {
  const { clock, registry, controller, logger } = setup();
  const ttl = new TtlAfterFinishedController(registry, clock, logger);
  const gc = new GarbageCollector(registry, clock, logger);
  registry.create(jobs, 'default', job('short', { ttlSecondsAfterFinished: 60 }));
  controller.sync('default/short');
  finish(registry, clock, livePods(registry)[0]!, 0);
  controller.sync('default/short');
  t.is(getJob(registry, 'short').status.conditions[1].type, 'Complete');
  ttl.start();
  gc.start();
  t.teardown(() => {
    ttl.stop();
    gc.stop();
  });
  await clock.advance(59_000);
  t.truthy(registry.store.get('jobs', 'default', 'short'), 'kept for its TTL');
  await clock.advance(1_000);
  await until(() => registry.store.listAll('pods', 'default').length === 0);
  t.falsy(registry.store.get('jobs', 'default', 'short'));
  t.is(registry.store.listAll('pods', 'default').length, 0, 'its pod went with it');
});

test('tracking finalizer: each finished pod counted once, then let go; a deleted pod counts as failed', (t) => {
  const { clock, registry, controller } = setup();
  registry.create(jobs, 'default', job('track', { completions: 2, parallelism: 2 }));
  controller.sync('default/track');
  const [a, b] = livePods(registry);
  t.deepEqual(a!.metadata.finalizers, ['batch.kubernetes.io/job-tracking']);
  finish(registry, clock, a!, 0);
  controller.sync('default/track');
  t.falsy(registry.store.get('pods', 'default', a!.metadata.name!)!.object.metadata.finalizers, 'let go');
  t.like(getJob(registry, 'track').status, { succeeded: 1, uncountedTerminatedPods: {} });
  // Gone after it was counted: the count stays.
  registry.delete(pods, 'default', a!.metadata.name!);
  controller.sync('default/track');
  t.is(getJob(registry, 'track').status.succeeded, 1);
  // A running pod deleted by someone else is a failure, let go, and replaced.
  registry.delete(pods, 'default', b!.metadata.name!);
  t.truthy(registry.store.get('pods', 'default', b!.metadata.name!), 'held by the finalizer');
  controller.sync('default/track');
  t.falsy(registry.store.get('pods', 'default', b!.metadata.name!), 'let go, so deleted');
  t.like(getJob(registry, 'track').status, { succeeded: 1, failed: 1, active: 1 });
});

test('a deleted Job lets go of its pods, so the garbage collector can remove them', async (t) => {
  const { clock, registry, controller, logger } = setup();
  const gc = new GarbageCollector(registry, clock, logger);
  registry.create(jobs, 'default', job('gone', { parallelism: 2, completions: 2 }));
  controller.start();
  gc.start();
  t.teardown(() => {
    controller.stop();
    gc.stop();
  });
  await until(() => livePods(registry).length === 2);
  registry.delete(jobs, 'default', 'gone', { propagationPolicy: 'Background' });
  await until(() => registry.store.listAll('pods', 'default').length === 0);
  t.is(registry.store.listAll('pods', 'default').length, 0);
});

test('restartPolicy OnFailure: container restarts count against backoffLimit', (t) => {
  const { registry, controller } = setup();
  registry.create(jobs, 'default', job('restarts', { backoffLimit: 2 }, { restartPolicy: 'OnFailure' }));
  controller.sync('default/restarts');
  const [pod] = livePods(registry);
  const restartsTo = (n: number) =>
    registry.store.update('pods', 'default', pod!.metadata.name!, (p) => {
      p.status = { phase: 'Running', containerStatuses: [{ name: 'main', restartCount: n }] };
      return p;
    });
  restartsTo(1);
  controller.sync('default/restarts');
  t.falsy(getJob(registry, 'restarts').status.conditions);
  restartsTo(2);
  controller.sync('default/restarts');
  controller.sync('default/restarts');
  t.deepEqual(conditionTypes(getJob(registry, 'restarts')), [
    'FailureTarget:BackoffLimitExceeded',
    'Failed:BackoffLimitExceeded',
  ]);
  t.is(livePods(registry).length, 0, 'the restarting pod was deleted');
});

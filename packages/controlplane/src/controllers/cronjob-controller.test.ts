import test from 'ava';
import { createLogger, MemorySink, settle, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import { rfc3339, type KubeObject } from '../object.js';
import { cronJobs } from '../resources/cron-jobs.js';
import { jobs } from '../resources/jobs.js';
import { namespaces } from '../resources/namespaces.js';
import { pods } from '../resources/pods.js';
import { RevisionStore } from '../storage/revision-store.js';
import { CronJobController } from './cronjob-controller.js';
import { EventRecorder } from './event-recorder.js';
import { coreEvents } from '../resources/events.js';

// The CronJob controller on a virtual clock (2026-01-01T00:00Z at the start): hours of schedule in
// milliseconds. Jobs "finish" by having their conditions set in the store, as the Job controller would.

const minute = 60_000;

async function setup(spec: Record<string, unknown>) {
  const clock = new VirtualClock();
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock,
    types: [namespaces, pods, jobs, cronJobs, coreEvents],
  });
  registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const logger = createLogger({ sink: new MemorySink().sink });
  const events = new EventRecorder(registry, clock, logger, 'cronjob-controller');
  const controller = new CronJobController(registry, clock, logger, events);
  registry.create(cronJobs, 'default', {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name: 'tick' },
    spec: {
      schedule: '*/5 * * * *',
      timeZone: 'UTC',
      jobTemplate: {
        metadata: { labels: { app: 'tick' } },
        spec: {
          template: { spec: { restartPolicy: 'OnFailure', containers: [{ name: 'c', image: 'busybox' }] } },
        },
      },
      ...spec,
    },
  });
  controller.start();
  // The controller wakes 100 ms after a scheduled time, as upstream: the test's steps keep that offset.
  await clock.advance(100);
  await settle(10);
  /** Moves virtual time on and lets the controller's queue catch up. */
  const advance = async (ms: number) => {
    await clock.advance(ms);
    await settle(10);
  };
  return { clock, registry, controller, advance };
}

const jobNames = (registry: Registry) =>
  registry.store
    .listAll('jobs', 'default')
    .map((s) => s.object.metadata.name!)
    .sort();

/** `reason: message` of the CronJob's events. */
const eventsOf = (registry: Registry) =>
  registry.store.listAll('events', 'default').map((e) => `${e.object.reason}: ${e.object.message}`);

const cronJob = (registry: Registry) => registry.store.get('cronjobs', 'default', 'tick')!.object;

/** The name upstream gives the Job of a scheduled time: minutes since the epoch. */
const nameAt = (clock: VirtualClock, msFromStart: number) =>
  `tick-${Math.floor((clock.now() - clock.elapsed() + msFromStart) / minute)}`;

function endJob(registry: Registry, clock: VirtualClock, name: string, type: 'Complete' | 'Failed'): void {
  registry.store.update('jobs', 'default', name, (j: KubeObject) => {
    const at = rfc3339(clock.now());
    j.status = {
      startTime: j.metadata.creationTimestamp,
      ...(type === 'Complete' ? { completionTime: at } : {}),
      conditions: [{ type, status: 'True', lastTransitionTime: at }],
    };
    return j;
  });
}

test('*/5: a Job every 5 minutes of virtual time, named for its scheduled minute, listed as active', async (t) => {
  const { clock, registry, controller, advance } = await setup({});
  t.teardown(() => controller.stop());
  t.deepEqual(jobNames(registry), [], 'nothing at creation');
  await advance(5 * minute);
  t.deepEqual(jobNames(registry), [nameAt(clock, 5 * minute)]);
  const job = registry.store.get('jobs', 'default', nameAt(clock, 5 * minute))!.object;
  t.like(job.metadata.ownerReferences![0], { kind: 'CronJob', name: 'tick', controller: true });
  t.is(job.metadata.annotations!['batch.kubernetes.io/cronjob-scheduled-timestamp'], '2026-01-01T00:05:00Z');
  t.deepEqual(job.metadata.labels, { app: 'tick' });
  await advance(5 * minute);
  await advance(5 * minute);
  t.deepEqual(jobNames(registry), [
    nameAt(clock, 5 * minute),
    nameAt(clock, 10 * minute),
    nameAt(clock, 15 * minute),
  ]);
  const status = cronJob(registry).status;
  t.is(status.active.length, 3);
  t.is(status.lastScheduleTime, '2026-01-01T00:15:00Z');
  t.deepEqual(cronJobs.row(cronJob(registry), clock.now()).slice(1, 6), [
    '*/5 * * * *',
    'UTC',
    'False',
    3,
    '0s',
  ]);
});

test('Forbid skips a time while a Job runs; Replace deletes the running Job for the new one', async (t) => {
  const forbid = await setup({ concurrencyPolicy: 'Forbid', startingDeadlineSeconds: 60 });
  t.teardown(() => forbid.controller.stop());
  await forbid.advance(5 * minute);
  await forbid.advance(5 * minute);
  t.deepEqual(jobNames(forbid.registry), [nameAt(forbid.clock, 5 * minute)], 'the 00:10 run skipped');
  t.true(
    eventsOf(forbid.registry).includes(
      'JobAlreadyActive: Not starting job because prior execution is running and concurrency policy is Forbid',
    ),
  );
  // Past startingDeadlineSeconds the skipped time is missed for good when the running Job ends.
  await forbid.advance(2 * minute);
  endJob(forbid.registry, forbid.clock, nameAt(forbid.clock, 5 * minute), 'Complete');
  await forbid.advance(0);
  t.deepEqual(jobNames(forbid.registry), [nameAt(forbid.clock, 5 * minute)]);
  await forbid.advance(3 * minute);
  t.deepEqual(jobNames(forbid.registry), [
    nameAt(forbid.clock, 5 * minute),
    nameAt(forbid.clock, 15 * minute),
  ]);
  t.is(
    forbid.registry.store.get('cronjobs', 'default', 'tick')!.object.status.lastSuccessfulTime,
    '2026-01-01T00:12:00Z',
  );

  const replace = await setup({ concurrencyPolicy: 'Replace' });
  t.teardown(() => replace.controller.stop());
  await replace.advance(5 * minute);
  await replace.advance(5 * minute);
  t.deepEqual(jobNames(replace.registry), [nameAt(replace.clock, 10 * minute)], 'the 00:05 Job replaced');
  t.deepEqual(
    cronJob(replace.registry).status.active.map((r: { name: string }) => r.name),
    [nameAt(replace.clock, 10 * minute)],
  );
});

test('history limits keep the newest successful and failed Jobs; suspend stops new ones', async (t) => {
  const { clock, registry, controller, advance } = await setup({
    successfulJobsHistoryLimit: 1,
    failedJobsHistoryLimit: 1,
  });
  t.teardown(() => controller.stop());
  for (let i = 1; i <= 4; i++) {
    await advance(5 * minute);
    endJob(registry, clock, nameAt(clock, i * 5 * minute), i % 2 ? 'Complete' : 'Failed');
  }
  await settle(10);
  t.deepEqual(jobNames(registry), [nameAt(clock, 15 * minute), nameAt(clock, 20 * minute)]);
  t.falsy(cronJob(registry).status.active);
  const cj = cronJob(registry);
  registry.update(cronJobs, 'default', 'tick', { ...cj, spec: { ...cj.spec, suspend: true } });
  await advance(30 * minute);
  t.is(jobNames(registry).length, 2, 'no Job while suspended');
});

test('a time zone shifts the schedule: 09:00 in Tokyo is 00:00 UTC', async (t) => {
  const { clock, registry, controller, advance } = await setup({
    schedule: '0 9 * * *',
    timeZone: 'Asia/Tokyo',
  });
  t.teardown(() => controller.stop());
  await advance(23 * 60 * minute);
  t.deepEqual(jobNames(registry), []);
  await advance(60 * minute);
  t.deepEqual(jobNames(registry), [nameAt(clock, 24 * 60 * minute)]);
  const job = registry.store.listAll('jobs', 'default')[0]!.object;
  t.is(
    job.metadata.annotations!['batch.kubernetes.io/cronjob-scheduled-timestamp'],
    '2026-01-02T09:00:00+09:00',
  );
  t.deepEqual(cronJobs.row(cronJob(registry), clock.now()).slice(1, 3), ['0 9 * * *', 'Asia/Tokyo']);
});

test('missed times while the controller was down: only the most recent one runs', async (t) => {
  const { clock, registry, controller, advance } = await setup({});
  controller.stop();
  await clock.advance(60 * minute);
  const again = new CronJobController(registry, clock, createLogger({ sink: new MemorySink().sink }));
  again.start();
  t.teardown(() => again.stop());
  await advance(0);
  t.deepEqual(jobNames(registry), [nameAt(clock, 60 * minute)]);
});

test('more than 100 missed times: a TooManyMissedTimes event, and still only the latest runs', async (t) => {
  const { clock, registry, controller, advance } = await setup({});
  controller.stop();
  await clock.advance(10 * 60 * minute); // 120 times of */5
  const logger = createLogger({ sink: new MemorySink().sink });
  const again = new CronJobController(
    registry,
    clock,
    logger,
    new EventRecorder(registry, clock, logger, 'cronjob-controller'),
  );
  again.start();
  t.teardown(() => again.stop());
  await advance(0);
  t.deepEqual(jobNames(registry), [nameAt(clock, 10 * 60 * minute)]);
  t.true(
    eventsOf(registry).includes(
      'TooManyMissedTimes: too many missed start times: 120. Set or decrease .spec.startingDeadlineSeconds or check clock skew',
    ),
    eventsOf(registry).join('\n'),
  );
  t.true(eventsOf(registry).includes(`SuccessfulCreate: Created job ${nameAt(clock, 10 * 60 * minute)}`));
});

test('@yearly: the wait is taken a day at a time (timers overflow past 24.8 days) and the Job still comes', async (t) => {
  const { clock, registry, controller, advance } = await setup({ schedule: '@yearly' });
  t.teardown(() => controller.stop());
  t.true(clock.pendingTimers() <= 2, 'one wake-up pending, not a storm');
  await advance(364 * 24 * 60 * minute);
  t.deepEqual(jobNames(registry), []);
  await advance(24 * 60 * minute);
  t.deepEqual(jobNames(registry), [`tick-${Date.UTC(2027, 0, 1) / minute}`]);
});

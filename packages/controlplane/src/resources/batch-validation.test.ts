import test from 'ava';
import { VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import { RevisionStore } from '../storage/revision-store.js';
import { cronJobs } from './cron-jobs.js';
import { jobs } from './jobs.js';
import { namespaces } from './namespaces.js';

// What the API server answers to batch/v1 objects users get wrong: 422 with the field named and
// upstream's wording, never a crash.

function setup(): Registry {
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock: new VirtualClock(),
    types: [namespaces, jobs, cronJobs],
  });
  registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return registry;
}

const podTemplate = { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } };

function cronJob(name: string, spec: Record<string, unknown>): object {
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name },
    spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: podTemplate } }, ...spec },
  };
}

function rejects(t: any, create: () => unknown, pattern: RegExp): void {
  const err = t.throws(create) as { code?: number; message: string };
  t.is(err.code, 422, err.message);
  t.regex(err.message, pattern);
}

test('CronJobs: defaults, and the schedule, time zone, policy, name and template checked', (t) => {
  const registry = setup();
  const { object } = registry.create(cronJobs, 'default', cronJob('ok', { timeZone: 'Europe/Paris' }));
  t.like(object.spec, {
    concurrencyPolicy: 'Allow',
    suspend: false,
    successfulJobsHistoryLimit: 3,
    failedJobsHistoryLimit: 1,
  });
  t.is(object.spec.jobTemplate.spec.template.spec.terminationGracePeriodSeconds, 30, 'pod defaults');
  rejects(
    t,
    () => registry.create(cronJobs, 'default', cronJob('a', { schedule: '* * *' })),
    /spec\.schedule: Invalid value: "\* \* \*": expected exactly 5 fields/,
  );
  rejects(
    t,
    () => registry.create(cronJobs, 'default', cronJob('b', { schedule: '' })),
    /spec\.schedule: Required value/,
  );
  rejects(
    t,
    () => registry.create(cronJobs, 'default', cronJob('c', { schedule: 'TZ=UTC 0 * * * *' })),
    /cannot use TZ or CRON_TZ in schedule, use timeZone field instead/,
  );
  rejects(
    t,
    () => registry.create(cronJobs, 'default', cronJob('d', { timeZone: 'Mars/Olympus' })),
    /spec\.timeZone: Invalid value: "Mars\/Olympus": unknown time zone Mars\/Olympus/,
  );
  rejects(
    t,
    () => registry.create(cronJobs, 'default', cronJob('e', { concurrencyPolicy: 'Sometimes' })),
    /spec\.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"/,
  );
  rejects(
    t,
    () => registry.create(cronJobs, 'default', cronJob('x'.repeat(53), {})),
    /metadata\.name: .*must be no more than 52 characters/,
  );
  rejects(
    t,
    () =>
      registry.create(
        cronJobs,
        'default',
        cronJob('f', {
          jobTemplate: { spec: { template: { spec: { ...podTemplate.spec, restartPolicy: 'Always' } } } },
        }),
      ),
    /spec\.jobTemplate\.spec\.template\.spec\.restartPolicy: Unsupported value: "Always"/,
  );
  rejects(
    t,
    () => registry.create(cronJobs, 'default', cronJob('g', { startingDeadlineSeconds: -1 })),
    /spec\.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0/,
  );
});

test('Jobs: counts, mode, failure policy, what an update may not change; delete orphans by default', (t) => {
  const registry = setup();
  const job = (name: string, spec: Record<string, unknown>, template: object = podTemplate) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name },
    spec: { template, ...spec },
  });
  rejects(
    t,
    () => registry.create(jobs, 'default', job('a', { parallelism: -1 })),
    /spec\.parallelism: Invalid value: -1: must be greater than or equal to 0/,
  );
  rejects(
    t,
    () => registry.create(jobs, 'default', job('b', { completionMode: 'Sometimes' })),
    /spec\.completionMode: Unsupported value: "Sometimes"/,
  );
  rejects(
    t,
    () =>
      registry.create(
        jobs,
        'default',
        job('c', {
          podFailurePolicy: { rules: [{ action: 'FailJob', onExitCodes: { operator: 'In', values: [0] } }] },
        }),
      ),
    /spec\.podFailurePolicy\.rules\[0\]\.onExitCodes\.values\[0\]: Invalid value: 0: must not be 0 for the In operator/,
  );
  rejects(
    t,
    () =>
      registry.create(
        jobs,
        'default',
        job(
          'd',
          { podFailurePolicy: { rules: [] } },
          { spec: { ...podTemplate.spec, restartPolicy: 'OnFailure' } },
        ),
      ),
    /only "Never" is supported when podFailurePolicy is specified/,
  );
  rejects(
    t,
    () => registry.create(jobs, 'default', job('e', { selector: { matchLabels: { app: 'x' } } })),
    /spec\.template\.metadata\.labels: Invalid value: .*`selector` does not match template `labels`/,
  );
  const { object } = registry.create(jobs, 'default', job('ok', { completions: 2 }));
  rejects(
    t,
    () => registry.update(jobs, 'default', 'ok', { ...object, spec: { ...object.spec, completions: 3 } }),
    /spec\.completions: Invalid value: 3: field is immutable/,
  );
  // A DELETE that names no propagation orphans a batch/v1 Job's pods, as upstream (kubectl asks Background).
  registry.delete(jobs, 'default', 'ok');
  t.deepEqual(registry.store.get('jobs', 'default', 'ok')?.object.metadata.finalizers, ['orphan']);
});

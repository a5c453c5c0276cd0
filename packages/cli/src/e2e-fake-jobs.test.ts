import test from 'ava';
import { NodeletUp, requireKubectl } from './e2e-containerd/nodelet-up.js';
import { pollUntil } from './test-helpers.js';

/**
 * Jobs and CronJobs as a user drives them on `nodelet up` (fake runtime) with the real kubectl. A fake
 * container runs until it is told otherwise: the annotation `runtime-fake.nodelet.dev/<container>:
 * exitAfter=…` makes it exit by itself with code 0, as `true` would.
 */
const kubectl = requireKubectl(test);

if (kubectl) {
  let up: NodeletUp;
  test.before(async () => {
    up = await NodeletUp.start(['--hostname-override', 'batch']);
    await up.waitNodeReady('batch');
  });
  test.after.always(async () => {
    await up?.stop();
    up?.dispose();
  });

  const podsOf = async (job: string): Promise<any[]> =>
    JSON.parse(await up.kubectlOk(['get', 'pods', '-l', `batch.kubernetes.io/job-name=${job}`, '-o', 'json']))
      .items;

  test.serial('a Job whose container exits 0 completes: kubectl wait, kubectl get jobs', async (t) => {
    const manifest = JSON.parse(
      await up.kubectlOk([
        'create',
        'job',
        'pi',
        '--image=busybox',
        '--dry-run=client',
        '-o',
        'json',
        '--',
        'true',
      ]),
    );
    manifest.spec.template.metadata = {
      annotations: { 'runtime-fake.nodelet.dev/pi': 'exitAfter=1s' },
    };
    t.regex(await up.kubectlOk(['create', '-f', '-'], JSON.stringify(manifest)), /job.batch\/pi created/);
    const wait = await up.kubectl(['wait', '--for=condition=complete', 'job/pi', '--timeout=60s']);
    t.is(wait.code, 0, wait.stderr + up.stderr().slice(-2000));
    t.regex(wait.stdout, /job.batch\/pi condition met/);
    const table = await up.kubectlOk(['get', 'jobs']);
    t.regex(table, /^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE\n/);
    t.regex(table, /\npi\s+Complete\s+1\/1\s+\d+s\s+\d+s\n/);
    const [pod] = await podsOf('pi');
    t.is(pod.status.phase, 'Succeeded');
    t.falsy(pod.metadata.finalizers, 'counted, so let go of the job-tracking finalizer');
    const job = JSON.parse(await up.kubectlOk(['get', 'job', 'pi', '-o', 'json']));
    t.like(job.status, { succeeded: 1, ready: 0, terminating: 0, uncountedTerminatedPods: {} });
    t.deepEqual(
      job.status.conditions.map((c: any) => c.type),
      ['SuccessCriteriaMet', 'Complete'],
    );
  });

  test.serial('kubectl create job runs a pod; kubectl delete job removes its pods', async (t) => {
    t.regex(
      await up.kubectlOk(['create', 'job', 'sleeper', '--image=busybox', '--', 'sleep', '3600']),
      /job.batch\/sleeper created/,
    );
    const running = await pollUntil(
      'the sleeper pod Running',
      async () => {
        const pods = await podsOf('sleeper');
        return pods.length === 1 && pods[0].status?.phase === 'Running' ? pods : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => up.stderr().slice(-2000) },
    );
    t.is(running[0].metadata.ownerReferences[0].kind, 'Job');
    t.regex(await up.kubectlOk(['get', 'jobs', 'sleeper', '--no-headers']), /^sleeper\s+Running\s+0\/1\s/);
    t.regex(await up.kubectlOk(['delete', 'job', 'sleeper']), /job.batch "sleeper" deleted/);
    await pollUntil(
      'the sleeper pod gone',
      async () => ((await podsOf('sleeper')).length === 0 ? true : undefined),
      {
        timeoutMs: 60_000,
        intervalMs: 250,
        describe: () => up.stderr().slice(-2000),
      },
    );
    t.pass();
  });

  test.serial(
    'kubectl create cronjob is listed; kubectl create job --from=cronjob runs its template',
    async (t) => {
      t.regex(
        await up.kubectlOk([
          'create',
          'cronjob',
          'nightly',
          '--image=busybox',
          '--schedule=0 3 * * *',
          '--',
          'true',
        ]),
        /cronjob.batch\/nightly created/,
      );
      const resources = await up.kubectlOk(['api-resources', '--api-group=batch', '--no-headers']);
      t.regex(resources, /^cronjobs\s+cj\s+batch\/v1\s+true\s+CronJob$/m);
      t.regex(resources, /^jobs\s+batch\/v1\s+true\s+Job$/m);
      t.regex(await up.kubectlOk(['explain', 'cronjob.spec.schedule']), /FIELD: schedule <string>/);
      const table = await up.kubectlOk(['get', 'cronjobs']);
      t.regex(table, /^NAME\s+SCHEDULE\s+TIMEZONE\s+SUSPEND\s+ACTIVE\s+LAST SCHEDULE\s+AGE\n/);
      t.regex(table, /\nnightly\s+0 3 \* \* \*\s+<none>\s+False\s+0\s+<none>\s+\d+s\n/);
      const cronJob = JSON.parse(await up.kubectlOk(['get', 'cronjob', 'nightly', '-o', 'json']));
      t.like(cronJob.spec, {
        concurrencyPolicy: 'Allow',
        suspend: false,
        successfulJobsHistoryLimit: 3,
        failedJobsHistoryLimit: 1,
      });
      t.regex(
        await up.kubectlOk(['create', 'job', 'nightly-manual', '--from=cronjob/nightly']),
        /job.batch\/nightly-manual created/,
      );
      const job = JSON.parse(await up.kubectlOk(['get', 'job', 'nightly-manual', '-o', 'json']));
      t.is(job.metadata.annotations['cronjob.kubernetes.io/instantiate'], 'manual');
      t.like(job.metadata.ownerReferences[0], {
        kind: 'CronJob',
        name: 'nightly',
        uid: cronJob.metadata.uid,
      });
      t.deepEqual(job.spec.template.spec.containers[0].command, ['true']);
      await pollUntil(
        'a pod of nightly-manual',
        async () => ((await podsOf('nightly-manual')).length === 1 ? true : undefined),
        {
          timeoutMs: 60_000,
          intervalMs: 250,
        },
      );
      // A template with more than kubectl's flags can set comes through whole.
      const detailed = {
        apiVersion: 'batch/v1',
        kind: 'CronJob',
        metadata: { name: 'detailed' },
        spec: {
          schedule: '@daily',
          timeZone: 'Europe/Paris',
          jobTemplate: {
            spec: {
              backoffLimit: 0,
              template: {
                spec: {
                  restartPolicy: 'Never',
                  nodeSelector: { disk: 'ssd' },
                  containers: [
                    {
                      name: 'c',
                      image: 'busybox',
                      env: [{ name: 'MODE', value: 'full' }],
                      resources: { requests: { cpu: '100m' }, limits: { memory: '64Mi' } },
                      workingDir: '/work',
                    },
                  ],
                },
              },
            },
          },
        },
      };
      await up.kubectlOk(['apply', '-f', '-'], JSON.stringify(detailed));
      await up.kubectlOk(['create', 'job', 'detailed-manual', '--from=cronjob/detailed']);
      const copy = JSON.parse(await up.kubectlOk(['get', 'job', 'detailed-manual', '-o', 'json']));
      t.is(copy.spec.backoffLimit, 0);
      t.deepEqual(copy.spec.template.spec.nodeSelector, { disk: 'ssd' });
      t.like(copy.spec.template.spec.containers[0], {
        env: [{ name: 'MODE', value: 'full' }],
        resources: { requests: { cpu: '100m' }, limits: { memory: '64Mi' } },
        workingDir: '/work',
      });
      await up.kubectlOk(['delete', 'cronjob', 'detailed']);
      t.regex(await up.kubectlOk(['delete', 'cronjob', 'nightly']), /cronjob.batch "nightly" deleted/);
      await pollUntil(
        "the CronJob's Job and pod gone with it",
        async () => ((await podsOf('nightly-manual')).length === 0 ? true : undefined),
        { timeoutMs: 60_000, intervalMs: 250, describe: () => up.stderr().slice(-2000) },
      );
      t.pass();
    },
  );
}

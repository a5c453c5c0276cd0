import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { eventually, podYaml, tempDir, testEnv } from './config/test-env.js';
import { Kubelet } from './kubelet.js';

/**
 * Admission runs for every source, as upstream's HandlePodAdditions: a static pod that does not fit the
 * node is rejected — phase Failed, reason OutOfcpu, a Warning event — and never reaches the runtime.
 */

const requests = (cpu: string, memory = '1Mi') => `
    resources:
      requests:
        cpu: "${cpu}"
        memory: ${memory}`;

async function staticKubelet(t: { teardown(fn: () => unknown): void }, manifests: Record<string, string>) {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  for (const [file, text] of Object.entries(manifests)) await writeFile(join(dir, file), text);
  const env = testEnv();
  const runtime = new FakeRuntime({ clock: env.clock, logger: env.logger, config: { pullLatencyMs: 0 } });
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus: env.bus, clock: env.clock, logger: env.logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      podManifestPath: join(dir),
      memoryCapacityBytes: 1024 ** 3,
      maxPods: 2,
    },
  );
  await kubelet.start();
  t.teardown(() => kubelet.stop());
  const phase = (name: string) => kubelet.podList().items.find((p) => p.metadata?.name === name)?.status;
  return { ...env, runtime, kubelet, phase };
}

test('a static pod asking more CPU than the node has is Failed with OutOfcpu and an event; the others run', async (t) => {
  const nodeMilliCpu = cpus().length * 1000;
  const k = await staticKubelet(t, {
    'small.yaml': podYaml('small', requests('100m')),
    'huge.yaml': podYaml('huge', requests(String(cpus().length + 1))),
  });
  await eventually(
    () => k.phase('small-node1')?.phase === 'Running' && !!k.phase('huge-node1')?.phase,
    k.clock,
    {
      stepMs: 100,
    },
  );
  const huge = k.phase('huge-node1')!;
  t.is(huge.phase, 'Failed');
  t.is(huge.reason, 'OutOfcpu');
  // `used` is 100 when the small pod was read first, 0 when after.
  t.regex(
    huge.message!,
    new RegExp(
      `^Pod was rejected: Node didn't have enough resource: cpu, requested: ${nodeMilliCpu + 1000}, used: (0|100), capacity: ${nodeMilliCpu}$`,
    ),
  );
  const events = k.events.filter((e) => e.type === '[Kubelet] Pod Event' && e.podName === 'huge-node1');
  t.like(events[0], { eventType: 'Warning', reason: 'OutOfcpu' });
  t.is(k.runtime.counts().running, 1, 'only the pod that fits runs');
  t.true(
    k.sink.records.some((r) => r.message === 'Pod rejected by admission' && r.fields?.reason === 'OutOfcpu'),
  );
});

test('static pods count against memory and maxPods as API pods do (OutOfmemory, OutOfpods)', async (t) => {
  const k = await staticKubelet(t, {
    'a.yaml': podYaml('a', requests('10m', '2Gi')),
    'b.yaml': podYaml('b'),
    'c.yaml': podYaml('c'),
    'd.yaml': podYaml('d'),
  });
  await eventually(() => ['a', 'b', 'c', 'd'].every((n) => !!k.phase(`${n}-node1`)?.phase), k.clock, {
    stepMs: 100,
  });
  await k.clock.advance(2_000);
  t.is(k.phase('a-node1')!.reason, 'OutOfmemory');
  const rejected = ['b', 'c', 'd'].filter((n) => k.phase(`${n}-node1`)!.reason === 'OutOfpods');
  t.is(rejected.length, 1, 'maxPods 2: the third pod that fits otherwise is rejected');
  t.is(k.runtime.counts().running, 2);
});

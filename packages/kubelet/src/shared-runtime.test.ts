import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { CriLabels, PodSandboxConfig } from '@nodelet/cri';
import { createLogger, EventBus, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { Kubelet } from './kubelet.js';
import { NODE_NAME_LABEL } from './kuberuntime/index.js';
import { makePod, TestSource } from './test-harness.js';

/**
 * Two kubelets (two simulated nodes, or two test processes) on one runtime: each labels what it makes
 * with its node name, and housekeeping removes only its own node's orphans — never the other node's
 * pods, nor sandboxes some other CRI client made with kubelet labels (the CRI conformance suite does).
 */
test("housekeeping removes its own node's orphans only, on a runtime two kubelets share", async (t) => {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: () => {} });
  const runtime = new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0 } });
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-shared-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const kubelet = (nodeName: string) => {
    const source = new TestSource();
    const k = new Kubelet(
      { runtime, images: runtime, bus: new EventBus(clock, logger), clock, logger },
      {
        nodeName,
        hostIP: '192.0.2.10',
        rootDir: join(dir, nodeName),
        podLogsDir: join(dir, nodeName, 'logs'),
        sources: [source],
      },
    );
    return { k, source };
  };
  const a = kubelet('node-a');
  const b = kubelet('node-b');
  await a.k.start();
  await b.k.start();
  t.teardown(async () => {
    await a.k.stop();
    await b.k.stop();
  });

  // Another CRI client's sandbox with the kubelet's pod labels, but no node label.
  const { podSandboxId: foreign } = await runtime.runPodSandbox({
    config: PodSandboxConfig.fromPartial({
      metadata: { name: 'conformance', namespace: 'default', uid: 'uid-foreign', attempt: 0 },
      labels: { [CriLabels.PodUID]: 'uid-foreign', [CriLabels.PodName]: 'conformance' },
    }),
    runtimeHandler: '',
  });
  a.source.set([makePod('web', {})]);
  b.source.set([makePod('db', {})]);
  await clock.advance(3_000);
  const sandboxes = (await runtime.listPodSandbox({})).items;
  t.is(sandboxes.length, 3);
  t.deepEqual(
    sandboxes.map((s) => s.labels[NODE_NAME_LABEL] ?? '-').sort(),
    ['-', 'node-a', 'node-b'],
    'each kubelet labels its sandboxes with its node name',
  );
  const containers = (await runtime.listContainers({})).containers;
  t.deepEqual(
    containers.map((c) => `${c.labels[CriLabels.PodName]}@${c.labels[NODE_NAME_LABEL]}`).sort(),
    ['db@node-b', 'web@node-a'],
    'and its containers',
  );

  // node-b's pod goes away while node-b keeps running: node-b removes it; node-a and the foreign one stay.
  b.source.set([]);
  await clock.advance(60_000);
  const left = (await runtime.listPodSandbox({})).items.map((s) => s.labels[CriLabels.PodUID]).sort();
  t.deepEqual(left, ['uid-foreign', 'uid-web']);
  t.truthy((await runtime.podSandboxStatus({ podSandboxId: foreign, verbose: false })).status);
  t.is(a.k.podList().items[0]?.status?.phase, 'Running');
});

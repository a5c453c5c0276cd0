import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { createCriClient } from '@nodelet/cri';
import { createLogger, EventBus, MemorySink, RealClock } from '@nodelet/kernel';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { Kubelet } from '../kubelet.js';
import { removeOwnPods, until } from '../test-containerd.js';
import { TestSource } from '../test-harness.js';

/**
 * An exec readiness probe on a real containerd container, in real time: `test -f /tmp/ready`, toggled
 * by creating and removing the file through CRI ExecSync. Skipped (one line) without containerd, failed
 * without it in CI — the rule of `@nodelet/runtime-cri/testing`.
 *
 * The containerd is shared with other tests: this kubelet's housekeeping (which removes sandboxes no
 * source wants) is pushed out of the test's lifetime, and only its own pod is cleaned up.
 */

// Before any test is declared: ava takes declarations only until the file's first await is over.
const containerd = await requireContainerd(test);

if (containerd) {
  test('exec readiness probe on containerd: test -f /tmp/ready follows the file', async (t) => {
    const client = createCriClient(containerd.endpoint, { timeoutMs: 30_000 });
    t.teardown(() => client.close());
    const clock = new RealClock();
    const logs = new MemorySink();
    const logger = createLogger({ sink: logs.sink, level: 'info' });
    const dir = mkdtempSync(join(tmpdir(), 'nodelet-probe-containerd-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const source = new TestSource();
    const kubelet = new Kubelet(
      { runtime: client.runtime, images: client.image, bus: new EventBus(clock, logger), clock, logger },
      {
        nodeName: 'probe-test',
        hostIP: '127.0.0.1',
        rootDir: join(dir, 'root'),
        podLogsDir: join(dir, 'logs'),
        sources: [source],
        housekeepingPeriodMs: 3_600_000,
      },
    );
    const uid = `probe-exec-${process.pid}-${Date.now()}`;
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'probe-exec', namespace: 'default', uid },
      spec: {
        hostNetwork: true,
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 2,
        containers: [
          {
            name: 'app',
            image: 'docker.io/library/busybox:latest',
            imagePullPolicy: 'Never',
            command: ['sleep', '3600'],
            readinessProbe: {
              exec: { command: ['test', '-f', '/tmp/ready'] },
              periodSeconds: 1,
              timeoutSeconds: 2,
              successThreshold: 1,
              failureThreshold: 1,
            },
          },
        ],
      },
    };
    await kubelet.start();
    // Only this pod: through the kubelet, then (should that not finish) straight through CRI.
    t.teardown(() => removeOwnPods(kubelet, source, client, [uid]));
    source.set([pod]);

    const status = () => kubelet.getPod('default', 'probe-exec')?.status?.containerStatuses?.[0];
    const containerId = await until(
      'the container to run',
      () => (status()?.state?.running ? status()!.containerID!.replace(/^\w+:\/\//, '') : undefined),
      60_000,
    );
    await until(
      'a failed readiness probe',
      () => (logs.find('Readiness probe failed').length > 0 ? true : undefined),
      10_000,
    );
    t.false(status()!.ready, 'not ready without /tmp/ready');

    const sh = async (...cmd: string[]) => {
      const res = await client.runtime.execSync({ containerId, cmd, timeout: 5n });
      t.is(res.exitCode, 0, `${cmd.join(' ')}: ${Buffer.from(res.stderr).toString()}`);
    };
    await sh('touch', '/tmp/ready');
    await until('ready', () => (status()?.ready ? true : undefined), 10_000);
    t.is(
      kubelet.getPod('default', 'probe-exec')?.status?.conditions?.find((c) => c.type === 'Ready')?.status,
      'True',
    );

    await sh('rm', '/tmp/ready');
    await until('unready', () => (status()?.ready === false ? true : undefined), 10_000);
    t.is(status()!.restartCount, 0, 'readiness never restarts a container');
  });
}

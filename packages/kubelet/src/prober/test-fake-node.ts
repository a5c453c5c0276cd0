import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { createLogger, Kernel, MemorySink, type NodeletPlugin, VirtualClock } from '@nodelet/kernel';
import { runtimeFakePlugin } from '@nodelet/runtime-fake';
import { KubeletCapability, kubeletPlugin } from '../plugin.js';
import { TestSource } from '../test-harness.js';

/**
 * Test support: a kubelet on the fake runtime composed as `nodelet kubelet --runtime fake` composes it
 * (runtime-fake, then `plugins`, then the kubelet plugin, on one kernel) under virtual time, with a
 * settable pod source. Stopped at the test's end.
 */
export async function startFakeNode(t: ExecutionContext, plugins: readonly NodeletPlugin<any>[] = []) {
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, now: () => clock.now() });
  const source = new TestSource();
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-fake-node-'));
  const kernel = new Kernel({ clock, logger }).use(runtimeFakePlugin, {});
  for (const plugin of plugins) kernel.use(plugin, {});
  kernel.use(kubeletPlugin, {
    nodeName: 'sim-1',
    hostIP: '192.0.2.1',
    rootDir: join(dir, 'root'),
    podLogsDir: join(dir, 'logs'),
    readOnlyPort: 0,
    address: '127.0.0.1',
    sources: [source],
  });
  await kernel.start();
  t.teardown(() => kernel.stop());
  const kubelet = kernel.get(KubeletCapability);
  const status = (name: string) => kubelet.getPod('default', name)?.status ?? {};
  return { clock, logs, source, kubelet, status };
}

// The composition the kubelet plugin uses: a provided stats.provider (the fake runtime's) wins and gets
// the kubelet's node name; without one, the host's cgroups are read.
import test from 'ava';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { StatsProviderCapability } from '@nodelet/cri';
import { createLogger, EventBus, Kernel, MemorySink, VirtualClock } from '@nodelet/kernel';
import { CriRuntime } from '@nodelet/cri';
import { FakeRuntime, runtimeFakePlugin } from '@nodelet/runtime-fake';
import { createKubeletObservability } from './observability.js';

async function fakeKernel() {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const kernel = new Kernel({ clock, logger }).use(runtimeFakePlugin, {});
  await kernel.start();
  const runtime = kernel.get(CriRuntime) as FakeRuntime;
  return { clock, kernel, runtime, bus: new EventBus(clock, logger) };
}

test('a provided stats.provider is used, with the kubelet node name; runtime calls are counted', async (t) => {
  const { clock, kernel, runtime, bus } = await fakeKernel();
  t.teardown(() => kernel.stop());
  const o = createKubeletObservability(
    { bus, clock, runtime, images: runtime, stats: kernel.get(StatsProviderCapability) },
    { nodeName: 'sim-7', rootDir: tmpdir() },
  );
  t.teardown(() => o.stop());
  await o.runtime.version({ version: 'v1' });
  const snapshot = await o.stats.snapshot();
  t.is(snapshot.node.nodeName, 'sim-7');
  t.is(snapshot.node.cpu?.usageCoreNanoSeconds, 0, 'an empty simulated node uses nothing');
  t.is(
    o.routes.map((r) => r.path).join(' '),
    '/metrics /metrics/probes /metrics/resource /metrics/cadvisor /stats/summary',
  );
  const text = await o.metrics.registry.metrics();
  t.regex(text, /kubelet_runtime_operations_total\{operation_type="version"\} 1/);
});

test('without a provided stats.provider the host is read', async (t) => {
  if (!existsSync('/sys/fs/cgroup/cpuacct/cpuacct.usage') && !existsSync('/sys/fs/cgroup/cpu.stat')) {
    if (process.env.CI === 'true') t.fail('cgroups are needed (CI=true)');
    else t.log('skipped: no cgroup CPU accounting on this host');
    return t.pass();
  }
  const { clock, kernel, runtime, bus } = await fakeKernel();
  t.teardown(() => kernel.stop());
  const o = createKubeletObservability(
    { bus, clock, runtime, images: runtime },
    { nodeName: 'host', rootDir: tmpdir() },
  );
  t.teardown(() => o.stop());
  const snapshot = await o.stats.snapshot();
  t.true((snapshot.node.cpu?.usageCoreNanoSeconds ?? 0) > 0);
  t.true((snapshot.node.fs?.capacityBytes ?? 0) > 0);
});

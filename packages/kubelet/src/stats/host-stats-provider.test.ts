// The host stats provider on this machine's own cgroups and file systems, with the fake runtime as the
// CRI side: the node's CPU and memory come from the root cgroup, nodefs from statfs, and a pod's
// network from its sandbox's /proc/<pid>/net/dev when the runtime has no pod-level stats.
import test from 'ava';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createLogger, MemorySink, NodeletError, VirtualClock } from '@nodelet/kernel';
import { validateAgainst } from '@nodelet/kernel/testing';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { ContainerConfig, ImageSpec, PodSandboxConfig } from '@nodelet/cri';
import { toSummary } from '../metrics/handlers.js';
import { summarySchema } from '../metrics/test-summary-schema.js';
import { readNetDev } from './cgroup-reader.js';
import { hostStatsProvider } from './host-stats-provider.js';

const hasCgroups =
  existsSync('/sys/fs/cgroup/cpuacct/cpuacct.usage') || existsSync('/sys/fs/cgroup/cpu.stat');

async function fakeWithPod() {
  const clock = new VirtualClock();
  const runtime = new FakeRuntime({
    clock,
    logger: createLogger({ sink: new MemorySink().sink }),
    config: { pullLatencyMs: 0 } as never,
  });
  await runtime.pullImage({ image: ImageSpec.fromPartial({ image: 'busybox:1.36' }) });
  const config = PodSandboxConfig.fromPartial({
    metadata: { name: 'p', namespace: 'default', uid: 'uid-p', attempt: 0 },
    labels: {
      'io.kubernetes.pod.uid': 'uid-p',
      'io.kubernetes.pod.name': 'p',
      'io.kubernetes.pod.namespace': 'default',
    },
    annotations: { 'runtime-fake.nodelet.dev/app': 'memory=10Mi' },
  });
  const { podSandboxId } = await runtime.runPodSandbox({ config, runtimeHandler: '' });
  const { containerId } = await runtime.createContainer({
    podSandboxId,
    config: ContainerConfig.fromPartial({
      metadata: { name: 'app', attempt: 0 },
      image: { image: 'busybox:1.36' },
    }),
    sandboxConfig: config,
  });
  await runtime.startContainer({ containerId });
  return { clock, runtime, podSandboxId };
}

test('node usage from this host, nodefs by statfs, the kubelet system container; valid summary', async (t) => {
  if (!hasCgroups) {
    if (process.env.CI === 'true') t.fail('cgroups are needed (CI=true)');
    else t.log('skipped: no cgroup v1 cpuacct or v2 cpu.stat on this host');
    return t.pass();
  }
  const { clock, runtime } = await fakeWithPod();
  const podLogsDir = mkdtempSync(join(tmpdir(), 'pod-logs-'));
  mkdirSync(join(podLogsDir, 'default_p_uid-p', 'app'), { recursive: true });
  writeFileSync(join(podLogsDir, 'default_p_uid-p', 'app', '0.log'), 'x'.repeat(100));
  writeFileSync(join(podLogsDir, 'default_p_uid-p', 'app', '1.log'), 'y'.repeat(23));
  t.teardown(() => rmSync(podLogsDir, { recursive: true }));
  const provider = hostStatsProvider(runtime, runtime, {
    nodeName: 'host',
    clock,
    rootDir: tmpdir(),
    podLogsDir,
  });
  const snapshot = await provider.snapshot();
  t.is(snapshot.pods[0]?.containers[0]?.logs?.usedBytes, 123, 'both attempts of the log');
  t.is(snapshot.pods[0]?.['ephemeral-storage']?.usedBytes, 123);
  t.true((snapshot.node.cpu?.usageCoreNanoSeconds ?? 0) > 0, 'the root cgroup has used CPU');
  t.true((snapshot.node.memory?.workingSetBytes ?? 0) > 0);
  t.true((snapshot.node.memory?.availableBytes ?? 0) > 0);
  t.true((snapshot.node.fs?.capacityBytes ?? 0) > 0);
  t.truthy(snapshot.node.runtime?.imageFs);
  const kubelet = snapshot.node.systemContainers?.find((c) => c.name === 'kubelet');
  if (existsSync('/sys/fs/cgroup/memory/memory.stat')) t.true((kubelet?.memory?.workingSetBytes ?? 0) > 0);
  t.is(snapshot.pods[0]?.containers[0]?.memory?.workingSetBytes, 10 * 2 ** 20);
  t.deepEqual(validateAgainst(summarySchema)(toSummary(snapshot)), []);
});

test('a runtime without ListPodSandboxStats: containers from ListContainerStats, network from the sandbox pid', async (t) => {
  const { clock, runtime, podSandboxId } = await fakeWithPod();
  runtime.listPodSandboxStats = () => Promise.reject(new NodeletError('Unimplemented', 'not implemented'));
  const status = runtime.podSandboxStatus.bind(runtime);
  runtime.podSandboxStatus = async (req) => {
    const res = await status(req);
    // containerd's verbose info; this process stands in for the sandbox (its netns is readable).
    return req.verbose ? { ...res, info: { info: JSON.stringify({ pid: process.pid }) } } : res;
  };
  const provider = hostStatsProvider(runtime, runtime, { nodeName: 'host', clock, rootDir: tmpdir() });
  const pod = (await provider.snapshot()).pods[0]!;
  t.is(pod.containers[0]?.name, 'app');
  t.is(pod.containers[0]?.memory?.workingSetBytes, 10 * 2 ** 20);
  t.truthy(podSandboxId);
  const expected = (await readNetDev(process.pid)) ?? [];
  if (expected.length === 0) {
    t.is(pod.network, undefined, 'only loopback in this netns: no network reported');
    return;
  }
  t.deepEqual(
    pod.network?.interfaces?.map((i) => i.name),
    expected.map((i) => i.name),
  );
  t.is(pod.network?.name, expected[0]!.name, 'the first interface is the default one');
});

test('the sandbox pid is asked of the runtime once, not at every snapshot; again when its net/dev is gone', async (t) => {
  const { clock, runtime } = await fakeWithPod();
  runtime.listPodSandboxStats = () => Promise.reject(new NodeletError('Unimplemented', 'not implemented'));
  const status = runtime.podSandboxStatus.bind(runtime);
  let verbose = 0;
  let pid = process.pid;
  runtime.podSandboxStatus = async (req) => {
    const res = await status(req);
    if (!req.verbose) return res;
    verbose++;
    return { ...res, info: { info: JSON.stringify({ pid }) } };
  };
  // A /proc of its own: the sandbox's net/dev is there until the sandbox's process is gone.
  const proc = mkdtempSync(join(tmpdir(), 'nodelet-proc-'));
  t.teardown(() => rmSync(proc, { recursive: true, force: true }));
  const netDev = (p: number, rx: number) => {
    mkdirSync(join(proc, String(p), 'net'), { recursive: true });
    writeFileSync(
      join(proc, String(p), 'net', 'dev'),
      'Inter-|   Receive\n face |bytes\n' + `  eth0: ${rx} 1 0 0 0 0 0 0 50 1 0 0 0 0 0 0\n`,
    );
  };
  netDev(pid, 100);
  const provider = hostStatsProvider(runtime, runtime, {
    nodeName: 'host',
    clock,
    rootDir: tmpdir(),
    procRoot: proc,
  });
  t.is((await provider.snapshot()).pods[0]?.network?.rxBytes, 100);
  netDev(pid, 200);
  t.is((await provider.snapshot()).pods[0]?.network?.rxBytes, 200, 'counters read anew');
  t.is(verbose, 1, 'one verbose status for two snapshots');
  // The process is gone (the runtime restarted the sandbox's process): the runtime is asked again.
  rmSync(join(proc, String(pid)), { recursive: true });
  pid += 1;
  netDev(pid, 300);
  t.is((await provider.snapshot()).pods[0]?.network?.rxBytes, 300);
  t.is(verbose, 2);
});

test('rlimit: pid_max and the scheduling entities of /proc/loadavg, for pid.available', async (t) => {
  const { hostRlimit } = await import('./host-stats.js');
  const proc = mkdtempSync(join(tmpdir(), 'nodelet-proc-'));
  t.teardown(() => rmSync(proc, { recursive: true, force: true }));
  mkdirSync(join(proc, 'sys/kernel'), { recursive: true });
  writeFileSync(join(proc, 'sys/kernel/pid_max'), '4194304\n');
  writeFileSync(join(proc, 'loadavg'), '0.52 0.58 0.59 3/912 12345\n');
  t.like(hostRlimit(0, proc), { maxpid: 4194304, curproc: 912 });
  t.is(hostRlimit(0, join(proc, 'missing')), undefined);
});

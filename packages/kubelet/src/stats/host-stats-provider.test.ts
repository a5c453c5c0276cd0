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
import { ContainerConfig, type ImageService, ImageSpec, PodSandboxConfig } from '@nodelet/cri';
import { toSummary, withNodeName } from '../metrics/handlers.js';
import { summarySchema } from '../metrics/test-summary-schema.js';
import { hasDedicatedImageFs } from './host-stats.js';
import { hostStatsProvider } from './host-stats-provider.js';

const hasCgroups =
  existsSync('/sys/fs/cgroup/cpuacct/cpuacct.usage') || existsSync('/sys/fs/cgroup/cpu.stat');

async function fakeWithPod(podLabels: Record<string, string> = {}) {
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
      ...podLabels,
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
  const pid = 4242;
  runtime.podSandboxStatus = async (req) => {
    const res = await status(req);
    // containerd's verbose info names the sandbox's process.
    return req.verbose ? { ...res, info: { info: JSON.stringify({ pid }) } } : res;
  };
  // A /proc of the test's own: the host's interfaces change as other tests make pods.
  const proc = mkdtempSync(join(tmpdir(), 'nodelet-proc-'));
  t.teardown(() => rmSync(proc, { recursive: true, force: true }));
  mkdirSync(join(proc, String(pid), 'net'), { recursive: true });
  writeFileSync(
    join(proc, String(pid), 'net', 'dev'),
    'Inter-|   Receive\n face |bytes\n' +
      '    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n' +
      '  eth0: 100 1 0 0 0 0 0 0 50 1 0 0 0 0 0 0\n' +
      '  net1: 7 1 0 0 0 0 0 0 3 1 0 0 0 0 0 0\n',
  );
  const provider = hostStatsProvider(runtime, runtime, {
    nodeName: 'host',
    clock,
    rootDir: tmpdir(),
    procRoot: proc,
  });
  const pod = (await provider.snapshot()).pods[0]!;
  t.is(pod.containers[0]?.name, 'app');
  t.is(pod.containers[0]?.memory?.workingSetBytes, 10 * 2 ** 20);
  t.truthy(podSandboxId);
  t.deepEqual(
    pod.network?.interfaces?.map((i) => i.name),
    ['eth0', 'net1'],
    'every interface but loopback',
  );
  t.is(pod.network?.name, 'eth0', 'the first interface is the default one');
  t.is(pod.network?.rxBytes, 100);
});

test('ListPodSandboxStats failing over another sandbox (containerd 1.6): container stats serve, the pod call is tried again', async (t) => {
  const { clock, runtime } = await fakeWithPod();
  const podCall = runtime.listPodSandboxStats.bind(runtime);
  let podCalls = 0;
  runtime.listPodSandboxStats = (req) => {
    podCalls++;
    return podCalls === 1
      ? Promise.reject(
          new NodeletError(
            'Internal',
            'failed to decode sandbox container metrics for sandbox "a1ab": failed to get pod sandbox stats since sandbox container "a1ab" is not in ready state',
          ),
        )
      : podCall(req);
  };
  const provider = hostStatsProvider(runtime, runtime, { nodeName: 'host', clock, rootDir: tmpdir() });
  const first = (await provider.snapshot()).pods[0]!;
  t.is(first.containers[0]?.memory?.workingSetBytes, 10 * 2 ** 20, 'from ListContainerStats');
  const second = (await provider.snapshot()).pods[0]!;
  t.is(podCalls, 2, 'the pod-level call again');
  t.is(second.containers[0]?.memory?.workingSetBytes, 10 * 2 ** 20);
});

test('a container the runtime gives no memory for this time (containerd skips a slow shim) keeps its last sample', async (t) => {
  const { clock, runtime } = await fakeWithPod();
  runtime.listPodSandboxStats = () => Promise.reject(new NodeletError('Unimplemented', 'not implemented'));
  const containerStats = runtime.listContainerStats.bind(runtime);
  let skip = false;
  runtime.listContainerStats = async (req) => {
    const res = await containerStats(req);
    return skip ? { stats: res.stats.map((s) => ({ ...s, memory: undefined })) } : res;
  };
  const provider = hostStatsProvider(runtime, runtime, { nodeName: 'host', clock, rootDir: tmpdir() });
  t.is((await provider.snapshot()).pods[0]?.memory?.workingSetBytes, 10 * 2 ** 20);
  skip = true;
  const pod = (await provider.snapshot()).pods[0]!;
  t.is(pod.containers[0]?.memory?.workingSetBytes, 10 * 2 ** 20, 'the last sample, not zero');
  t.is(pod.memory?.workingSetBytes, 10 * 2 ** 20);
});

test("containerd 1.6's ListPodSandboxStats failing while a sandbox is stopped: ListContainerStats serves", async (t) => {
  const { clock, runtime } = await fakeWithPod();
  runtime.listPodSandboxStats = () =>
    Promise.reject(
      new NodeletError(
        'Internal',
        'failed to decode sandbox container metrics for sandbox "e609": failed to get pod sandbox stats since sandbox container "e609" is not in ready state',
      ),
    );
  const provider = hostStatsProvider(runtime, runtime, { nodeName: 'host', clock, rootDir: tmpdir() });
  const pod = (await provider.snapshot()).pods[0]!;
  t.is(pod.containers[0]?.memory?.workingSetBytes, 10 * 2 ** 20);
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

test('a runtime shared by several nodes: another node’s pods are not in this node’s stats', async (t) => {
  for (const [labels, expected] of [
    [{ 'nodelet.dev/node': 'host' }, ['p']],
    [{ 'nodelet.dev/node': 'other' }, []],
    [{}, ['p']],
  ] as const) {
    const { clock, runtime } = await fakeWithPod(labels);
    const provider = hostStatsProvider(runtime, runtime, { nodeName: 'host', clock, rootDir: tmpdir() });
    const pods = (await provider.snapshot()).pods.map((p) => p.podRef.name);
    t.deepEqual(pods, [...expected], JSON.stringify(labels));
  }
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

test('a dedicated image file system is another device than the root dir, as cAdvisor compares them', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'kubelet-root-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const imagesAt = (mountpoint: string) =>
    ({
      imageFsInfo: async () => ({ imageFilesystems: [{ fsId: { mountpoint } }], containerFilesystems: [] }),
    }) as unknown as ImageService;
  mkdirSync(join(root, 'snapshots'));
  t.false(await hasDedicatedImageFs(imagesAt(join(root, 'snapshots')), root), 'a directory beside it');
  t.true(await hasDedicatedImageFs(imagesAt('/proc'), root), 'procfs is a device of its own');
  t.false(await hasDedicatedImageFs(imagesAt(''), root), 'no mount point named: the same');
  const { clock, runtime } = await fakeWithPod();
  const provider = hostStatsProvider(runtime, imagesAt('/proc'), { nodeName: 'host', clock, rootDir: root });
  t.true(await provider.hasDedicatedImageFs());
  t.true(
    await withNodeName(provider, 'host').hasDedicatedImageFs?.(),
    'what the kubelet is given says so too',
  );
});

/**
 * Pod start overhead on real containerd: how long `nodelet kubelet` takes from N static pod manifests
 * written to all N containers Running, against a floor measured in the same run — the same
 * RunPodSandbox + CreateContainer + StartContainer calls made straight to containerd, N pods in flight
 * at once — and the kubelet's resident memory with 0, 10 and 30 running pods.
 *
 *   npx tsc -b bench packages/cli && npm run bench:pod-start --workspace @nodelet/bench -- [--pods 1,10,30] [--repeat 3]
 *
 * Needs root and the containerd of scripts/containerd/setup.sh (socket NODELET_CONTAINERD_SOCKET, default
 * /run/containerd/containerd.sock) with `nodelet.test/busybox:1` imported.
 *
 *   nodelet  one `nodelet kubelet --runtime containerd` child process for the whole run (the CLI, as a
 *            node operator starts it), on a temporary manifest directory, root dir and pod log dir. t0 is
 *            just before the N manifest files are written; the end is the first poll of its read-only
 *            `/pods` (every 20 ms) that shows all N pods Running with every container running. Then
 *            the manifests are removed and the run waits until nodelet and containerd hold none of them.
 *   floor    for each pod, RunPodSandbox + CreateContainer + StartContainer through @nodelet/cri's gRPC
 *            client, with the requests the kubelet makes (its own KubeRuntime.sandboxConfig; the same
 *            image, command, labels, annotations, log path and resources), built before t0; all N pods
 *            at once (Promise.all), as the kubelet starts every pod's worker at once. Then every sandbox
 *            is stopped and removed.
 *   ratio    nodelet / floor, per run (each nodelet run and its floor run back to back, alternating
 *            which goes first); the row holds the medians of --repeat runs.
 *   CPU      the kubelet process's CPU time (/proc/<pid>/stat) from t0 until all were Running, and this
 *            process's CPU time for the floor's calls: on 2 cores, CPU the kubelet burns is CPU
 *            containerd does not get.
 *   RSS      VmRSS of the kubelet process (/proc/<pid>/status), sampled every 250 ms over 3 s — idle
 *            before any pod, and with N pods Running (from 2 s after the last one was seen Running, so
 *            the start burst's garbage has had a collection): the median of the samples (and the
 *            highest, as `rssPeakMiB`); with --repeat, the highest median of the runs.
 *
 * The floor's sandboxes carry another node name, so the kubelet's housekeeping leaves them alone.
 * Prints a table and writes bench/results/pod-start.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Pod, PodList } from '@nodelet/api';
import {
  ContainerConfig,
  containerLogPath,
  CriAnnotations,
  CriLabels,
  createCriClient,
  type CriClient,
  PodSandboxState,
  type RunPodSandboxRequest,
} from '@nodelet/cri';
import { createLogger, RealClock } from '@nodelet/kernel';
import {
  applyStaticPodDefaults,
  containerResources,
  hashContainer,
  ImagePuller,
  KubeRuntime,
  parseManifests,
  VolumeManager,
} from '@nodelet/kubelet';

const IMAGE = 'nodelet.test/busybox:1';
const NODE = 'bench-pod-start';
const FLOOR_NODE = 'bench-pod-start-floor';
const GOALS = { ratio: 1.1, rssMiBAt30: 120 };

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '1,10,30' },
    repeat: { type: 'string', default: '3' },
    'timeout-s': { type: 'string', default: '180' },
    out: { type: 'string' },
  },
  strict: true,
});
const sizes = String(args.pods)
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
if (sizes.length === 0)
  throw new Error(`--pods: expected pod counts like 1,10,30, not ${JSON.stringify(args.pods)}`);
const repeat = Math.max(1, Math.floor(Number(args.repeat)) || 1);
const timeoutMs = Number(args['timeout-s']) * 1000;
const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const outFile = args.out ?? join(benchDir, 'results', 'pod-start.json');
const cliMain = join(benchDir, '..', 'packages', 'cli', 'dist', 'main.js');
const socket = process.env.NODELET_CONTAINERD_SOCKET || '/run/containerd/containerd.sock';
const endpoint = `unix://${socket}`;

// ------------------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------------------

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

function manifest(i: number): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: start-${i}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function getPods(port: number): Promise<Pod[]> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/pods', agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        try {
          resolve((JSON.parse(body) as PodList).items);
        } catch (err) {
          reject(err as Error);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

const allRunning = (pods: Pod[], n: number) =>
  pods.length === n &&
  pods.every(
    (p) =>
      p.status?.phase === 'Running' &&
      (p.status.containerStatuses ?? []).length === 1 &&
      p.status.containerStatuses!.every((c) => !!c.state?.running),
  );

/** CPU time (user + system) a process has used, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
async function cpuMsOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
  return kb / 1024;
}

/** VmRSS sampled every 250 ms over `windowMs`: the median (steady state) and the highest. */
async function sampleRss(pid: number, windowMs = 3000): Promise<{ median: number; peak: number }> {
  const samples: number[] = [];
  const end = Date.now() + windowMs;
  while (Date.now() < end) {
    samples.push(await rssMiB(pid));
    await new Promise((r) => setTimeout(r, 250));
  }
  return { median: median(samples), peak: Math.max(...samples) };
}

// ------------------------------------------------------------------------------------------------
// The kubelet under test
// ------------------------------------------------------------------------------------------------

class Nodelet {
  stderr = '';
  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly manifests: string,
  ) {
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (this.stderr += s));
  }

  static async start(dir: string): Promise<Nodelet> {
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(
      join(dir, 'nodelet.yaml'),
      'apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nkubelet:\n  podLogsDir: ./pod-logs\n',
    );
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        cliMain,
        'kubelet',
        '--runtime',
        'containerd',
        '--container-runtime-endpoint',
        endpoint,
        '--pod-manifest-path',
        manifests,
        '--root-dir',
        join(dir, 'root'),
        '--read-only-port',
        String(port),
        '--hostname-override',
        NODE,
        '--config',
        join(dir, 'nodelet.yaml'),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const k = new Nodelet(child, port, manifests);
    await until(
      'nodelet kubelet to start',
      async () => {
        if (child.exitCode !== null) throw new Error(`nodelet kubelet exited:\n${k.stderr}`);
        return k.stderr.includes('nodelet kubelet running') ? true : undefined;
      },
      30_000,
      50,
    );
    return k;
  }

  /** Writes N manifests; resolves with ms until /pods shows them all Running. */
  async run(n: number): Promise<number> {
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: n }, (_, i) => writeFile(join(this.manifests, `start-${i}.yaml`), manifest(i))),
    );
    await until(
      `${n} pods Running`,
      async () => (allRunning(await getPods(this.port), n) ? true : undefined),
      timeoutMs,
      20,
    );
    return performance.now() - t0;
  }

  async clean(n: number, cri: CriClient): Promise<void> {
    await Promise.all(
      Array.from({ length: n }, (_, i) => rm(join(this.manifests, `start-${i}.yaml`), { force: true })),
    );
    await until(
      'nodelet to remove the pods',
      async () => {
        const pods = await getPods(this.port);
        const { items } = await cri.runtime.listPodSandbox({
          filter: { id: '', labelSelector: { 'nodelet.dev/node': NODE } },
        });
        return pods.length === 0 && items.length === 0 ? true : undefined;
      },
      timeoutMs,
      200,
    );
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

// ------------------------------------------------------------------------------------------------
// The floor
// ------------------------------------------------------------------------------------------------

interface FloorRequest {
  sandbox: RunPodSandboxRequest;
  config: ContainerConfig;
}

/** The requests the kubelet makes for a pod's first sync (sandbox config: the kubelet's own). */
function floorRequests(n: number, logsDir: string, round: number): FloorRequest[] {
  const clock = new RealClock();
  const logger = createLogger({ sink: () => {} });
  const cri = createCriClient(endpoint); // only for KubeRuntime's constructor: no call is made
  const shapes = new KubeRuntime(
    cri.runtime,
    new ImagePuller(cri.image, clock, logger),
    new VolumeManager(tmpdir()),
    {
      nodeName: FLOOR_NODE,
      podLogsDir: logsDir,
      memoryCapacityBytes: 64 * 1024 ** 3,
      clock,
      logger,
    },
  );
  cri.close();
  const out: FloorRequest[] = [];
  for (let i = 0; i < n; i++) {
    const file = `/floor/${round}/start-${i}.yaml`;
    const { pods } = parseManifests(manifest(i), file, {
      defaults: (pod) =>
        applyStaticPodDefaults(pod, { source: 'file', origin: file, nodeName: FLOOR_NODE, now: Date.now() }),
    });
    const pod = pods[0]!;
    const meta = pod.metadata!;
    const container = pod.spec!.containers[0]!;
    const res = containerResources(pod, container, 64 * 1024 ** 3);
    const sandboxConfig = shapes.sandboxConfig(pod, 0);
    out.push({
      sandbox: { config: sandboxConfig, runtimeHandler: '' },
      config: ContainerConfig.fromPartial({
        metadata: { name: container.name, attempt: 0 },
        image: { image: IMAGE, userSpecifiedImage: container.image ?? '' },
        command: container.command ?? [],
        labels: {
          [CriLabels.PodName]: meta.name!,
          [CriLabels.PodNamespace]: meta.namespace ?? 'default',
          [CriLabels.PodUID]: meta.uid!,
          [CriLabels.ContainerName]: container.name,
          'nodelet.dev/node': FLOOR_NODE,
        },
        annotations: {
          [CriAnnotations.ContainerHash]: hashContainer(container),
          [CriAnnotations.ContainerRestartCount]: '0',
          [CriAnnotations.ContainerTerminationMessagePath]: '/dev/termination-log',
          [CriAnnotations.ContainerTerminationMessagePolicy]: 'File',
          [CriAnnotations.PodTerminationGracePeriod]: '2',
        },
        logPath: containerLogPath(container.name, 0),
        linux: {
          resources: {
            cpuShares: BigInt(res.cpuShares),
            cpuQuota: BigInt(res.cpuQuota),
            cpuPeriod: BigInt(res.cpuPeriod),
            memoryLimitInBytes: BigInt(res.memoryLimitInBytes),
            oomScoreAdj: BigInt(res.oomScoreAdj),
          },
          securityContext: { privileged: false, readonlyRootfs: false },
        },
      }),
    });
  }
  return out;
}

async function runFloor(cri: CriClient, n: number, logsDir: string, round: number): Promise<number> {
  const requests = floorRequests(n, logsDir, round);
  await Promise.all(requests.map((r) => mkdir(r.sandbox.config!.logDirectory, { recursive: true })));
  const t0 = performance.now();
  await Promise.all(
    requests.map(async ({ sandbox, config }) => {
      const { podSandboxId } = await cri.runtime.runPodSandbox(sandbox);
      const { containerId } = await cri.runtime.createContainer({
        podSandboxId,
        config,
        sandboxConfig: sandbox.config,
      });
      await cri.runtime.startContainer({ containerId });
    }),
  );
  return performance.now() - t0;
}

/** Stops and removes every sandbox of the floor (RemovePodSandbox retried on "device or resource busy"). */
async function cleanFloor(cri: CriClient): Promise<void> {
  const { items } = await cri.runtime.listPodSandbox({
    filter: { id: '', labelSelector: { 'nodelet.dev/node': FLOOR_NODE } },
  });
  await Promise.all(
    items.map(async (sb) => {
      if (sb.state === PodSandboxState.SANDBOX_READY)
        await cri.runtime.stopPodSandbox({ podSandboxId: sb.id });
      await until(
        `sandbox ${sb.id} removed`,
        () =>
          cri.runtime.removePodSandbox({ podSandboxId: sb.id }).then(
            () => true,
            (err: Error) => (/busy/.test(err.message) ? undefined : Promise.reject(err)),
          ),
        60_000,
        500,
      );
    }),
  );
}

// ------------------------------------------------------------------------------------------------
// Main
// ------------------------------------------------------------------------------------------------

interface Row {
  pods: number;
  floorMs: number;
  nodeletMs: number;
  ratio: number;
  rssMiB: number;
  rssPeakMiB: number;
  /** CPU the kubelet process used from t0 until all pods were Running (median). */
  kubeletCpuMs: number;
  /** CPU this process used for the floor's calls (median). */
  floorCpuMs: number;
  perRun: Array<{
    floorMs: number;
    nodeletMs: number;
    ratio: number;
    kubeletCpuMs: number;
    floorCpuMs: number;
    first: 'floor' | 'nodelet';
  }>;
}

const cri = createCriClient(endpoint, { timeoutMs: 120_000 });
const version = await cri.runtime.version({ version: '0.1.0' }).catch((err: Error) => {
  throw new Error(
    `containerd is not available at ${endpoint} (${err.message}); run scripts/containerd/setup.sh`,
  );
});
const dir = await mkdtemp(join(tmpdir(), 'nodelet-bench-pod-start-'));
const floorLogs = join(dir, 'floor-logs');
const k = await Nodelet.start(dir);
const rows: Row[] = [];
let rss0 = { median: 0, peak: 0 };
try {
  rss0 = await sampleRss(k.child.pid!);
  let round = 0;
  for (const n of sizes) {
    const perRun: Row['perRun'] = [];
    let rss = { median: 0, peak: 0 };
    for (let r = 0; r < repeat; r++) {
      const floorFirst = r % 2 === 0;
      let floorMs = 0;
      let nodeletMs = 0;
      let kubeletCpuMs = 0;
      let floorCpuMs = 0;
      for (const which of floorFirst ? ['floor', 'nodelet'] : ['nodelet', 'floor']) {
        if (which === 'floor') {
          const cpu0 = process.cpuUsage();
          floorMs = await runFloor(cri, n, floorLogs, round++);
          const cpu = process.cpuUsage(cpu0);
          floorCpuMs = (cpu.user + cpu.system) / 1000;
          await cleanFloor(cri);
        } else {
          const cpu0 = await cpuMsOf(k.child.pid!);
          nodeletMs = await k.run(n);
          kubeletCpuMs = (await cpuMsOf(k.child.pid!)) - cpu0;
          await new Promise((r) => setTimeout(r, 2000));
          const sample = await sampleRss(k.child.pid!);
          rss = { median: Math.max(rss.median, sample.median), peak: Math.max(rss.peak, sample.peak) };
          await k.clean(n, cri);
        }
      }
      perRun.push({
        floorMs,
        nodeletMs,
        ratio: nodeletMs / floorMs,
        kubeletCpuMs,
        floorCpuMs,
        first: floorFirst ? 'floor' : 'nodelet',
      });
      process.stderr.write(
        `  N=${n} run ${r + 1}/${repeat}: floor ${floorMs.toFixed(0)} ms, nodelet ${nodeletMs.toFixed(0)} ms, ratio ${(nodeletMs / floorMs).toFixed(2)}\n`,
      );
    }
    rows.push({
      pods: n,
      floorMs: median(perRun.map((p) => p.floorMs)),
      nodeletMs: median(perRun.map((p) => p.nodeletMs)),
      ratio: median(perRun.map((p) => p.ratio)),
      rssMiB: rss.median,
      rssPeakMiB: rss.peak,
      kubeletCpuMs: median(perRun.map((p) => p.kubeletCpuMs)),
      floorCpuMs: median(perRun.map((p) => p.floorCpuMs)),
      perRun,
    });
  }
} finally {
  await k.stop();
  await cleanFloor(cri).catch(() => undefined);
  cri.close();
  await rm(dir, { recursive: true, force: true });
}

const fmt = (x: number, d = 0) => x.toFixed(d);
console.log(
  `\npod start on containerd ${version.runtimeVersion} (load ${loadavg()[0]!.toFixed(2)}), medians of ${repeat} runs\n`,
);
console.log('pods  floor ms  nodelet ms  ratio  goal  floor CPU ms  kubelet CPU ms  kubelet RSS MiB (peak)');
console.log(
  `   0         -           -      -     -             -               -  ${fmt(rss0.median, 1)} (${fmt(rss0.peak, 1)})`,
);
for (const r of rows) {
  console.log(
    `${String(r.pods).padStart(4)}  ${fmt(r.floorMs).padStart(8)}  ${fmt(r.nodeletMs).padStart(10)}  ${fmt(r.ratio, 2).padStart(5)}  ${r.ratio <= GOALS.ratio ? ' ok ' : 'MISS'}  ${fmt(r.floorCpuMs).padStart(12)}  ${fmt(r.kubeletCpuMs).padStart(14)}  ${fmt(r.rssMiB, 1)} (${fmt(r.rssPeakMiB, 1)})`,
  );
}
const result = {
  date: new Date().toISOString(),
  runtime: `${version.runtimeName} ${version.runtimeVersion}`,
  loadavg1: loadavg()[0],
  repeat,
  goals: GOALS,
  rssMiBIdle: rss0.median,
  rssPeakMiBIdle: rss0.peak,
  rows,
};
await mkdir(dirname(outFile), { recursive: true });
await writeFile(outFile, JSON.stringify(result, null, 2) + '\n');
console.log(`\nwrote ${outFile}`);

/**
 * Pod density on the fake runtime: how fast, and at what memory cost, one kubelet brings N static pods
 * to Running — against a floor measured in the same run: the same CRI calls made straight to a fresh
 * FakeRuntime, with no kubelet in between.
 *
 *   npm run bench:density --workspace @nodelet/bench -- [--pods 1000,10000] [--source memory|files]
 *
 * Per N and source:
 *
 *   kubelet  a fresh FakeRuntime on a RealClock (pull latency 0, the pod image preloaded) and a Kubelet.
 *            At t0 it is given N static-pod-shaped pods (`bench-<i>`, one busybox container, distinct
 *            UIDs): `memory` applies them as one snapshot of a registered source (the path the API source
 *            takes); `files` starts the kubelet on a directory of N manifest files, read by the real
 *            FileSource. Each pod's time to Running is taken from the bus (`[Status] Pod Status Changed`,
 *            the first status with phase Running). Heap per pod = (heapUsed after gc with N pods running
 *            and the workers idle − heapUsed before the pods existed) / N.
 *   floor    a fresh FakeRuntime, and for each pod RunPodSandbox + CreateContainer + StartContainer with
 *            requests of the kubelet's shape (built before t0), all N pods in flight at once
 *            (Promise.all), as the kubelet starts every pod's worker at once.
 *   ratio    kubelet total / floor total.
 *
 * Prints a table and merges its rows (by source and N) into bench/results/density.json. Options:
 *
 *   --pods 1000,10000      pod counts                 --source memory|files|memory,files
 *   --repeat K             K runs each, medians       --warmup N     warm-up pods, untimed (200)
 *   --timeout-s S          give up on a run (600)     --out FILE     results file
 *
 * Diagnostics (their figures go to results/density-diagnostics.json unless --out is given):
 *
 *   --cpu-prof-dir DIR     a CPU profile of each timed window (kubelet and floor)
 *   --count-calls          CRI calls and bus events per pod (a counting proxy: slower)
 *   --pleg-relist-ms MS    the kubelet's PLEG relist period (to see what the relist-triggered syncs cost)
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Session } from 'node:inspector/promises';
import type { Pod } from '@nodelet/api';
import {
  ContainerConfig,
  containerLogPath,
  CriAnnotations,
  CriLabels,
  type CreateContainerRequest,
  type RunPodSandboxRequest,
  type RuntimeService,
  type ImageService,
} from '@nodelet/cri';
import { EventBus, type LogLevel, RealClock } from '@nodelet/kernel';
import {
  applyStaticPodDefaults,
  containerResources,
  criLinuxResources,
  hashContainer,
  ImagePuller,
  Kubelet,
  KubeRuntime,
  parseManifests,
  PodNetwork,
  VolumeManager,
} from '@nodelet/kubelet';
import { FakeRuntime, PAUSE_IMAGE } from '@nodelet/runtime-fake';
import { benchLogger } from './bench-logger.js';

// ------------------------------------------------------------------------------------------------
// Parameters
// ------------------------------------------------------------------------------------------------

type SourceKind = 'memory' | 'files';

const NODE_NAME = 'bench-node';
const HOST_IP = '192.0.2.10';
const IMAGE = 'busybox:1.36';
/** Fixed, so oom_score_adj and friends do not depend on the machine. */
const MEMORY_CAPACITY = 64 * 1024 ** 3;
const RUNTIME_CONFIG = {
  pullLatencyMs: 0,
  // The pod image is present, as on a node that already ran these pods: this measures starting pods,
  // not pulling (pinned to 0 ms here, the fake's default is 100 ms; it would add a PullImage per pod).
  preloadedImages: [PAUSE_IMAGE, `docker.io/library/${IMAGE}`],
};

const GOALS = { podsPerSecond: 1000, ratioToFloor: 2, heapKiBPerPod: 20 };

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '1000,10000' },
    source: { type: 'string', default: 'memory' },
    'timeout-s': { type: 'string', default: '600' },
    warmup: { type: 'string', default: '200' },
    /** Diagnostics: the kubelet's PLEG relist period (default: the kubelet's, 1 s). */
    'pleg-relist-ms': { type: 'string' },
    /** Run each (source, N) this many times and report medians: for a busy machine. */
    repeat: { type: 'string', default: '1' },
    /** Diagnostics: count CRI calls and bus events per pod (adds overhead; not for the figures). */
    'count-calls': { type: 'boolean', default: false },
    out: { type: 'string' },
    /** Write a CPU profile of each kubelet run's timed window (t0 until every pod is Running) into this directory. */
    'cpu-prof-dir': { type: 'string' },
  },
  strict: true,
});

const sizes = String(args.pods)
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
const sourceKinds = String(args.source)
  .split(',')
  .map((s) => s.trim()) as SourceKind[];
for (const s of sourceKinds) {
  if (s !== 'memory' && s !== 'files')
    throw new Error(`--source: expected memory or files, not ${JSON.stringify(s)}`);
}
if (sizes.length === 0)
  throw new Error(`--pods: expected a comma-separated list of pod counts, not ${JSON.stringify(args.pods)}`);
const timeoutMs = Number(args['timeout-s']) * 1000;
const warmupPods = Number(args.warmup);
const plegRelistPeriodMs = args['pleg-relist-ms'] === undefined ? undefined : Number(args['pleg-relist-ms']);
const repeat = Math.max(1, Math.floor(Number(args.repeat)) || 1);
const countCalls = !!args['count-calls'];
const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const cpuProfDir = args['cpu-prof-dir'];
const diagnostic = countCalls || plegRelistPeriodMs !== undefined || cpuProfDir !== undefined;
const outFile =
  args.out ?? join(benchDir, 'results', diagnostic ? 'density-diagnostics.json' : 'density.json');

const gc: () => void =
  globalThis.gc ??
  (() => {
    throw new Error('run with node --expose-gc (npm run bench:density does)');
  });

// ------------------------------------------------------------------------------------------------
// Pods and manifests
// ------------------------------------------------------------------------------------------------

function manifest(i: number): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: bench-${i}
spec:
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sleep", "infinity"]
`;
}

const manifestFile = (dir: string, i: number) => join(dir, `bench-${i}.yaml`);

/** The pods the FileSource would make of the manifests in `dir`: same parser, same static-pod defaults. */
function staticPods(n: number, dir: string, now: number): Pod[] {
  const pods: Pod[] = [];
  for (let i = 0; i < n; i++) {
    const file = manifestFile(dir, i);
    const { pods: parsed, errors } = parseManifests(manifest(i), file, {
      defaults: (pod) =>
        applyStaticPodDefaults(pod, { source: 'file', origin: file, nodeName: NODE_NAME, now }),
    });
    if (errors.length > 0 || parsed.length !== 1)
      throw new Error(`bench manifest ${i}: ${errors.join('; ')}`);
    pods.push(parsed[0]!);
  }
  return pods;
}

async function writeManifests(n: number, dir: string): Promise<void> {
  const batch = 256;
  for (let i = 0; i < n; i += batch) {
    const writes: Promise<void>[] = [];
    for (let j = i; j < Math.min(n, i + batch); j++)
      writes.push(writeFile(manifestFile(dir, j), manifest(j)));
    await Promise.all(writes);
  }
}

// ------------------------------------------------------------------------------------------------
// Measuring helpers
// ------------------------------------------------------------------------------------------------

/** A CPU profile of a window of this process (the timed part of a run), when --cpu-prof-dir is given. */
async function startProfile(): Promise<((name: string) => Promise<void>) | undefined> {
  if (!cpuProfDir) return undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  return async (name) => {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    await mkdir(cpuProfDir, { recursive: true });
    const file = join(cpuProfDir, `${name}.cpuprofile`);
    await writeFile(file, JSON.stringify(profile));
    console.error(`density: wrote ${file}`);
  };
}

async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    await nextTurn();
    gc();
  }
  return process.memoryUsage().heapUsed;
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

type Runtime = RuntimeService & ImageService;

/** Diagnostics only: wraps the runtime so every CRI call is counted by method. */
function counting(runtime: FakeRuntime, calls: Map<string, number>): Runtime {
  return new Proxy(runtime, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...a: unknown[]) => {
        calls.set(prop, (calls.get(prop) ?? 0) + 1);
        return (value as (...x: unknown[]) => unknown).apply(target, a);
      };
    },
  });
}

// ------------------------------------------------------------------------------------------------
// The kubelet run
// ------------------------------------------------------------------------------------------------

interface KubeletRun {
  completed: boolean;
  running: number;
  totalMs: number;
  /** CPU time (user + system, all threads) of the process from t0 until every pod was Running. */
  cpuMs: number;
  /** t0 until the source's pods reached the kubelet (`[Source] Pod Added`): reading the manifests, for files. */
  podsAddedMs: number;
  p50Ms: number;
  p99Ms: number;
  /** t0 until the pod workers were first idle with every pod Running. */
  settledMs: number;
  heapKiBPerPod: number;
  statusEvents: number;
  logs: Record<LogLevel, number>;
  podListRunning: number;
  runtimeRunning: number;
  criCallsPerPod?: Record<string, number>;
  busEventsPerPod?: Record<string, number>;
}

async function runKubelet(n: number, source: SourceKind, profile = true): Promise<KubeletRun> {
  const work = await mkdtemp(join(tmpdir(), 'nodelet-density-'));
  const manifests = join(work, 'manifests');
  await mkdir(manifests);
  try {
    if (source === 'files') await writeManifests(n, manifests);

    const clock = new RealClock();
    const { logger, counts: logs } = benchLogger();
    const bus = new EventBus(clock, logger);
    const fake = new FakeRuntime({ clock, logger: logger.child('runtime-fake'), config: RUNTIME_CONFIG });
    const calls = new Map<string, number>();
    const runtime: Runtime = countCalls ? counting(fake, calls) : fake;
    const busEvents = new Map<string, number>();
    if (countCalls) bus.events$.subscribe((e) => busEvents.set(e.type, (busEvents.get(e.type) ?? 0) + 1));

    const kubelet = new Kubelet(
      { runtime, images: runtime, bus, clock, logger },
      {
        nodeName: NODE_NAME,
        hostIP: HOST_IP,
        rootDir: join(work, 'root'),
        podLogsDir: join(work, 'logs'),
        memoryCapacityBytes: MEMORY_CAPACITY,
        maxPods: n, // admission counts pods: the bench node holds them all
        ...(plegRelistPeriodMs !== undefined ? { plegRelistPeriodMs } : {}),
        ...(source === 'files' ? { podManifestPath: manifests } : {}),
      },
    );
    // The memory source: a registered source that hands PodConfig its snapshot itself (as the API source).
    if (source === 'memory') kubelet.podConfig.register('api');

    // Per-pod time to Running, from the status manager's events.
    const runningAt = new Map<string, number>();
    let statusEvents = 0;
    let t0 = 0;
    let allRunning!: () => void;
    const done = new Promise<void>((resolve) => (allRunning = resolve));
    // When the source's pods reached the kubelet (PodConfig emits them all in one go).
    let podsAddedMs = NaN;
    const added = bus.subscribe('[Source] Pod Added', () => {
      podsAddedMs = performance.now() - t0;
      added.unsubscribe();
    });
    const subscription = bus.subscribe('[Status] Pod Status Changed', (e) => {
      statusEvents++;
      if (e.status.phase !== 'Running' || runningAt.has(e.podUid)) return;
      runningAt.set(e.podUid, performance.now() - t0);
      if (runningAt.size === n) allRunning();
    });

    if (source === 'memory') await kubelet.start();
    const heapBefore = await heapAfterGc();

    let pods: Pod[] | undefined = source === 'memory' ? staticPods(n, manifests, clock.now()) : undefined;
    const stopProfile = profile ? await startProfile() : undefined;
    const cpu0 = process.cpuUsage();
    t0 = performance.now();
    if (source === 'memory') {
      kubelet.podConfig.apply('api', pods!);
    } else {
      await kubelet.start();
    }
    pods = undefined; // the kubelet holds its own copies

    let timer: NodeJS.Timeout | undefined;
    const completed = await Promise.race([
      done.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    const totalMs = performance.now() - t0;
    const cpuMs = cpuMsSince(cpu0);
    subscription.unsubscribe();
    const latencies = Float64Array.from(runningAt.values()).sort();
    // Bounded: a kubelet that never settles must not hang the benchmark.
    let idleTimer: NodeJS.Timeout | undefined;
    await Promise.race([
      kubelet.workers.whenIdle(),
      new Promise<void>((resolve) => (idleTimer = setTimeout(resolve, completed ? timeoutMs : 0))),
    ]);
    clearTimeout(idleTimer);
    const settledMs = performance.now() - t0;
    await stopProfile?.(`kubelet-${source}-${n}`);

    runningAt.clear();

    const heapAfter = await heapAfterGc();
    const podListRunning = kubelet.podList().items.filter((p) => p.status?.phase === 'Running').length;
    const runtimeRunning = fake.counts().running;

    await kubelet.stop();
    fake.close();

    const perPod = (m: Map<string, number>) =>
      Object.fromEntries([...m].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, round(v / n, 2)]));
    return {
      completed,
      running: latencies.length,
      totalMs,
      cpuMs,
      podsAddedMs,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      settledMs,
      heapKiBPerPod: (heapAfter - heapBefore) / n / 1024,
      statusEvents,
      logs,
      podListRunning,
      runtimeRunning,
      ...(countCalls ? { criCallsPerPod: perPod(calls), busEventsPerPod: perPod(busEvents) } : {}),
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------------------
// The floor: the same CRI calls, straight to the runtime
// ------------------------------------------------------------------------------------------------

interface FloorRequest {
  sandbox: RunPodSandboxRequest;
  config: ContainerConfig;
}

/** The requests the kubelet makes for a pod on its first sync: the sandbox config is the kubelet's own. */
function floorRequests(pods: Pod[], shapes: KubeRuntime): FloorRequest[] {
  return pods.map((pod) => {
    const sandboxConfig = shapes.sandboxConfig(pod, 0);
    const meta = pod.metadata!;
    const container = pod.spec!.containers[0]!;
    const res = containerResources(pod, container, MEMORY_CAPACITY);
    const config = ContainerConfig.fromPartial({
      metadata: { name: container.name, attempt: 0 },
      image: { image: `${IMAGE}`, userSpecifiedImage: container.image ?? '' },
      command: container.command ?? [],
      args: container.args ?? [],
      workingDir: container.workingDir ?? '',
      envs: [],
      mounts: [],
      labels: {
        [CriLabels.PodName]: meta.name!,
        [CriLabels.PodNamespace]: meta.namespace ?? 'default',
        [CriLabels.PodUID]: meta.uid!,
        [CriLabels.ContainerName]: container.name,
      },
      annotations: {
        [CriAnnotations.ContainerHash]: hashContainer(container),
        [CriAnnotations.ContainerRestartCount]: '0',
        [CriAnnotations.ContainerTerminationMessagePath]:
          container.terminationMessagePath ?? '/dev/termination-log',
        [CriAnnotations.ContainerTerminationMessagePolicy]: container.terminationMessagePolicy ?? 'File',
        [CriAnnotations.PodTerminationGracePeriod]: String(pod.spec?.terminationGracePeriodSeconds ?? 30),
      },
      logPath: containerLogPath(container.name, 0),
      stdin: false,
      stdinOnce: false,
      tty: false,
      linux: {
        resources: criLinuxResources(res),
        securityContext: { privileged: false, readonlyRootfs: false },
      },
    });
    return { sandbox: { config: sandboxConfig, runtimeHandler: '' }, config };
  });
}

interface FloorRun {
  totalMs: number;
  /** CPU time (user + system, all threads) of the process in the timed window. */
  cpuMs: number;
  heapKiBPerPod: number;
  running: number;
}

async function runFloor(n: number, profile = true): Promise<FloorRun> {
  const clock = new RealClock();
  const { logger } = benchLogger();
  const runtime = new FakeRuntime({ clock, logger: logger.child('runtime-fake'), config: RUNTIME_CONFIG });
  const shapes = new KubeRuntime(
    runtime,
    new ImagePuller(runtime, clock, logger),
    new VolumeManager(tmpdir()),
    {
      nodeName: NODE_NAME,
      podLogsDir: '/var/log/pods',
      memoryCapacityBytes: MEMORY_CAPACITY,
      clock,
      logger,
      network: new PodNetwork({}, { rootDir: tmpdir(), nodeIPs: [], logger }),
    },
  );
  let requests: FloorRequest[] | undefined = floorRequests(
    staticPods(n, '/etc/kubernetes/manifests', clock.now()),
    shapes,
  );
  const heapBefore = await heapAfterGc();

  const stopProfile = profile ? await startProfile() : undefined;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    requests.map(async ({ sandbox, config }) => {
      const { podSandboxId } = await runtime.runPodSandbox(sandbox);
      const { containerId } = await runtime.createContainer({
        podSandboxId,
        config,
        sandboxConfig: sandbox.config,
      } satisfies CreateContainerRequest);
      await runtime.startContainer({ containerId });
    }),
  );
  const totalMs = performance.now() - t0;
  const cpuMs = cpuMsSince(cpu0);
  await stopProfile?.(`floor-${n}`);

  const heapAfter = await heapAfterGc(); // the requests are still held, as before: the difference is the runtime's
  const running = runtime.counts().running;
  requests = undefined;
  runtime.close();
  return { totalMs, cpuMs, heapKiBPerPod: (heapAfter - heapBefore) / n / 1024, running };
}

// ------------------------------------------------------------------------------------------------
// Main
// ------------------------------------------------------------------------------------------------

const round = (x: number, digits: number) => (Number.isFinite(x) ? Number(x.toFixed(digits)) : x);

interface Row {
  date: string;
  n: number;
  source: SourceKind;
  completed: boolean;
  /** The machine's 1-minute load average when the row was done: other work on the machine skews the figures. */
  loadAvg1m: number;
  runs: number;
  totalS: number;
  podsPerS: number;
  p50Ms: number;
  p99Ms: number;
  heapKiBPerPod: number;
  floorS: number;
  ratio: number;
  floorHeapKiBPerPod: number;
  floorPodsPerS: number;
  /** CPU seconds (all threads) of the kubelet run and of the floor: on a busy machine, a check on wall time. */
  cpuS: number;
  floorCpuS: number;
  settledS: number;
  /** t0 until the pods reached the kubelet: for files, the time to read and parse the manifests. */
  podsAddedS: number;
  statusEventsPerPod: number;
  logs: Record<LogLevel, number>;
  checks: { running: number; podListRunning: number; runtimeRunning: number; floorRunning: number };
  /** Each run's own figures (with --repeat, the row holds their medians). */
  perRun: {
    totalS: number;
    floorS: number;
    ratio: number;
    p50Ms: number;
    p99Ms: number;
    heapKiBPerPod: number;
    cpuS: number;
  }[];
  criCallsPerPod?: Record<string, number>;
  busEventsPerPod?: Record<string, number>;
}

function table(rows: Row[]): string {
  const head = [
    'N',
    'source',
    'total s',
    'pods/s',
    'p50 ms',
    'p99 ms',
    'heap KiB/pod',
    'floor s',
    'ratio',
    'floor heap KiB/pod',
  ];
  const body = rows.map((r) => [
    String(r.n),
    r.source + (r.completed ? '' : ' (INCOMPLETE)'),
    r.totalS.toFixed(3),
    r.podsPerS.toFixed(0),
    r.p50Ms.toFixed(1),
    r.p99Ms.toFixed(1),
    r.heapKiBPerPod.toFixed(1),
    r.floorS.toFixed(3),
    r.ratio.toFixed(1) + '×',
    r.floorHeapKiBPerPod.toFixed(1),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) =>
    '| ' + cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ') + ' |';
  const rule =
    '|' + widths.map((w, i) => (i < 2 ? ':' + '-'.repeat(w + 1) : '-'.repeat(w + 1) + ':')).join('|') + '|';
  return [line(head), rule, ...body.map(line)].join('\n');
}

async function main(): Promise<void> {
  const cpu = cpus();
  console.error(
    `density: pods ${sizes.join(',')}; source ${sourceKinds.join(',')}; ${cpu.length} × ${cpu[0]?.model ?? 'cpu'}; node ${process.version}`,
  );
  if (warmupPods > 0) {
    // JIT warm-up of both paths, so neither run pays for compiling the code the other already compiled.
    await runFloor(warmupPods, false);
    await runKubelet(warmupPods, 'memory', false);
  }

  const rows: Row[] = [];
  for (const source of sourceKinds) {
    for (const n of sizes) {
      const ks: KubeletRun[] = [];
      const fs: FloorRun[] = [];
      for (let r = 1; r <= repeat; r++) {
        const of = repeat > 1 ? ` (${r}/${repeat})` : '';
        console.error(`density: N=${n} source=${source}${of}: kubelet…`);
        ks.push(await runKubelet(n, source));
        await heapAfterGc();
        console.error(`density: N=${n} source=${source}${of}: floor…`);
        fs.push(await runFloor(n));
        await heapAfterGc();
      }
      // With --repeat, each figure is the median over the runs; the ratio is the median of the ratios of
      // kubelet and floor runs made back to back (so under the same load).
      const k = ks[0]!;
      const med = (xs: number[]) => {
        const s = [...xs].sort((a, b) => a - b);
        return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
      };
      const totalMs = med(ks.map((x) => x.totalMs));
      const floorMs = med(fs.map((x) => x.totalMs));
      const completed = ks.every((x) => x.completed);
      const row: Row = {
        date: new Date().toISOString(),
        n,
        source,
        completed,
        loadAvg1m: round(loadavg()[0]!, 2),
        runs: ks.length,
        totalS: round(totalMs / 1000, 4),
        podsPerS: round(
          completed ? n / (totalMs / 1000) : med(ks.map((x) => x.running)) / (totalMs / 1000),
          1,
        ),
        p50Ms: round(med(ks.map((x) => x.p50Ms)), 2),
        p99Ms: round(med(ks.map((x) => x.p99Ms)), 2),
        heapKiBPerPod: round(med(ks.map((x) => x.heapKiBPerPod)), 2),
        floorS: round(floorMs / 1000, 4),
        ratio: round(med(ks.map((x, i) => x.totalMs / fs[i]!.totalMs)), 2),
        floorHeapKiBPerPod: round(med(fs.map((x) => x.heapKiBPerPod)), 2),
        floorPodsPerS: round(n / (floorMs / 1000), 1),
        cpuS: round(med(ks.map((x) => x.cpuMs)) / 1000, 4),
        floorCpuS: round(med(fs.map((x) => x.cpuMs)) / 1000, 4),
        settledS: round(med(ks.map((x) => x.settledMs)) / 1000, 4),
        podsAddedS: round(med(ks.map((x) => x.podsAddedMs)) / 1000, 4),
        statusEventsPerPod: round(k.statusEvents / n, 2),
        logs: k.logs,
        checks: {
          running: Math.min(...ks.map((x) => x.running)),
          podListRunning: Math.min(...ks.map((x) => x.podListRunning)),
          runtimeRunning: Math.min(...ks.map((x) => x.runtimeRunning)),
          floorRunning: Math.min(...fs.map((x) => x.running)),
        },
        ...(k.criCallsPerPod ? { criCallsPerPod: k.criCallsPerPod, busEventsPerPod: k.busEventsPerPod } : {}),
        perRun: ks.map((x, i) => ({
          totalS: round(x.totalMs / 1000, 4),
          floorS: round(fs[i]!.totalMs / 1000, 4),
          ratio: round(x.totalMs / fs[i]!.totalMs, 2),
          p50Ms: round(x.p50Ms, 2),
          p99Ms: round(x.p99Ms, 2),
          heapKiBPerPod: round(x.heapKiBPerPod, 2),
          cpuS: round(x.cpuMs / 1000, 4),
        })),
      };
      rows.push(row);
      console.error(`density: N=${n} source=${source}: ${JSON.stringify(row)}`);
    }
  }

  console.log(table(rows));
  console.log(
    `goals: ≥ ${GOALS.podsPerSecond} pods/s, ≤ ${GOALS.ratioToFloor}× floor, ≤ ${GOALS.heapKiBPerPod} KiB heap per pod` +
      (repeat > 1 ? `; figures are medians of ${repeat} runs` : '') +
      (countCalls ? '  (--count-calls: figures include counting overhead)' : ''),
  );

  // Merge into the results file: the rows of this run replace earlier rows of the same source and N.
  let previous: Row[] = [];
  try {
    previous = (JSON.parse(await readFile(outFile, 'utf8')) as { rows?: Row[] }).rows ?? [];
  } catch {
    // no results yet
  }
  const key = (r: Row) => `${r.source}/${r.n}`;
  const fresh = new Set(rows.map(key));
  const merged = [...previous.filter((r) => !fresh.has(key(r))), ...rows].sort(
    (a, b) => a.source.localeCompare(b.source) || a.n - b.n,
  );
  await mkdir(dirname(outFile), { recursive: true });
  await writeFile(
    outFile,
    JSON.stringify(
      {
        benchmark: 'density',
        machine: {
          cpus: cpu.length,
          cpuModel: cpu[0]?.model ?? '',
          totalMemBytes: totalmem(),
          node: process.version,
          platform: process.platform,
        },
        goals: GOALS,
        rows: merged,
      },
      null,
      2,
    ) + '\n',
  );
  console.error(`density: wrote ${outFile}`);
}

await main();

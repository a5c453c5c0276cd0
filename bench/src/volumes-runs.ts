/**
 * The three timed paths of the volumes benchmark (volumes.ts): a kubelet joined to an in-memory API
 * server starting N pods, with or without volumes, and the floor — the same volume files written with
 * the atomic writer, no kubelet.
 */
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Pod } from '@nodelet/api';
import { FakeKubeApi } from '@nodelet/client/testing';
import { EventBus, RealClock } from '@nodelet/kernel';
import { Kubelet } from '@nodelet/kubelet';
import { FakeRuntime, PAUSE_IMAGE } from '@nodelet/runtime-fake';
import { AtomicWriter, type FileProjection } from '@nodelet/volume';
import { benchLogger } from './bench-logger.js';
import {
  benchPod,
  expectedVolumes,
  IMAGE,
  NAMESPACE,
  NODE_NAME,
  sampleIndices,
  seedObjects,
  TOKEN_SECONDS,
  volumeProblems,
} from './volumes-pods.js';

export interface RunOptions {
  /** A run that has not got every pod Running by then is marked incomplete. */
  timeoutMs: number;
  /** Pods whose volume files are checked. */
  sampleCount: number;
}

const RUNTIME_CONFIG = { pullLatencyMs: 0, preloadedImages: [PAUSE_IMAGE, `docker.io/library/${IMAGE}`] };
const PODS = '/api/v1/pods';

// ------------------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------------------

/** Nearest-rank percentile. */
function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length))) - 1]!;
}

const cpuMsSince = (start: NodeJS.CpuUsage) => {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
};

/** Waits for `cond`, polling every 5 ms; fails naming `what` after `ms`. */
async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`volumes: ${what} not seen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Resolves with `p`'s value, or with `fallback` after `ms`. */
async function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** `create token`, `patch pod status`, `watch configmaps`, …: what the API was asked, by kind. */
function callKind(verb: string, what: string): string {
  if (what.endsWith('/token')) return `${verb} token`;
  if (what.startsWith('pod/') && what.endsWith('/status')) return `${verb} pod status`;
  return `${verb} ${what.split('/')[0]}`;
}

// ------------------------------------------------------------------------------------------------
// The kubelet runs: plain and volumes
// ------------------------------------------------------------------------------------------------

export interface KubeletRun {
  completed: boolean;
  totalMs: number;
  p50Ms: number;
  p99Ms: number;
  cpuMs: number;
  /** t0 until the pod workers were idle with every pod Running. */
  settledMs: number;
  /** Pods Running in the API at the end. */
  apiRunning: number;
  apiCallsPerPod: Record<string, number>;
  sampled: number;
  problems: string[];
  logs: Record<string, number>;
}

export async function runKubelet(n: number, withVolumes: boolean, options: RunOptions): Promise<KubeletRun> {
  const { timeoutMs, sampleCount } = options;
  const work = await mkdtemp(join(tmpdir(), 'nodelet-volumes-'));
  const rootDir = join(work, 'root');
  const clock = new RealClock();
  const { logger, counts: logs } = benchLogger();
  const bus = new EventBus(clock, logger);
  const runtime = new FakeRuntime({ clock, logger: logger.child('runtime-fake'), config: RUNTIME_CONFIG });
  const api = new FakeKubeApi();
  api.now = () => clock.now();
  seedObjects(api);
  const capacity = { cpu: '32', memory: '64Gi', pods: String(Math.max(110, n)) };
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus, clock, logger },
    {
      nodeName: NODE_NAME,
      hostIP: '192.0.2.10',
      rootDir,
      tmpfsVolumes: false,
      podLogsDir: join(work, 'logs'),
      maxPods: Math.max(110, n),
      apiServer: { api, capacity, maxPods: Math.max(110, n) },
    },
  );
  try {
    await kubelet.start();
    await until(
      () => api.nodes.has(NODE_NAME) && api.openWatches(PODS) > 0,
      30_000,
      'the node and its pod watch',
    );

    let pods: Pod[] | undefined = Array.from({ length: n }, (_, i) => benchPod(i, withVolumes));
    const runningAt = new Map<string, number>();
    let t0 = 0;
    let allRunning!: () => void;
    const done = new Promise<boolean>((resolve) => (allRunning = () => resolve(true)));
    const watch = api.watch<Pod>(PODS, { resourceVersion: '0' }, (e) => {
      const pod = e.object as Pod;
      const name = pod.metadata?.name ?? '';
      if (pod.status?.phase !== 'Running' || runningAt.has(name)) return;
      runningAt.set(name, performance.now() - t0);
      if (runningAt.size === n) allRunning();
    });
    const callsBefore = api.calls.length;

    const cpu0 = process.cpuUsage();
    t0 = performance.now();
    for (const pod of pods) await api.createPod(pod);
    pods = undefined;
    const completed = await within(done, timeoutMs, false);
    const totalMs = performance.now() - t0;
    const cpuMs = cpuMsSince(cpu0);
    const calls = api.calls.slice(callsBefore);
    await within(kubelet.workers.whenIdle(), completed ? timeoutMs : 0, undefined);
    const settledMs = performance.now() - t0;
    watch.stop();

    const perPod = new Map<string, number>();
    for (const c of calls)
      perPod.set(callKind(c.verb, c.what), (perPod.get(callKind(c.verb, c.what)) ?? 0) + 1);
    const apiCallsPerPod = Object.fromEntries(
      [...perPod].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, Number((v / n).toFixed(2))]),
    );
    const problems: string[] = [];
    const sample = withVolumes ? sampleIndices(n, sampleCount) : [];
    for (const i of sample) {
      const uid = api.pods.get(`${NAMESPACE}/bench-${i}`)?.metadata?.uid ?? '';
      problems.push(...(await volumeProblems(rootDir, uid, i)));
    }
    const apiRunning = [...api.pods.values()].filter((p) => p.status?.phase === 'Running').length;
    const latencies = [...runningAt.values()];
    return {
      completed,
      totalMs,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      cpuMs,
      settledMs,
      apiRunning,
      apiCallsPerPod,
      sampled: sample.length,
      problems,
      logs,
    };
  } finally {
    await kubelet.stop();
    runtime.close();
    await rm(work, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------------------
// The floor: the mounting itself
// ------------------------------------------------------------------------------------------------

export interface FloorRun {
  totalMs: number;
  cpuMs: number;
  /** Bytes of file content per pod (the three payloads). */
  bytesPerPod: number;
  filesPerPod: number;
  sampled: number;
  problems: string[];
}

/** The volume payloads of N pods as the kubelet writes them: mode 0644 (defaultMode 420), the token asked of the API. */
async function floorVolumes(n: number, rootDir: string) {
  const api = new FakeKubeApi();
  seedObjects(api);
  const config = (await api.getConfigMap(NAMESPACE, 'app-config')).data!;
  const ca = (await api.getConfigMap(NAMESPACE, 'kube-root-ca.crt')).data!['ca.crt']!;
  const secret = Object.entries((await api.getSecret(NAMESPACE, 'app-secret')).data!);
  const file = (data: string): FileProjection => ({ data, mode: 0o644 });
  const pods = [];
  for (let i = 0; i < n; i++) {
    const uid = `floor-uid-${i}`;
    const { status } = await api.createServiceAccountToken(NAMESPACE, 'default', {
      spec: {
        audiences: [],
        expirationSeconds: TOKEN_SECONDS,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: `bench-${i}`, uid },
      },
    });
    const [configDir, secretDir, accessDir] = expectedVolumes(rootDir, uid, i).map((v) => v.dir);
    pods.push([
      {
        dir: configDir!,
        open: true,
        payload: Object.fromEntries(Object.entries(config).map(([k, v]) => [k, file(v)])),
      },
      {
        dir: secretDir!,
        open: false,
        payload: Object.fromEntries(secret.map(([k, v]) => [k, file(Buffer.from(v, 'base64').toString())])),
      },
      {
        dir: accessDir!,
        open: false,
        payload: { token: file(status!.token), 'ca.crt': file(ca), namespace: file(NAMESPACE) },
      },
    ]);
  }
  return { pods, uid: (i: number) => `floor-uid-${i}` };
}

export async function runFloor(n: number, options: Pick<RunOptions, 'sampleCount'>): Promise<FloorRun> {
  const { sampleCount } = options;
  const work = await mkdtemp(join(tmpdir(), 'nodelet-volumes-floor-'));
  const rootDir = join(work, 'root');
  const clock = new RealClock();
  try {
    const { pods, uid } = await floorVolumes(n, rootDir);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      pods.flat().map(async ({ dir, open, payload }) => {
        // As the volume manager: the plugin directory 0750, the volume's 0700 (a configMap's opened to 0777).
        await mkdir(dirname(dir), { recursive: true, mode: 0o750 });
        await mkdir(dir, { mode: 0o700 });
        if (open) await chmod(dir, 0o777);
        await new AtomicWriter(dir, { now: () => clock.now() }).write(payload);
      }),
    );
    const totalMs = performance.now() - t0;
    const cpuMs = cpuMsSince(cpu0);
    const payloads = pods[0]!.map((v) => Object.values(v.payload));
    const sample = sampleIndices(n, sampleCount);
    const problems: string[] = [];
    for (const i of sample) problems.push(...(await volumeProblems(rootDir, uid(i), i)));
    return {
      totalMs,
      cpuMs,
      bytesPerPod: payloads.flat().reduce((sum, f) => sum + Buffer.byteLength(f.data as string), 0),
      filesPerPod: payloads.flat().length,
      sampled: sample.length,
      problems,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

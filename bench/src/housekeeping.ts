/**
 * The kubelet's steady-state CPU with 110 pods: what the node pays every second for running pods it
 * does not change — PLEG relists, housekeeping, the eviction manager's stats, periodic resyncs — as
 * upstream's kubelet_perf measures it (the kubelet process's CPU while N pods run; its limit for 100
 * pods: p50 0.35, p95 0.50 cores, the acceptance anchor p50 ≤ 0.30).
 *
 *   npx tsc -b bench packages/cli && npm run bench:housekeeping --workspace @nodelet/bench -- \
 *     [--pods 110] [--seconds 60] [--runtimes containerd,fake] [--cpu-prof-dir DIR]
 *
 * Each scenario is a fresh `nodelet kubelet` child process (the CLI, default settings: stats provider
 * and eviction manager on) with static pods from a manifest directory: 0 pods (the floor) and N pods
 * (one busybox container running `sleep`), on containerd (root, scripts/containerd/setup.sh,
 * `nodelet.test/busybox:1` imported) and on the fake runtime (the simulated node). Once every pod is
 * Running and --settle-s have passed, the kubelet's utime + stime (/proc/<pid>/stat) is read every
 * --slice-s over --seconds: cores per slice, p50 and p95 (nearest rank). CRI calls in the window come
 * from the kubelet's own kubelet_runtime_operations_total. Then /stats/summary is read
 * --summary-requests times (one at a time): its latency as `kubectl top` and metrics-server see it.
 * Cleanup: the manifests are removed, the run waits until the kubelet and containerd hold none of its
 * pods (and their shims exited), stops the kubelet by its PID, and checks no mount is left under its
 * directory. Writes bench/results/housekeeping.json.
 */
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Pod } from '@nodelet/api';
import { createCriClient, type CriClient } from '@nodelet/cri';
import { KubeletProcess, pollUntil, processCpuMs, processRssMiB } from './kubelet-process.js';
import { cutProfile, monotonicUs } from './profile-window.js';

const IMAGE = 'nodelet.test/busybox:1';
const ANCHOR_CORES_P50 = 0.3;

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '110' },
    seconds: { type: 'string', default: '60' },
    'slice-s': { type: 'string', default: '10' },
    'settle-s': { type: 'string', default: '20' },
    runtimes: { type: 'string', default: 'containerd,fake' },
    'summary-requests': { type: 'string', default: '20' },
    'timeout-s': { type: 'string', default: '900' },
    'cpu-prof-dir': { type: 'string' },
    cli: { type: 'string' },
    out: { type: 'string' },
  },
  strict: true,
});
function positive(name: string, integer = true): number {
  const v = Number(args[name as keyof typeof args]);
  if (!(v > 0) || (integer && !Number.isInteger(v)))
    throw new Error(
      `--${name}: expected a positive ${integer ? 'integer' : 'number'}, not ${args[name as keyof typeof args]}`,
    );
  return v;
}
const pods = positive('pods');
const seconds = positive('seconds', false);
const sliceS = positive('slice-s', false);
const settleS = Number(args['settle-s']);
if (!(settleS >= 0)) throw new Error(`--settle-s: expected seconds (0 or more), not ${args['settle-s']}`);
const summaryRequests = positive('summary-requests');
const timeoutMs = positive('timeout-s') * 1000;
const runtimes = String(args.runtimes)
  .split(',')
  .map((s) => s.trim());
for (const r of runtimes)
  if (r !== 'containerd' && r !== 'fake') throw new Error(`--runtimes: containerd or fake, not ${r}`);
const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
// The profiler's own sampling costs the profiled kubelet CPU: such a run is diagnostics, not a figure.
const outFile =
  args.out ??
  join(benchDir, 'results', args['cpu-prof-dir'] ? 'housekeeping-diagnostics.json' : 'housekeeping.json');
// --cli: another tree's CLI (packages/cli/dist/main.js), to measure a change before and after.
const cliMain = args.cli ?? join(benchDir, '..', 'packages', 'cli', 'dist', 'main.js');
const socket = process.env.NODELET_CONTAINERD_SOCKET || '/run/containerd/containerd.sock';
const profDir = args['cpu-prof-dir'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

/** Pod i: one small container that runs until stopped (JSON, which the file source reads too). */
function manifest(i: number): string {
  const container = {
    name: 'main',
    image: IMAGE,
    command: ['sh', '-c', "trap 'exit 0' TERM; sleep 36000 & wait"],
  };
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `hk-${i}` },
    spec: { terminationGracePeriodSeconds: 2, containers: [container] },
  };
  return JSON.stringify(pod);
}

const running = (p: Pod) =>
  p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => !!c.state?.running);

/** kubelet_runtime_operations_total by operation type, from /metrics. */
async function criOperations(k: KubeletProcess): Promise<Map<string, number>> {
  const ops = new Map<string, number>();
  for (const line of (await k.get('/metrics')).body.split('\n')) {
    const m = /^kubelet_runtime_operations_total\{[^}]*operation_type="([^"]+)"[^}]*\} (\d+)/.exec(line);
    if (m) ops.set(m[1]!, Number(m[2]));
  }
  return ops;
}

/** The containerd daemon's PID (the CPU it spends answering the kubelet is not in the kubelet's). */
async function containerdPid(): Promise<number | undefined> {
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === 'containerd') return Number(pid);
  }
  return undefined;
}

async function shimsOf(sandboxIds: Set<string>): Promise<number> {
  let n = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const id = cmdline[cmdline.indexOf('-id') + 1];
    if (cmdline[0]?.includes('containerd-shim') && id && sandboxIds.has(id)) n++;
  }
  return n;
}

async function mountsUnder(dir: string): Promise<string[]> {
  const text = await readFile('/proc/self/mounts', 'utf8');
  return text
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(dir));
}

interface Scenario {
  runtime: 'containerd' | 'fake';
  pods: number;
  /** Seconds from the manifests written to every pod Running. */
  startS: number;
  slicesCores: number[];
  p50Cores: number;
  p95Cores: number;
  meanCores: number;
  containerdMeanCores?: number;
  /** Sandboxes in containerd when the window began, this kubelet's and any other's. */
  sandboxesInRuntime?: number;
  rssMiB: number;
  /** CRI calls per second in the window, by operation type. */
  criCallsPerS: Record<string, number>;
  summary?: { failures: number; p50Ms: number; p95Ms: number; bytes: number; pods: number };
  loadavg1: [number, number];
  profile?: { file: string; samples: number };
}

async function scenario(runtime: 'containerd' | 'fake', n: number, cri?: CriClient): Promise<Scenario> {
  const dir = await mkdtemp(join(tmpdir(), `nodelet-hk-${runtime}-`));
  const nodeName = `bench-hk-${runtime}-${n}-${process.pid}`;
  const profiled = profDir !== undefined && runtime === 'containerd' && n > 0;
  if (profiled) await mkdir(profDir, { recursive: true });
  const k = await KubeletProcess.start({
    cliMain,
    dir,
    runtime,
    ...(runtime === 'containerd' ? { endpoint: `unix://${socket}` } : {}),
    nodeName,
    ...(profiled ? { nodeFlags: ['--cpu-prof', '--cpu-prof-dir', profDir] } : {}),
  });
  const ownSandboxes = async () =>
    cri
      ? (
          await cri.runtime.listPodSandbox({
            filter: { id: '', labelSelector: { 'nodelet.dev/node': nodeName } },
          })
        ).items
      : [];
  const sandboxIds = new Set<string>();
  try {
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: n }, (_, i) => writeFile(join(k.manifests, `hk-${i}.json`), manifest(i))),
    );
    await pollUntil(
      `${n} pods Running`,
      async () => {
        if (k.child.exitCode !== null) throw new Error(`the kubelet exited:\n${k.stderr.slice(-2000)}`);
        const list = await k.pods();
        return list.length === n && list.every(running) ? true : undefined;
      },
      timeoutMs,
      2000,
    );
    const startS = (performance.now() - t0) / 1000;
    for (const sb of await ownSandboxes()) sandboxIds.add(sb.id);
    process.stderr.write(`  ${runtime} ${n} pods: all Running after ${startS.toFixed(1)} s; settling\n`);
    await sleep(settleS * 1000);

    // containerd is shared: sandboxes of others are listed (and read for stats) by this kubelet too.
    const sandboxesInRuntime = cri ? (await cri.runtime.listPodSandbox({})).items.length : undefined;
    const ops0 = await criOperations(k);
    const cdPid = runtime === 'containerd' ? await containerdPid() : undefined;
    const load0 = loadavg()[0]!;
    const wall0 = performance.now();
    const from = monotonicUs();
    // containerd is shared and may be restarted by someone else: its figure is then left out.
    const cd0 = cdPid ? await processCpuMs(cdPid).catch(() => undefined) : undefined;
    let cpu = await processCpuMs(k.pid);
    let at = performance.now();
    const slicesCores: number[] = [];
    const sliceCount = Math.max(1, Math.round(seconds / sliceS));
    for (let i = 0; i < sliceCount; i++) {
      await sleep(wall0 + (i + 1) * sliceS * 1000 - performance.now());
      const [nowCpu, nowAt] = [await processCpuMs(k.pid), performance.now()];
      slicesCores.push((nowCpu - cpu) / (nowAt - at));
      [cpu, at] = [nowCpu, nowAt];
    }
    const windowMs = at - wall0;
    const to = monotonicUs();
    const cd1 = cdPid ? await processCpuMs(cdPid).catch(() => undefined) : undefined;
    const cdCores = cd0 !== undefined && cd1 !== undefined ? (cd1 - cd0) / windowMs : undefined;
    const load1 = loadavg()[0]!;
    const ops1 = await criOperations(k);
    const criCallsPerS: Record<string, number> = {};
    for (const [op, v] of [...ops1].sort()) {
      const d = v - (ops0.get(op) ?? 0);
      if (d > 0) criCallsPerS[op] = Math.round((d / (windowMs / 1000)) * 100) / 100;
    }
    const meanCores = slicesCores.reduce((a, b) => a + b, 0) / slicesCores.length;
    const rssMiB = await processRssMiB(k.pid);

    const latencies: number[] = [];
    let bytes = 0;
    let summaryPods = 0;
    let failures = 0;
    for (let i = 0; i < summaryRequests; i++) {
      // A shared containerd can fail a stats call for a sandbox being torn down: counted, not fatal.
      const answer = await k.get('/stats/summary').catch((err: Error) => {
        if (failures++ === 0) warn(err.message.slice(0, 300));
        return undefined;
      });
      if (!answer) continue;
      latencies.push(answer.ms);
      bytes = answer.body.length;
      summaryPods = (JSON.parse(answer.body) as { pods?: unknown[] }).pods?.length ?? 0;
    }
    const result: Scenario = {
      runtime,
      pods: n,
      startS,
      slicesCores,
      p50Cores: percentile(slicesCores, 50),
      p95Cores: percentile(slicesCores, 95),
      meanCores,
      ...(cdCores !== undefined ? { containerdMeanCores: cdCores } : {}),
      ...(sandboxesInRuntime !== undefined ? { sandboxesInRuntime } : {}),
      rssMiB,
      criCallsPerS,
      summary: {
        failures,
        p50Ms: latencies.length > 0 ? percentile(latencies, 50) : NaN,
        p95Ms: latencies.length > 0 ? percentile(latencies, 95) : NaN,
        bytes,
        pods: summaryPods,
      },
      loadavg1: [load0, load1],
    };
    await cleanup(k, ownSandboxes, n);
    await k.stop();
    if (profiled) result.profile = profileWindow(profDir, k.pid, from, to);
    return result;
  } finally {
    await k.stop();
    // A run that failed before its cleanup leaves its pods in the runtime: remove them through CRI.
    if (cri) {
      const left = await ownSandboxes().catch(() => []);
      for (const sb of left) sandboxIds.add(sb.id);
      await removeSandboxes(cri, left).catch((err: Error) => warn(`removing sandboxes: ${err.message}`));
    }
    await pollUntil(
      'the shims of the sandboxes to exit',
      async () => ((await shimsOf(sandboxIds)) === 0 ? true : undefined),
      120_000,
    ).catch((err: Error) => warn(err.message));
    const mounts = await mountsUnder(dir);
    if (mounts.length > 0) warn(`mounts left under the kubelet's directory: ${mounts.join(', ')}`);
    await rm(dir, { recursive: true, force: true });
  }
}

const warn = (text: string) => process.stderr.write(`  warning: ${text}\n`);

/** Stops and removes sandboxes straight through CRI, eight at a time. */
async function removeSandboxes(cri: CriClient, sandboxes: { id: string }[]): Promise<void> {
  const queue = [...sandboxes];
  const worker = async () => {
    for (let sb = queue.shift(); sb; sb = queue.shift()) {
      await cri.runtime.stopPodSandbox({ podSandboxId: sb.id });
      await cri.runtime.removePodSandbox({ podSandboxId: sb.id });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

/** Removes the pods through the kubelet (manifests gone) and waits until neither it nor CRI holds one. */
async function cleanup(k: KubeletProcess, ownSandboxes: () => Promise<unknown[]>, n: number): Promise<void> {
  await Promise.all(
    Array.from({ length: n }, (_, i) => rm(join(k.manifests, `hk-${i}.json`), { force: true })),
  );
  await pollUntil(
    'the kubelet to remove its pods',
    async () => ((await k.pods()).length === 0 && (await ownSandboxes()).length === 0 ? true : undefined),
    timeoutMs,
    1000,
  );
}

/** The profile the kubelet wrote when it exited (CPU.<date>.<time>.<pid>.…), cut to the measured window. */
function profileWindow(
  dir: string,
  pid: number,
  from: number,
  to: number,
): { file: string; samples: number } {
  const written = readdirSync(dir).find((f) => f.startsWith('CPU.') && f.includes(`.${pid}.`));
  if (!written) throw new Error(`no CPU profile of process ${pid} in ${dir}`);
  const out = join(dir, `kubelet-window-${pid}.cpuprofile`);
  return { file: out, samples: cutProfile(join(dir, written), out, from, to) };
}

// ------------------------------------------------------------------------------------------------
// Main
// ------------------------------------------------------------------------------------------------

const results: Scenario[] = [];
let runtimeVersion = '';
for (const runtime of runtimes) {
  const cri =
    runtime === 'containerd' ? createCriClient(`unix://${socket}`, { timeoutMs: 120_000 }) : undefined;
  try {
    if (cri) {
      const v = await cri.runtime.version({ version: '0.1.0' }).catch((err: Error) => {
        throw new Error(
          `containerd at ${socket} does not answer (scripts/containerd/setup.sh): ${err.message}`,
        );
      });
      runtimeVersion = `${v.runtimeName} ${v.runtimeVersion}`;
    }
    for (const n of [0, pods]) {
      const s = await scenario(runtime as 'containerd' | 'fake', n, cri);
      results.push(s);
      process.stderr.write(
        `  ${runtime} ${n} pods: p50 ${s.p50Cores.toFixed(3)} cores, p95 ${s.p95Cores.toFixed(3)} (load ${s.loadavg1.map((l) => l.toFixed(1)).join('→')})\n`,
      );
    }
  } finally {
    cri?.close();
  }
}

const fmt = (x: number | undefined, d = 3) => (x === undefined ? '-' : x.toFixed(d));
console.log(
  `\nkubelet steady-state CPU over ${seconds} s (${sliceS} s slices)${runtimeVersion ? `, ${runtimeVersion}` : ''}\n`,
);
console.log(
  'runtime     pods  p50 cores  p95 cores  mean  per pod (− floor) mcores  containerd cores  RSS MiB  summary p50/p95 ms  load',
);
const rows = results.map((s) => {
  const floor = results.find((f) => f.runtime === s.runtime && f.pods === 0);
  const perPodMillicores = s.pods > 0 && floor ? ((s.p50Cores - floor.p50Cores) * 1000) / s.pods : undefined;
  console.log(
    `${s.runtime.padEnd(10)}  ${String(s.pods).padStart(4)}  ${fmt(s.p50Cores).padStart(9)}  ${fmt(s.p95Cores).padStart(9)}  ${fmt(s.meanCores)}  ${fmt(perPodMillicores, 2).padStart(24)}  ${fmt(s.containerdMeanCores).padStart(16)}  ${fmt(s.rssMiB, 1).padStart(7)}  ${`${fmt(s.summary?.p50Ms, 1)}/${fmt(s.summary?.p95Ms, 1)}`.padStart(18)}  ${s.loadavg1.map((l) => l.toFixed(1)).join('→')}`,
  );
  return {
    ...s,
    ...(perPodMillicores !== undefined ? { perPodMillicores } : {}),
    ...(s.pods > 0 ? { anchorRatio: s.p50Cores / ANCHOR_CORES_P50 } : {}),
    ...(s.pods > 0 && floor ? { floorRatio: s.p50Cores / floor.p50Cores } : {}),
  };
});
for (const s of results.filter((r) => r.pods > 0)) {
  console.log(`\n${s.runtime}, ${s.pods} pods: CRI calls/s ${JSON.stringify(s.criCallsPerS)}`);
  console.log(
    `  p50 ÷ anchor (${ANCHOR_CORES_P50} cores for 100 pods): ${fmt(s.p50Cores / ANCHOR_CORES_P50, 3)}`,
  );
  if (s.profile) console.log(`  profile of the window: ${s.profile.file} (${s.profile.samples} samples)`);
}
const result = {
  date: new Date().toISOString(),
  runtime: runtimeVersion,
  pods,
  seconds,
  sliceS,
  settleS,
  anchorCoresP50: ANCHOR_CORES_P50,
  loadavg1: loadavg()[0],
  rows,
};
await mkdir(dirname(outFile), { recursive: true });
await writeFile(outFile, JSON.stringify(result, null, 2) + '\n');
console.log(`\nwrote ${outFile}`);

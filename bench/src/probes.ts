/**
 * The cost of probing: one kubelet on the fake runtime, on the REAL clock, running 110 pods (the
 * upstream maxPods) whose probes are exec probes at a period of 1 s; the CPU time of this process
 * (`process.cpuUsage()`, user + system) over a steady window of wall time, as a percentage of one core —
 * against a floor measured in the same run: the same kubelet and pods without probes.
 *
 *   npm run bench:probes --workspace @nodelet/bench -- [--pods 110] [--duration-s 20] [--warmup-s 3]
 *                                                      [--repeat 3]
 *
 * Scenarios (each a fresh FakeRuntime + Kubelet; pods applied at once as one source snapshot):
 *
 *   floor          the pods, no probes: PLEG relists, housekeeping, resyncs — what any kubelet costs
 *   startup+live+ready
 *                  one container with a startup, a liveness and a readiness probe (exec `true`, period
 *                  1 s): the startup probe stops after its first success, so 2 probes per pod per second
 *                  in the window
 *   3 periodic     3 probes that keep running: a liveness and a readiness probe on the first container,
 *                  a readiness probe on a second one — 3 exec probes per pod per second
 *
 * The window starts `warmup-s` after every pod is Running and Ready (so pod startup is not in it) and
 * lasts `duration-s`. Probes per second come from the `[Prober] Probe Result` events in the window. The
 * scenarios run `repeat` rounds, interleaved (floor, A, B, floor, A, B, …), and each figure is the median
 * of its rounds: on a shared 2-core machine one window can catch another process's burst.
 *
 * Prints a table and writes bench/results/probes.json. Goal: < 5 % of one core with probes.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Container, Pod } from '@nodelet/api';
import { createLogger, EventBus, RealClock } from '@nodelet/kernel';
import { applyStaticPodDefaults, Kubelet, parseManifests } from '@nodelet/kubelet';
import { FakeRuntime, PAUSE_IMAGE } from '@nodelet/runtime-fake';

const NODE_NAME = 'bench-node';
const HOST_IP = '192.0.2.10';
const IMAGE = 'busybox:1.36';
const GOAL_PERCENT = 5;

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '110' },
    'duration-s': { type: 'string', default: '20' },
    'warmup-s': { type: 'string', default: '3' },
    /** Rounds of the three scenarios (interleaved); each figure is the median of its rounds. */
    repeat: { type: 'string', default: '3' },
    out: { type: 'string' },
  },
  strict: true,
});
const podCount = Number(args.pods);
const durationMs = Number(args['duration-s']) * 1000;
const warmupMs = Number(args['warmup-s']) * 1000;
if (!Number.isInteger(podCount) || podCount < 1)
  throw new Error(`--pods: expected a count, not ${args.pods}`);
if (!(durationMs > 0)) throw new Error(`--duration-s: expected seconds, not ${args['duration-s']}`);
const repeat = Math.max(1, Math.floor(Number(args.repeat)) || 1);
const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const outFile = args.out ?? join(benchDir, 'results', 'probes.json');

type Scenario = 'floor' | 'startup+live+ready' | '3 periodic';

const exec = (periodSeconds = 1) => ({
  exec: { command: ['true'] },
  periodSeconds,
  timeoutSeconds: 1,
  successThreshold: 1,
  failureThreshold: 3,
});

function containers(scenario: Scenario): Container[] {
  const base = { image: IMAGE, command: ['sleep', 'infinity'] };
  switch (scenario) {
    case 'floor':
      return [{ name: 'main', ...base }];
    case 'startup+live+ready':
      return [{ name: 'main', ...base, startupProbe: exec(), livenessProbe: exec(), readinessProbe: exec() }];
    case '3 periodic':
      return [
        { name: 'main', ...base, livenessProbe: exec(), readinessProbe: exec() },
        { name: 'side', ...base, readinessProbe: exec() },
      ];
  }
}

function pods(scenario: Scenario, now: number): Pod[] {
  const out: Pod[] = [];
  for (let i = 0; i < podCount; i++) {
    const origin = `/bench/probe-${i}.yaml`;
    const manifest = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `probe-${i}` },
      spec: { containers: containers(scenario) },
    });
    const { pods: parsed, errors } = parseManifests(manifest, origin, {
      defaults: (pod) => applyStaticPodDefaults(pod, { source: 'file', origin, nodeName: NODE_NAME, now }),
    });
    if (errors.length > 0 || parsed.length !== 1) throw new Error(`bench pod ${i}: ${errors.join('; ')}`);
    out.push(parsed[0]!);
  }
  return out;
}

interface Row {
  scenario: Scenario;
  pods: number;
  probesPerPod: number;
  windowS: number;
  cpuPercent: number;
  probesPerSecond: number;
  probeFailures: number;
  /** CPU µs per probe over the floor. */
  microsPerProbe?: number;
  secondsToReady: number;
  /** Every round's CPU %, when repeated. */
  cpuPercentRounds?: number[];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function run(scenario: Scenario): Promise<Row> {
  const work = await mkdtemp(join(tmpdir(), 'nodelet-probes-'));
  try {
    await mkdir(join(work, 'root'));
    const clock = new RealClock();
    let errors = 0;
    const logger = createLogger({
      level: 'warn',
      sink: (r) => {
        if (r.level === 'error') errors++;
      },
    });
    const bus = new EventBus(clock, logger);
    const runtime = new FakeRuntime({
      clock,
      logger,
      config: { pullLatencyMs: 0, preloadedImages: [PAUSE_IMAGE, `docker.io/library/${IMAGE}`] } as never,
    });
    const kubelet = new Kubelet(
      { runtime, images: runtime, bus, clock, logger },
      {
        nodeName: NODE_NAME,
        hostIP: HOST_IP,
        rootDir: join(work, 'root'),
        podLogsDir: join(work, 'logs'),
        memoryCapacityBytes: 64 * 1024 ** 3,
        maxPods: podCount, // admission counts pods: the bench node holds them all
      },
    );
    kubelet.podConfig.register('api');
    await kubelet.start();
    const t0 = performance.now();
    kubelet.podConfig.apply('api', pods(scenario, clock.now()));
    const allReady = () =>
      kubelet
        .podList()
        .items.filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
        .length === podCount;
    const deadline = performance.now() + 60_000;
    while (!allReady()) {
      if (performance.now() > deadline) throw new Error(`${scenario}: pods not Ready within 60 s`);
      await sleep(50);
    }
    const secondsToReady = (performance.now() - t0) / 1000;
    await sleep(warmupMs);

    let probes = 0;
    let failures = 0;
    const counting = bus.subscribe('[Prober] Probe Result', (e) => {
      probes++;
      if (e.result !== 'success') failures++;
    });
    globalThis.gc?.();
    const cpu0 = process.cpuUsage();
    const w0 = performance.now();
    await sleep(durationMs);
    const cpu = process.cpuUsage(cpu0);
    const wallMs = performance.now() - w0;
    counting.unsubscribe();

    await kubelet.stop();
    runtime.close();
    if (errors > 0) throw new Error(`${scenario}: ${errors} error log lines`);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    return {
      scenario,
      pods: podCount,
      probesPerPod: scenario === 'floor' ? 0 : 3,
      windowS: Math.round(wallMs) / 1000,
      cpuPercent: (cpuMs / wallMs) * 100,
      probesPerSecond: probes / (wallMs / 1000),
      probeFailures: failures,
      secondsToReady,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const scenarios = ['floor', 'startup+live+ready', '3 periodic'] as const;
const rounds = new Map<Scenario, Row[]>(scenarios.map((s) => [s, []]));
for (let round = 1; round <= repeat; round++) {
  for (const scenario of scenarios) {
    process.stderr.write(
      `round ${round}/${repeat}: ${scenario} (${podCount} pods, ${durationMs / 1000} s window)…\n`,
    );
    rounds.get(scenario)!.push(await run(scenario));
  }
}
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const rows: Row[] = scenarios.map((scenario) => {
  const runs = rounds.get(scenario)!;
  return {
    ...runs[0]!,
    windowS: median(runs.map((r) => r.windowS)),
    cpuPercent: median(runs.map((r) => r.cpuPercent)),
    probesPerSecond: median(runs.map((r) => r.probesPerSecond)),
    probeFailures: runs.reduce((n, r) => n + r.probeFailures, 0),
    secondsToReady: median(runs.map((r) => r.secondsToReady)),
    cpuPercentRounds: runs.map((r) => r.cpuPercent),
  };
});
const floor = rows[0]!;
for (const r of rows.slice(1)) {
  r.microsPerProbe =
    r.probesPerSecond > 0 ? ((r.cpuPercent - floor.cpuPercent) * 1e4) / r.probesPerSecond : undefined;
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);
const table = [
  ['scenario', 'pods', 'probes/s', 'CPU % of a core', 'over floor', 'µs CPU/probe', 'failures', 'goal'],
  ...rows.map((r) => [
    r.scenario,
    String(r.pods),
    fmt(r.probesPerSecond),
    fmt(r.cpuPercent, 2),
    r.scenario === 'floor' ? '—' : `+${fmt(r.cpuPercent - floor.cpuPercent, 2)}`,
    r.microsPerProbe === undefined ? '—' : fmt(r.microsPerProbe, 0),
    String(r.probeFailures),
    r.scenario === 'floor'
      ? ''
      : r.cpuPercent < GOAL_PERCENT
        ? `< ${GOAL_PERCENT} % ✓`
        : `≥ ${GOAL_PERCENT} % ✗`,
  ]),
];
const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
for (const row of table)
  process.stdout.write(
    row
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd() + '\n',
  );

await mkdir(dirname(outFile), { recursive: true });
await writeFile(
  outFile,
  JSON.stringify(
    {
      benchmark: 'probes',
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg: loadavg(), node: process.version },
      parameters: {
        pods: podCount,
        durationS: durationMs / 1000,
        warmupS: warmupMs / 1000,
        periodS: 1,
        repeat,
      },
      goalCpuPercent: GOAL_PERCENT,
      rows,
    },
    null,
    2,
  ) + '\n',
);
process.stderr.write(`wrote ${outFile}\n`);

/**
 * Pod start with volumes, on the fake runtime joined to an in-memory API server: how much longer N pods
 * take to reach Running when each has a configMap volume, a secret volume and the `kube-api-access-*`
 * projected volume than the same pods without volumes — against a floor measured in the same run: the
 * mounting itself, the same files written with @nodelet/volume's atomic writer, no kubelet.
 *
 *   npm run bench:volumes --workspace @nodelet/bench -- [--pods 100] [--repeat 3]
 *
 * Each run has fresh objects and runs on the real clock (RealClock):
 *
 *   plain    a FakeKubeApi holding the namespace's ServiceAccount, the `kube-root-ca.crt` and `app-config`
 *            ConfigMaps and the `app-secret` Secret; a FakeRuntime (images present, pulls take 0 ms); a
 *            Kubelet joined to that API as the kubelet's test harness joins one, started, its node
 *            registered and its pod watch open before t0. At t0 N pods are created through the API
 *            (`bench-<i>`, one busybox container, the API's defaults applied). A pod is Running when the
 *            kubelet's status patch saying so reaches the API (a watch on pods sees it).
 *   volumes  the same pods, each with `config` (configMap app-config), `secret` (secret app-secret) and
 *            `kube-api-access-<5>` (ServiceAccount admission's own projected source: a token of 3607 s,
 *            ca.crt from kube-root-ca.crt, the namespace), mounted as admission mounts it. The files
 *            are written under a temp kubelet root (`tmpfsVolumes: false`: no mounts).
 *   floor    the same three payloads per pod (tokens issued by a FakeKubeApi before t0) written with
 *            AtomicWriter into volume directories made as the kubelet makes them, the three volumes of a
 *            pod and all N pods at once, no kubelet and no API.
 *
 *   volumes ÷ plain              total (t0 → every pod Running), the median of the per-run ratios
 *   (volumes − plain) ÷ floor    what the kubelet spends on a pod's volumes, in units of the writes themselves
 *
 * Prints a table and merges its row (by N) into bench/results/volumes.json. Options:
 *
 *   --pods N         pods per run (100)              --repeat K      K runs, medians (1)
 *   --warmup N       pods of an untimed run of each path, for the JIT (20)
 *   --sample N       pods whose files are checked (10)          --timeout-s S   give up on a run (120)
 *   --out FILE       results file
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type FloorRun, type KubeletRun, runFloor, runKubelet } from './volumes-runs.js';

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '100' },
    repeat: { type: 'string', default: '1' },
    warmup: { type: 'string', default: '20' },
    sample: { type: 'string', default: '10' },
    'timeout-s': { type: 'string', default: '120' },
    out: { type: 'string' },
  },
  strict: true,
});

function positiveInt(flag: string, text: string | undefined, min = 1): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min)
    throw new Error(`--${flag}: expected an integer ≥ ${min}, not ${text}`);
  return n;
}
const podCount = positiveInt('pods', args.pods);
const repeat = positiveInt('repeat', args.repeat);
const warmupPods = positiveInt('warmup', args.warmup, 0);
const sampleCount = positiveInt('sample', args.sample);
const timeoutMs = positiveInt('timeout-s', args['timeout-s']) * 1000;
const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const outFile = args.out ?? join(benchDir, 'results', 'volumes.json');
const runOptions = { timeoutMs, sampleCount };

const round = (x: number, digits: number) => (Number.isFinite(x) ? Number(x.toFixed(digits)) : x);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

// ------------------------------------------------------------------------------------------------
// Main
// ------------------------------------------------------------------------------------------------

interface Row {
  date: string;
  n: number;
  completed: boolean;
  runs: number;
  /** The machine's 1-minute load average at the start of each run (median and range): other work skews the figures. */
  loadAvg1m: number;
  loadAvg1mRange: [number, number];
  plainS: number;
  plainP50Ms: number;
  plainP99Ms: number;
  volumesS: number;
  volumesP50Ms: number;
  volumesP99Ms: number;
  floorS: number;
  /** volumes ÷ plain (total time to all Running), the median of the per-run ratios. */
  ratio: number;
  /** (volumes − plain) ÷ floor, the median of the per-run figures. */
  overRatio: number;
  /** CPU seconds of the process in each timed window. */
  plainCpuS: number;
  volumesCpuS: number;
  floorCpuS: number;
  plainSettledS: number;
  volumesSettledS: number;
  bytesPerPod: number;
  filesPerPod: number;
  apiCallsPerPod: { plain: Record<string, number>; volumes: Record<string, number> };
  checks: {
    plainApiRunning: number;
    volumesApiRunning: number;
    volumesSampled: number;
    floorSampled: number;
    problems: string[];
    warnings: number;
    errors: number;
  };
  perRun: {
    plainS: number;
    volumesS: number;
    floorS: number;
    ratio: number;
    overRatio: number;
    loadAvg1m: number;
  }[];
}

function table(rows: Row[]): string {
  const head = [
    'N',
    'plain s',
    'p50/p99 ms',
    'volumes s',
    'p50/p99 ms',
    'floor s',
    'volumes ÷ plain',
    '(volumes − plain) ÷ floor',
    'load 1m',
  ];
  const body = rows.map((r) => [
    String(r.n) + (r.completed ? '' : ' (INCOMPLETE)'),
    r.plainS.toFixed(3),
    `${r.plainP50Ms.toFixed(0)}/${r.plainP99Ms.toFixed(0)}`,
    r.volumesS.toFixed(3),
    `${r.volumesP50Ms.toFixed(0)}/${r.volumesP99Ms.toFixed(0)}`,
    r.floorS.toFixed(3),
    r.ratio.toFixed(2) + '×',
    r.overRatio.toFixed(1) + '×',
    `${r.loadAvg1m.toFixed(1)} (${r.loadAvg1mRange[0].toFixed(1)}–${r.loadAvg1mRange[1].toFixed(1)})`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => '| ' + cells.map((c, i) => c.padStart(widths[i]!)).join(' | ') + ' |';
  const rule = '|' + widths.map((w) => '-'.repeat(w + 1) + ':').join('|') + '|';
  return [line(head), rule, ...body.map(line)].join('\n');
}

const gc = () => (globalThis.gc ?? (() => undefined))();

async function main(): Promise<void> {
  const cpu = cpus();
  console.error(
    `volumes: ${podCount} pods × ${repeat}; ${cpu.length} × ${cpu[0]?.model ?? 'cpu'}; node ${process.version}`,
  );
  if (warmupPods > 0) {
    // JIT warm-up of every path, so no run pays for compiling what another already compiled.
    await runFloor(warmupPods, runOptions);
    await runKubelet(warmupPods, false, runOptions);
    await runKubelet(warmupPods, true, runOptions);
  }
  const plain: KubeletRun[] = [];
  const volumes: KubeletRun[] = [];
  const floor: FloorRun[] = [];
  const loads: number[] = [];
  for (let r = 1; r <= repeat; r++) {
    loads.push(loadavg()[0]!);
    // plain and volumes alternate which goes first; the floor follows, so each run's three are under one load.
    for (const withVolumes of r % 2 ? [false, true] : [true, false]) {
      console.error(`volumes: run ${r}/${repeat}: ${withVolumes ? 'volumes' : 'plain'}…`);
      gc();
      (withVolumes ? volumes : plain).push(await runKubelet(podCount, withVolumes, runOptions));
    }
    console.error(`volumes: run ${r}/${repeat}: floor…`);
    gc();
    floor.push(await runFloor(podCount, runOptions));
  }

  const perRun = plain.map((p, i) => ({
    plainS: round(p.totalMs / 1000, 4),
    volumesS: round(volumes[i]!.totalMs / 1000, 4),
    floorS: round(floor[i]!.totalMs / 1000, 4),
    ratio: round(volumes[i]!.totalMs / p.totalMs, 3),
    overRatio: round((volumes[i]!.totalMs - p.totalMs) / floor[i]!.totalMs, 2),
    loadAvg1m: round(loads[i]!, 2),
  }));
  const med = <T>(runs: T[], f: (x: T) => number) => median(runs.map(f));
  const problems = [...volumes, ...floor].flatMap((x) => x.problems);
  const row: Row = {
    date: new Date().toISOString(),
    n: podCount,
    completed: [...plain, ...volumes].every((x) => x.completed),
    runs: repeat,
    loadAvg1m: round(median(loads), 2),
    loadAvg1mRange: [round(Math.min(...loads), 2), round(Math.max(...loads), 2)],
    plainS: round(med(plain, (x) => x.totalMs) / 1000, 4),
    plainP50Ms: round(
      med(plain, (x) => x.p50Ms),
      1,
    ),
    plainP99Ms: round(
      med(plain, (x) => x.p99Ms),
      1,
    ),
    volumesS: round(med(volumes, (x) => x.totalMs) / 1000, 4),
    volumesP50Ms: round(
      med(volumes, (x) => x.p50Ms),
      1,
    ),
    volumesP99Ms: round(
      med(volumes, (x) => x.p99Ms),
      1,
    ),
    floorS: round(med(floor, (x) => x.totalMs) / 1000, 4),
    ratio: round(
      med(perRun, (x) => x.ratio),
      3,
    ),
    overRatio: round(
      med(perRun, (x) => x.overRatio),
      2,
    ),
    plainCpuS: round(med(plain, (x) => x.cpuMs) / 1000, 4),
    volumesCpuS: round(med(volumes, (x) => x.cpuMs) / 1000, 4),
    floorCpuS: round(med(floor, (x) => x.cpuMs) / 1000, 4),
    plainSettledS: round(med(plain, (x) => x.settledMs) / 1000, 4),
    volumesSettledS: round(med(volumes, (x) => x.settledMs) / 1000, 4),
    bytesPerPod: floor[0]!.bytesPerPod,
    filesPerPod: floor[0]!.filesPerPod,
    apiCallsPerPod: { plain: plain[0]!.apiCallsPerPod, volumes: volumes[0]!.apiCallsPerPod },
    checks: {
      plainApiRunning: Math.min(...plain.map((x) => x.apiRunning)),
      volumesApiRunning: Math.min(...volumes.map((x) => x.apiRunning)),
      volumesSampled: volumes.reduce((sum, x) => sum + x.sampled, 0),
      floorSampled: floor.reduce((sum, x) => sum + x.sampled, 0),
      problems: problems.slice(0, 10),
      warnings: [...plain, ...volumes].reduce((sum, x) => sum + x.logs.warn!, 0),
      errors: [...plain, ...volumes].reduce((sum, x) => sum + x.logs.error!, 0),
    },
    perRun,
  };
  console.error(`volumes: ${JSON.stringify(row)}`);
  console.log(table([row]));
  const ok = row.completed && problems.length === 0;
  console.log(
    `${row.filesPerPod} files, ${row.bytesPerPod} bytes per pod in 3 volumes; ` +
      `every pod Running: ${row.checks.plainApiRunning}/${podCount} plain, ${row.checks.volumesApiRunning}/${podCount} volumes; ` +
      `files checked in ${row.checks.volumesSampled} kubelet pods and ${row.checks.floorSampled} floor pods: ` +
      (problems.length === 0 ? 'all as expected' : `${problems.length} problems (first: ${problems[0]})`) +
      (repeat > 1 ? `; figures are medians of ${repeat} runs` : ''),
  );

  // Merge into the results file: this run's row replaces an earlier row of the same N.
  let previous: Row[] = [];
  try {
    previous = (JSON.parse(await readFile(outFile, 'utf8')) as { rows?: Row[] }).rows ?? [];
  } catch {
    // no results yet
  }
  const rows = [...previous.filter((r) => r.n !== row.n), row].sort((a, b) => a.n - b.n);
  const machine = {
    cpus: cpu.length,
    cpuModel: cpu[0]?.model ?? '',
    totalMemBytes: totalmem(),
    node: process.version,
  };
  await mkdir(dirname(outFile), { recursive: true });
  await writeFile(outFile, JSON.stringify({ benchmark: 'volumes', machine, rows }, null, 2) + '\n');
  console.error(`volumes: wrote ${outFile}`);
  if (!ok) process.exitCode = 1;
}

await main();

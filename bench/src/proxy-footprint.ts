/**
 * The proxy's footprint as a user runs it: `nodelet proxy --kubeconfig … --mode iptables` against an API
 * server holding N Services with one EndpointSlice of E endpoints each, inside a network namespace made
 * for the run (the proxy's rules land there, never in the host's tables; the namespace is deleted at the
 * end, also on failure).
 *
 *   npm run bench:proxy-footprint --workspace @nodelet/bench -- [--services 1000] [--endpoints 10]
 *        [--seconds 35] [--runs 1] [--node-flags='--max-semi-space-size=4']
 *
 * The bench runs itself a second time inside the namespace (`ip netns exec`), where it serves the
 * embedded control plane (@nodelet/controlplane, in-process, on 127.0.0.1 of the namespace, the objects
 * written through its registry) and spawns the real CLI, `node packages/cli/dist/main.js proxy
 * --kubeconfig <admin kubeconfig> --mode iptables --hostname-override <a node>`. Of that process:
 *
 *   start     ms from spawn to its log line "services and endpoint slices listed; syncing rules" (the
 *             first sync begins: modules loaded, kubeconfig read, both lists delivered); also to its
 *             first "synced proxy rules" (the first full sync applied)
 *   rss       peak resident memory (VmHWM of /proc/<pid>/status) at the end of the run
 *   cpu       its own user + system CPU seconds (/proc/<pid>/stat) --seconds after spawn, and when
 *             the two log lines appeared; the CPU of the commands it runs (iptables-save/-restore,
 *             its standby shell) is counted apart
 *
 * The floor, measured in the same run: a bare `node -e` process (spawn to its first output line, its
 * VmHWM and CPU then), so the figures read as "nodelet proxy above bare node". Targets: RSS ≤ 90 MiB,
 * CPU ≤ 1 s in 35 s, start ≤ 1 s. With --runs K, each figure is the median of K runs against the
 * same API server, each from an empty namespace (`nodelet proxy --cleanup` between runs). --node-flags runs the proxy as `node <flags> packages/cli/dist/main.js proxy …` (V8
 * tuning an operator may choose; the default is none, as the command above). Prints a table and writes
 * bench/results/proxy-footprint.json.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ControlPlane } from '@nodelet/controlplane';
import { createLogger, RealClock } from '@nodelet/kernel';
import { systemEnv } from '@nodelet/proxy';
import { netnsSupport } from '@nodelet/proxy/testing';

const { values: args } = parseArgs({
  options: {
    services: { type: 'string', default: '1000' },
    endpoints: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '35' },
    runs: { type: 'string', default: '1' },
    'node-flags': { type: 'string', default: '' },
    out: { type: 'string' },
    // Internal: the run inside the namespace the outer run made.
    inside: { type: 'string' },
  },
});

const here = dirname(fileURLToPath(import.meta.url));
const outFile = args.out ?? join(here, '..', 'results', 'proxy-footprint.json');
const cliMain = join(here, '..', '..', 'packages', 'cli', 'dist', 'main.js');
const NODE_NAME = 'footprint-node';
const FIRST_SYNC_BEGUN = 'services and endpoint slices listed; syncing rules';
const FIRST_SYNC_DONE = 'synced proxy rules';
const TARGETS = { rssMiB: 90, cpuSeconds: 1, startMs: 1000 };
const MiB = 1024 * 1024;
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

function positiveInt(name: string, text: string | undefined): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, not ${text}`);
  return n;
}

/** Peak resident set of a live process, in bytes. */
function peakRss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB/m);
  if (!line) throw new Error(`/proc/${pid}/status has no VmHWM`);
  return Number(line[1]) * 1024;
}

/** utime, stime, cutime, cstime and ppid of a process (seconds), or undefined when it is gone. */
function procStat(pid: number): { own: number; reaped: number; ppid: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name (which may hold spaces), from field 3 (state) on.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const tick = (i: number) => Number(f[i - 3]) / CLOCK_TICKS;
  return { own: tick(14) + tick(15), reaped: tick(16) + tick(17), ppid: Number(f[4 - 3]) };
}

/** CPU seconds of the commands a process ran: those it reaped, and its live descendants' own. */
function childrenCpu(pid: number): number {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = procStat(Number(name));
    if (s) parents.set(Number(name), s.ppid);
  }
  const isDescendant = (p: number): boolean => {
    for (let q = parents.get(p); q !== undefined && q > 1; q = parents.get(q)) if (q === pid) return true;
    return false;
  };
  let total = procStat(pid)?.reaped ?? 0;
  for (const p of parents.keys()) {
    const s = isDescendant(p) ? procStat(p) : undefined;
    if (s) total += s.own + s.reaped;
  }
  return total;
}

interface Watched {
  child: ChildProcess;
  spawnedAt: number;
  /** ms after spawn at which a line containing the text was first seen. */
  seen: Map<string, number>;
  /** The process's own CPU seconds then. */
  cpuAt: Map<string, number>;
  output: string[];
  exited: Promise<number | null>;
}

/** Spawns a process and notes when lines of interest appear on its stdout or stderr. */
function watch(command: string, argv: string[], texts: readonly string[]): Watched {
  const spawnedAt = performance.now();
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: systemEnv() });
  const w: Watched = {
    child,
    spawnedAt,
    seen: new Map(),
    cpuAt: new Map(),
    output: [],
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
  const onData = (chunk: Buffer) => {
    const at = performance.now() - spawnedAt;
    const text = chunk.toString('utf8');
    w.output.push(text);
    if (w.output.length > 200) w.output.shift();
    for (const t of texts) {
      if (w.seen.has(t) || !text.includes(t)) continue;
      w.seen.set(t, at);
      w.cpuAt.set(t, procStat(child.pid!)?.own ?? NaN);
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  return w;
}

/** Stops a process by its PID: SIGTERM, then SIGKILL after 5 s. */
async function stop(w: Watched): Promise<void> {
  if (w.child.exitCode !== null || w.child.signalCode !== null) return;
  w.child.kill('SIGTERM');
  const killed = await Promise.race([w.exited.then(() => true), sleep(5000).then(() => false)]);
  if (!killed) {
    w.child.kill('SIGKILL');
    await w.exited;
  }
}

/** Waits until `text` appears (or the process ends, or `ms` pass). */
async function waitFor(w: Watched, text: string, ms: number): Promise<number> {
  const until = performance.now() + ms;
  while (!w.seen.has(text)) {
    if (w.child.exitCode !== null)
      throw new Error(`process ended (${w.child.exitCode}): ${w.output.join('')}`);
    if (performance.now() > until) throw new Error(`no "${text}" within ${ms} ms: ${w.output.join('')}`);
    await sleep(5);
  }
  return w.seen.get(text)!;
}

interface Figures {
  startMs: number;
  rssMiB: number;
  cpuSeconds: number;
}

/** A bare `node -e` process: spawn to its first line, its peak RSS and its CPU then. */
async function measureFloor(): Promise<Figures> {
  const w = watch(
    process.execPath,
    ['-e', "process.stdout.write('ready\\n'); setInterval(() => {}, 60000)"],
    ['ready'],
  );
  try {
    const startMs = await waitFor(w, 'ready', 10_000);
    const pid = w.child.pid!;
    return { startMs, rssMiB: peakRss(pid) / MiB, cpuSeconds: procStat(pid)!.own };
  } finally {
    await stop(w);
  }
}

interface ProxyRun extends Figures {
  firstSyncDoneMs: number;
  /** CPU seconds by the first sync's beginning and by its end (the first full render included). */
  cpuAtFirstSyncBegun: number;
  cpuAtFirstSyncDone: number;
  childrenCpuSeconds: number;
  iptables: string;
}

async function measureProxy(kubeconfig: string, seconds: number, nodeFlags: string[]): Promise<ProxyRun> {
  const argv = [...nodeFlags, cliMain, 'proxy', '--kubeconfig', kubeconfig, '--mode', 'iptables'];
  const w = watch(
    process.execPath,
    [...argv, '--hostname-override', NODE_NAME],
    [FIRST_SYNC_BEGUN, FIRST_SYNC_DONE, 'using iptables-legacy', 'using iptables-nft'],
  );
  try {
    const startMs = await waitFor(w, FIRST_SYNC_BEGUN, seconds * 1000);
    const firstSyncDoneMs = await waitFor(w, FIRST_SYNC_DONE, seconds * 1000);
    const left = seconds * 1000 - (performance.now() - w.spawnedAt);
    if (left > 0) await sleep(left);
    const pid = w.child.pid!;
    const stat = procStat(pid);
    if (!stat) throw new Error(`the proxy ended before ${seconds} s: ${w.output.join('')}`);
    return {
      startMs,
      firstSyncDoneMs,
      cpuAtFirstSyncBegun: w.cpuAt.get(FIRST_SYNC_BEGUN)!,
      cpuAtFirstSyncDone: w.cpuAt.get(FIRST_SYNC_DONE)!,
      rssMiB: peakRss(pid) / MiB,
      cpuSeconds: stat.own,
      childrenCpuSeconds: childrenCpu(pid),
      iptables: w.seen.has('using iptables-legacy')
        ? 'legacy'
        : w.seen.has('using iptables-nft')
          ? 'nft'
          : '?',
    };
  } finally {
    await stop(w);
  }
}

/** N Services (ClusterIP, one TCP port) with one EndpointSlice of E ready endpoints each, and the node. */
function populate(cp: ControlPlane, services: number, endpoints: number): void {
  const reg = cp.registry;
  reg.create(reg.byStorage('namespaces'), '', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'bench' },
  });
  reg.create(reg.byStorage('nodes'), '', { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE_NAME } });
  const svcType = reg.byStorage('services');
  const sliceType = reg.byStorage('endpointslices');
  for (let i = 0; i < services; i++) {
    const name = `svc-${i}`;
    reg.create(svcType, 'bench', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: 'bench' },
      spec: {
        selector: { app: name },
        ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
      },
    });
    reg.create(sliceType, 'bench', {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-abcde`, namespace: 'bench', labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      endpoints: Array.from({ length: endpoints }, (_, k) => ({
        addresses: [`10.${128 + Math.floor(i / 256)}.${i % 256}.${k + 1}`],
        conditions: { ready: true, serving: true, terminating: false },
        nodeName: NODE_NAME,
      })),
    });
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const round = (x: number, digits: number) => Number(x.toFixed(digits));

/** Inside the namespace: the control plane here, the floor, then the proxy K times. */
async function inside(ns: string): Promise<void> {
  const services = positiveInt('services', args.services);
  const endpoints = positiveInt('endpoints', args.endpoints);
  const seconds = positiveInt('seconds', args.seconds);
  const runs = positiveInt('runs', args.runs);
  const nodeFlags = args['node-flags'].split(' ').filter(Boolean);
  const loadStart = loadavg();
  console.log(
    `proxy footprint: ${services} services × ${endpoints} endpoints, ${seconds} s per run, ${runs} run(s)${nodeFlags.length ? `, node ${nodeFlags.join(' ')}` : ''}, namespace ${ns}; ${cpus().length} CPUs, kernel ${release()}, load ${loadStart.map((l) => l.toFixed(1)).join(' ')}`,
  );
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-footprint-'));
  const cp = new ControlPlane({
    dataDir: dir,
    clock: new RealClock(),
    logger: createLogger({ level: 'warn' }),
    port: 0,
    controllers: { scheduler: false, endpointSlices: false },
  });
  try {
    await cp.start();
    populate(cp, services, endpoints);
    const floor = await measureFloor();
    const measured: ProxyRun[] = [];
    for (let r = 0; r < runs; r++) {
      // Every run starts as the first did, with no rules here (not adopting the last run's).
      if (r > 0)
        execFileSync(process.execPath, [cliMain, 'proxy', '--cleanup'], {
          env: systemEnv(),
          stdio: 'ignore',
        });
      const run = await measureProxy(cp.kubeconfigPath, seconds, nodeFlags);
      console.log(
        `  run ${r + 1}: start ${run.startMs.toFixed(0)} ms, first sync done ${run.firstSyncDoneMs.toFixed(0)} ms, RSS ${run.rssMiB.toFixed(1)} MiB, CPU ${run.cpuSeconds.toFixed(2)} s (${run.cpuAtFirstSyncBegun.toFixed(2)} s by the first sync, ${run.cpuAtFirstSyncDone.toFixed(2)} s by its end; commands ${run.childrenCpuSeconds.toFixed(2)} s), iptables-${run.iptables}`,
      );
      measured.push(run);
    }
    const proxy = {
      startMs: round(median(measured.map((m) => m.startMs)), 0),
      firstSyncDoneMs: round(median(measured.map((m) => m.firstSyncDoneMs)), 0),
      rssMiB: round(median(measured.map((m) => m.rssMiB)), 1),
      cpuSeconds: round(median(measured.map((m) => m.cpuSeconds)), 2),
      cpuAtFirstSyncBegun: round(median(measured.map((m) => m.cpuAtFirstSyncBegun)), 2),
      cpuAtFirstSyncDone: round(median(measured.map((m) => m.cpuAtFirstSyncDone)), 2),
      childrenCpuSeconds: round(median(measured.map((m) => m.childrenCpuSeconds)), 2),
    };
    const rows: [string, string, number, number, number][] = [
      ['start to first sync begun', 'ms', proxy.startMs, floor.startMs, TARGETS.startMs],
      ['peak RSS (VmHWM)', 'MiB', proxy.rssMiB, floor.rssMiB, TARGETS.rssMiB],
      [
        `CPU in ${seconds} s (the process itself)`,
        's',
        proxy.cpuSeconds,
        floor.cpuSeconds,
        TARGETS.cpuSeconds,
      ],
    ];
    const table = [
      '| figure | nodelet proxy | bare node (floor) | above the floor | target | met |',
      '| --- | --- | --- | --- | --- | --- |',
      ...rows.map(
        ([what, unit, v, f, target]) =>
          `| ${what} | ${v} ${unit} | ${round(f, 2)} ${unit} | ${round(v - f, 2)} ${unit} | ≤ ${target} ${unit} | ${v <= target ? 'yes' : 'no'} |`,
      ),
    ].join('\n');
    console.log('\n' + table);
    console.log(
      `\nfirst sync applied ${proxy.firstSyncDoneMs} ms after spawn; the proxy's CPU ${proxy.cpuAtFirstSyncBegun} s by the first sync's beginning, ${proxy.cpuAtFirstSyncDone} s by its end; CPU of the commands it ran ${proxy.childrenCpuSeconds} s (iptables-${measured[0]!.iptables})`,
    );
    await mkdir(dirname(outFile), { recursive: true });
    const result = {
      date: new Date().toISOString(),
      cpus: cpus().length,
      kernel: release(),
      loadavg: { start: loadStart, end: loadavg() },
      command: `node ${nodeFlags.map((f) => f + ' ').join('')}packages/cli/dist/main.js proxy --kubeconfig <admin kubeconfig> --mode iptables --hostname-override ${NODE_NAME}`,
      services,
      endpoints,
      seconds,
      targets: TARGETS,
      floor: {
        startMs: round(floor.startMs, 0),
        rssMiB: round(floor.rssMiB, 1),
        cpuSeconds: floor.cpuSeconds,
      },
      proxy,
      runs: measured,
    };
    await writeFile(outFile, JSON.stringify(result, null, 2) + '\n');
    console.log(`wrote ${outFile}`);
  } finally {
    await cp.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Outside: makes the namespace, runs the bench again inside it, deletes the namespace whatever happens. */
async function outside(): Promise<number> {
  const support = await netnsSupport();
  if (!support.ok) throw new Error(`the proxy footprint bench needs root and ip netns: ${support.reason}`);
  const ns = `nlp-${randomBytes(3).toString('hex')}-fp`;
  const ip = (...a: string[]) => execFileSync('ip', a, { env: systemEnv(), stdio: 'inherit' });
  ip('netns', 'add', ns);
  let child: ChildProcess | undefined;
  const onSignal = () => child?.kill('SIGTERM');
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    const self = fileURLToPath(import.meta.url);
    child = spawn(
      'ip',
      ['netns', 'exec', ns, process.execPath, self, ...process.argv.slice(2), '--inside', ns],
      {
        stdio: 'inherit',
        env: systemEnv(),
      },
    );
    const c = child;
    return await new Promise<number>((resolve) => c.once('exit', (code) => resolve(code ?? 1)));
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    ip('netns', 'del', ns);
  }
}

try {
  if (args.inside) await inside(args.inside);
  else process.exitCode = await outside();
} catch (err) {
  console.error(
    (err as Error).message.startsWith('--') ? `proxy footprint bench: ${(err as Error).message}` : err,
  );
  process.exitCode = 2;
}

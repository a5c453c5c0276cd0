/**
 * The proxy against the kernel: what nodelet adds on top of the kernel's own cost of programming the
 * same rules, measured in the same run, inside network namespaces made for the run (never the host's).
 *
 *   npm run bench:proxy --workspace @nodelet/bench -- [--services 1000,5000] [--endpoints 10]
 *        [--backends iptables-legacy,iptables-nft,nftables] [--changes 5] [--repeat K] [--slow]
 *        [--userspace on|off|only] [--userspace-mb 1024] [--userspace-rounds 9] [--kernel-cpu K|off]
 *
 * For each backend and N services × E endpoints (ClusterIP services, upstream-shaped rules):
 *
 *   (a) render   rendering the full rules as a full sync does (in-process; iptables: streamed, each
 *                byte chunk handed on before the next is rendered into the same memory, nft: strings
 *                of about 64 KiB) ÷ the kernel applying exactly that text once (`iptables-restore
 *                --noflush` or `nft -f`) into a fresh namespace. Goal ≤ 0.1.
 *                --repeat runs (default 3 up to 1,000 services, else 1), each in fresh namespaces,
 *                rotating which of floor and nodelet goes first, each once the kernel has finished
 *                tearing down the last run's namespaces (the machine idle again); the ratios are the
 *                medians of each run's own ratio. The render is a new renderer's (a proxy's first
 *                full sync: its blocks and plans made anew) and, for iptables, a running proxy's
 *                (every rule rendered again, as after a change on every service port, into the
 *                blocks its earlier renders used; measured after (c), as many times as repeats,
 *                each followed by a kernel apply of the same text into a fresh namespace: the median
 *                of those pairs' ratios).
 *   (b) full     a new proxy's full sync into a fresh namespace (iptables: the restore starts, with
 *                iptables-save of what exists beside it in the same child, and the rules stream into
 *                it as they are rendered; nft: one listing of what exists, then the transaction streams
 *                into nft -f as it is rendered) ÷ that same one-transaction apply (the floor). Goal
 *                ≤ 1.1. Also the floor with its text written in 64 KiB chunks, as a streamed sync
 *                writes (what streaming costs the kernel tool), and when nodelet's restore and that
 *                chunked floor had taken 10 %, 50 % and all of the input.
 *                For iptables also a running proxy's next full sync (one backend for all repeats, a
 *                fresh namespace each time, as after someone flushed the tables), and the new
 *                proxy's sync not streamed (save, render, restore in turn).
 *   (c) change   one endpoint of one service replaced: nodelet's sync (tracker commit + backend partial
 *                sync) ÷ a minimal hand-made transaction doing the same on a twin namespace (rewrite the
 *                service chain, add the new endpoint chain, delete the old one). The median of
 *                --changes runs' ratios. Goal ≤ 1.2, and never a full resync. Afterwards both namespaces must hold the
 *                same rules (checked at the smallest N).
 *
 * Every kernel command — the floors, the hand-made transactions, nodelet's — runs in a shell started
 * ahead that waits for its script's name (StandbyShell, as nodelet's proxy does between syncs), and is
 * timed from the moment its input is handed over: neither side pays for forking this (large) process.
 * nodelet's backends are prepared (`prepare()`, what a proxy calls when it starts) outside the timing.
 * Those commands run on one CPU, --kernel-cpu (default: the last when there are two or more), and the
 * bench process beside it: see kernel-cpu.ts for why.
 *
 * iptables-nft (the nf_tables back end of iptables) takes minutes per apply above 1,000 services on this
 * machine (5,000 ≈ 8 min): those sizes are skipped unless --slow.
 *
 * Userspace: bulk TCP throughput through the userspace proxy ÷ a direct loopback connection, iperf3
 * as sender and sink (apt-get install iperf3). Sender, sink and proxy each run in a process of their
 * own (the bench process stays idle in both cases); the median of --userspace-rounds rounds of
 * --userspace-mb MiB, each round one direct and one proxied transfer, alternating which goes first.
 * Also the CPU the proxy process uses per MiB. Goal ≥ 0.5. (--userspace only: this part alone, no
 * root needed.)
 *
 * Prints a table and writes bench/results/proxy.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { cpus, loadavg, release } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createLogger } from '@nodelet/kernel';
import {
  ChangeTracker,
  defaultNodeContext,
  type CommandRunner,
  type EndpointSlice,
  type ExecOptions,
  type ExecResult,
  type RunningCommand,
  emptyChangeSet,
  type ProxyState,
  type Service,
  HostCommandRunner,
  type ServicePortState,
  StandbyShell,
  systemEnv,
  written,
} from '@nodelet/proxy';
import { NetnsTopology, netnsSupport } from '@nodelet/proxy/testing';
import {
  endpointChain as iptEndpointChain,
  Iptables,
  IptablesBackend,
  IptablesRenderer,
  isServiceChain,
  JUMP_RULES,
  type RenderOutput,
  serviceChain as iptServiceChain,
} from '@nodelet/proxy-iptables';
import {
  endpointChain as nftEndpointChain,
  NftablesBackend,
  NftRenderer,
  serviceChain as nftServiceChain,
} from '@nodelet/proxy-nftables';
import { CpuPlacement, cpuSpeeds } from './kernel-cpu.js';

const BACKENDS = ['iptables-legacy', 'iptables-nft', 'nftables'] as const;
type BackendName = (typeof BACKENDS)[number];

const { values: args } = parseArgs({
  options: {
    services: { type: 'string', default: '1000,5000' },
    endpoints: { type: 'string', default: '10' },
    backends: { type: 'string', default: 'iptables-legacy,iptables-nft,nftables' },
    changes: { type: 'string', default: '5' },
    slow: { type: 'boolean', default: false },
    repeat: { type: 'string' },
    'userspace-mb': { type: 'string', default: '1024' },
    'userspace-rounds': { type: 'string', default: '9' },
    userspace: { type: 'string', default: 'on' },
    out: { type: 'string' },
    'kernel-cpu': { type: 'string' },
  },
});
/** Set by main() from --kernel-cpu before anything runs. */
let placement = new CpuPlacement(undefined);

const quiet = createLogger({ sink: () => undefined });
const here = dirname(fileURLToPath(import.meta.url));
const outFile = args.out ?? join(here, '..', 'results', 'proxy.json');
function num2ip(n: number): string {
  return [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}
const CLUSTER_BASE = (10 << 24) | (96 << 16); // 10.96.0.0/12
const POD_BASE = (10 << 24) | (128 << 16); // 10.128.0.0/9

function objects(n: number, e: number): { services: Service[]; slices: EndpointSlice[] } {
  const services: Service[] = [];
  const slices: EndpointSlice[] = [];
  for (let i = 0; i < n; i++) {
    services.push({
      kind: 'Service',
      metadata: { name: `svc-${i}`, namespace: 'bench' },
      spec: { clusterIP: num2ip(CLUSTER_BASE + i + 1), ports: [{ name: 'http', protocol: 'TCP', port: 80 }] },
    });
    slices.push(
      slice(
        i,
        Array.from({ length: e }, (_, j) => num2ip(POD_BASE + i * e + j)),
      ),
    );
  }
  return { services, slices };
}

function slice(i: number, ips: string[]): EndpointSlice {
  return {
    kind: 'EndpointSlice',
    metadata: {
      name: `svc-${i}-abcde`,
      namespace: 'bench',
      labels: { 'kubernetes.io/service-name': `svc-${i}` },
    },
    addressType: 'IPv4',
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
  };
}

function exec(
  ns: string,
  command: string,
  cmdArgs: string[],
  input?: string | Buffer,
): Promise<{ ms: number; out: string }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const [pinned, pinnedArgs] = placement.command(command, cmdArgs);
    const child = spawn('ip', ['netns', 'exec', ns, pinned, ...pinnedArgs], { env: systemEnv() });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) =>
      code === 0
        ? resolve({ ms: performance.now() - start, out })
        : reject(new Error(`${command}: ${err.slice(0, 500)}`)),
    );
    child.stdin.end(input ?? '');
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Busy CPU time of the whole machine so far (all CPUs, /proc/stat), in clock ticks. */
async function busyTicks(): Promise<number> {
  const [, ...fields] = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = fields.map(Number);
  return user! + nice! + system! + irq! + softirq! + steal!;
}

/**
 * Waits (at most `maxMs`) until the machine is nearly idle: less than a fifth of one CPU busy over a
 * quarter of a second. Deleting a namespace returns at once while the kernel frees its tables in the
 * background, seconds of CPU for tens of megabytes of rules: without this the next repeat's applies
 * share the CPU with the last one's teardown. Returns the ms waited.
 */
async function settle(maxMs = 60_000): Promise<number> {
  const start = performance.now();
  const windowMs = 250;
  const ticksPerMs = 100 / 1000; // USER_HZ
  while (performance.now() - start < maxMs) {
    const before = await busyTicks();
    await new Promise((r) => setTimeout(r, windowMs));
    if ((await busyTicks()) - before < 0.2 * windowMs * ticksPerMs) break;
  }
  return performance.now() - start;
}
const r2 = (x: number) => Math.round(x * 100) / 100;
/**
 * The median of the per-repeat ratios a[i] / b[i]: each repeat's two sides ran back to back, so a
 * drift of the machine's speed between repeats cancels out, which a ratio of two medians does not do.
 */
const pairedRatio = (a: number[], b: number[]) => median(a.map((x, i) => x / b[i]!));

interface Row {
  backend: BackendName;
  services: number;
  endpoints: number;
  rules: { bytes: number; lines: number };
  renderMs: number;
  /** iptables: a running renderer's full render of every rule, and ÷ the apply. */
  runningRenderMs?: number;
  runningRenderRatio?: number;
  /**
   * Every repeat's figures (ms), in run order: the medians come from these, the ratios are medians of
   * the repeats' own ratios; `settledMs`: how long each repeat, then each change of (c), waited for
   * the machine to be idle.
   */
  repeats: {
    render: number[];
    /** Minor page faults of this process during each new renderer's render (first-touched memory). */
    renderFaults: number[];
    runningRender?: number[];
    /** The kernel apply timed just after each running render, for its ratio. */
    runningRenderFloor?: number[];
    floorApply: number[];
    nodeletFull: number[];
    runningFull?: number[];
    notStreamed?: number[];
    /** The floor's text written in 64 KiB chunks, each once the pipe took the one before. */
    chunkedFloor: number[];
    /** When nodelet's restore (new proxy) and the chunked floor had taken 10 %, 50 %, all of the input (ms). */
    inputAckedMs: { nodelet: (number | null)[][]; chunkedFloor: (number | null)[][] };
    settledMs: number[];
  };
  floorApplyMs: number;
  renderRatio: number;
  nodeletFullMs: number;
  fullRatio: number;
  /** The chunked floor ÷ the floor: what writing the input as a stream costs the kernel tool. */
  chunkedFloorRatio: number;
  /** iptables: the full sync of a running proxy. */
  runningFullMs?: number;
  runningFullRatio?: number;
  /** iptables: the same full sync without streaming (save, render, restore one after the other). */
  notStreamedMs?: number;
  notStreamedRatio?: number;
  change: {
    nodeletMs: number;
    handMadeMs: number;
    ratio: number;
    nodeletBytes: number;
    handMadeBytes: number;
    partial: boolean;
    /** Each change's two sides (ms), in run order. */
    runs: { nodelet: number[]; handMade: number[] };
  };
  sameRulesAfterChanges?: boolean;
  /** 1-, 5- and 15-minute load averages when the row was finished. */
  load: number[];
}

/** When a command's stdin had taken 10 %, 50 % and all of `total` bytes, in ms after `start`. */
class InputProgress {
  readonly at: (number | null)[] = [null, null, null];
  private taken = 0;
  constructor(
    private readonly total: number,
    private readonly start: number,
  ) {}
  took(bytes: number): void {
    this.taken += bytes;
    [0.1, 0.5, 1].forEach((f, i) => {
      if (this.at[i] === null && this.taken >= f * this.total)
        this.at[i] = r2(performance.now() - this.start);
    });
  }
}

/**
 * nodelet's commands: in a namespace of the bench's (the running proxy's changes between legs), on the
 * kernel CPU. With `progress`, the input the started commands' stdin takes (`write`s) is recorded.
 */
class BenchRunner implements CommandRunner {
  progress: InputProgress | undefined;
  constructor(public netns: string) {}
  run(command: string, args: readonly string[], options?: ExecOptions): Promise<ExecResult> {
    return new HostCommandRunner(this.netns).run(...placement.command(command, args), options);
  }
  start(command: string, args: readonly string[], options?: Omit<ExecOptions, 'input'>): RunningCommand {
    const running = new HostCommandRunner(this.netns).start(...placement.command(command, args), options);
    const stdin = running.stdin;
    const write = stdin.write;
    // Looked up at write time: a standby shell is started before the leg that records it.
    const progressNow = () => this.progress;
    stdin.write = function (this: Writable, chunk: Buffer | string, ...rest: unknown[]) {
      const cb = rest.find((x) => typeof x === 'function') as ((err?: Error | null) => void) | undefined;
      const bytes = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
      const progress = progressNow();
      return (write as (c: Buffer | string, cb: (err?: Error | null) => void) => boolean).call(
        this,
        chunk,
        (err?: Error | null) => {
          progress?.took(bytes);
          cb?.(err);
        },
      );
    } as Writable['write'];
    return running;
  }
}

/**
 * A floor (the kernel tool given the whole transaction) started ahead in `ns` the way nodelet's syncs
 * start theirs: a standby shell waiting for its script's name. Both sides are timed from the moment the
 * input is handed over; neither pays for forking this process (see StandbyShell).
 */
function floorStandby(ns: string, [command, cmdArgs]: [string, string[]]) {
  const runner = new BenchRunner(ns);
  const standby = new StandbyShell(runner, { apply: `exec ${[command, ...cmdArgs].join(' ')}` });
  standby.prepare();
  return {
    /**
     * `chunked`: the input written as a streamed sync writes it, 64 KiB at a time, each once the pipe
     * has taken the one before (recorded in `chunked.progress`); otherwise all at once.
     */
    async run(input: Buffer, chunked?: { progress: (start: number) => InputProgress }): Promise<number> {
      const t0 = performance.now();
      const running = standby.run('apply')!;
      if (chunked) {
        runner.progress = chunked.progress(t0);
        for (let o = 0; o < input.length; o += 64 * 1024) {
          await written(running.stdin, input.subarray(o, o + 64 * 1024));
        }
        running.stdin.end();
      } else {
        running.stdin.end(input);
      }
      const result = await running.result;
      if (result.code !== 0) throw new Error(`${command}: ${result.stderr.slice(0, 500)}`);
      return performance.now() - t0;
    },
    close: () => standby.close(),
  };
}

/** Full rule text and the commands of one backend, plus the hand-made minimal transaction for a change. */
interface Driver {
  /**
   * The full rules by a new renderer, made as the backend's full sync makes them (iptables: streamed,
   * each chunk handed on before the next is rendered into the same memory; nft: strings of about
   * 64 KiB, all kept). Timed; what it makes is dropped.
   */
  render(state: ProxyState): void;
  /** The same rules as one text, for the floor (not timed). */
  text(state: ProxyState): Buffer;
  /**
   * A running proxy's renderer (iptables): each call renders every rule again as `render` does,
   * alternating between `a` and `b` (the same services, other objects), and records it applied.
   */
  runningRender?(a: ProxyState, b: ProxyState): () => void;
  /** Whether a running proxy's full sync is measured too (iptables). */
  running: boolean;
  floorCommand: [string, string[]];
  backend(runner: CommandRunner): IptablesBackend | NftablesBackend;
  /** `large`: more than 1,000 endpoints, where rules carry no per-endpoint comments (as upstream). */
  handMade(before: ServicePortState, after: ServicePortState, large: boolean): string;
  dump: [string, string[]];
  /**
   * The full sync done the plain way, for comparison (iptables only): iptables-save, then the whole
   * render, then one restore — what a full sync did before it streamed.
   */
  sequential?(ns: string, state: ProxyState): Promise<void>;
}

/**
 * A full render the way the backend's full sync makes it: streamed, the kernel state (here: every jump
 * missing, a fresh namespace) given when asked for. Each chunk is dropped before the render goes on,
 * where the sync writes it to the restore's pipe (the floor writes the same bytes to its pipe).
 */
const streamedRender = (renderer: IptablesRenderer, state: ProxyState): RenderOutput =>
  renderer.renderStreamed(
    { state, changes: emptyChangeSet(), full: true, missingJumps: JUMP_RULES },
    () => undefined,
  );

function iptDriver(mode: 'legacy' | 'nft'): Driver {
  return {
    render: (state) => void streamedRender(new IptablesRenderer(), state),
    text: (state) =>
      Buffer.from(
        new IptablesRenderer().render({
          state,
          changes: emptyChangeSet(),
          full: true,
          missingJumps: JUMP_RULES,
        }).text,
      ),
    runningRender: (a, b) => {
      const renderer = new IptablesRenderer();
      let k = 0;
      const once = () => renderer.applied(streamedRender(renderer, k++ % 2 === 0 ? a : b));
      once(); // the first render of a process: the blocks the next renders write into again
      once();
      return once;
    },
    running: true,
    floorCommand: [`iptables-${mode}-restore`, ['--wait=5', '--noflush']],
    backend: (runner) => new IptablesBackend({ backend: mode, runner, logger: quiet }),
    // Large-cluster rules (no per-endpoint comments): rewrite the service chain, add the new endpoint
    // chain, flush and delete the old one — one restore, as an operator would write it.
    handMade: (before, after, large) => {
      const svc = iptServiceChain(after);
      const sepComment = large ? '' : ` -m comment --comment ${after.name}`;
      const svcComment = (ep: { endpoint: string }) =>
        large ? '' : ` -m comment --comment "${after.name} -> ${ep.endpoint}"`;
      const oldEps = before.clusterEndpoints.filter(
        (e) => !after.clusterEndpoints.some((x) => x.endpoint === e.endpoint),
      );
      const newEps = after.clusterEndpoints.filter(
        (e) => !before.clusterEndpoints.some((x) => x.endpoint === e.endpoint),
      );
      const n = after.clusterEndpoints.length;
      const lines = ['*nat', `:${svc} - [0:0]`];
      for (const e of newEps) lines.push(`:${iptEndpointChain(after, e)} - [0:0]`);
      for (const e of oldEps) lines.push(`:${iptEndpointChain(before, e)} - [0:0]`);
      after.clusterEndpoints.forEach((e, i) => {
        const stat =
          i < n - 1 ? ` -m statistic --mode random --probability ${(1 / (n - i)).toFixed(10)}` : '';
        lines.push(`-A ${svc}${svcComment(e)}${stat} -j ${iptEndpointChain(after, e)}`);
      });
      for (const e of newEps) {
        const c = iptEndpointChain(after, e);
        lines.push(
          `-A ${c}${sepComment} -s ${e.ip} -j KUBE-MARK-MASQ`,
          `-A ${c}${sepComment} -m tcp -p tcp -j DNAT --to-destination ${e.endpoint}`,
        );
      }
      for (const e of oldEps) lines.push(`-X ${iptEndpointChain(before, e)}`);
      lines.push('COMMIT');
      return lines.join('\n') + '\n';
    },
    dump: [`iptables-${mode}-save`, []],
    sequential: async (ns, state) => {
      const ipt = new Iptables(mode, new BenchRunner(ns));
      const saved = await ipt.save();
      const out = new IptablesRenderer().render({
        state,
        changes: emptyChangeSet(),
        full: true,
        existingChains: new Set([...(saved.chains.get('nat') ?? [])].filter(isServiceChain)),
        missingJumps: JUMP_RULES.filter(
          (j) =>
            !(saved.rules.get(j.table) ?? []).some(
              (r) => r.startsWith(`-A ${j.from} `) && r.endsWith(`-j ${j.to}`),
            ),
        ),
      });
      await ipt.restore(out.text);
    },
  };
}

const nftRender = (state: ProxyState) =>
  new NftRenderer().render({ state, changes: emptyChangeSet(), full: true, fresh: true });

const nftDriver: Driver = {
  render: (state) => void nftRender(state),
  text: (state) => Buffer.concat(nftRender(state).chunks),
  running: false,
  floorCommand: ['nft', ['-f', '-']],
  backend: (runner) => new NftablesBackend({ runner, logger: quiet }),
  handMade: (before, after) => {
    const T = 'ip kube-proxy';
    const svc = nftServiceChain(after);
    const oldEps = before.clusterEndpoints.filter(
      (e) => !after.clusterEndpoints.some((x) => x.endpoint === e.endpoint),
    );
    const newEps = after.clusterEndpoints.filter(
      (e) => !before.clusterEndpoints.some((x) => x.endpoint === e.endpoint),
    );
    const lines: string[] = [];
    for (const e of newEps) {
      const c = nftEndpointChain(after, e);
      lines.push(
        `add chain ${T} ${c}`,
        `add rule ${T} ${c} ip saddr ${e.ip} jump mark-for-masquerade`,
        `add rule ${T} ${c} meta l4proto tcp dnat to ${e.endpoint}`,
      );
    }
    const vmap = after.clusterEndpoints
      .map((e, i) => `${i} : goto ${nftEndpointChain(after, e)}`)
      .join(' , ');
    lines.push(
      `flush chain ${T} ${svc}`,
      `add rule ${T} ${svc} numgen random mod ${after.clusterEndpoints.length} vmap { ${vmap} }`,
    );
    for (const e of oldEps)
      lines.push(
        `flush chain ${T} ${nftEndpointChain(before, e)}`,
        `delete chain ${T} ${nftEndpointChain(before, e)}`,
      );
    return lines.join('\n') + '\n';
  },
  dump: ['nft', ['list', 'table', 'ip', 'kube-proxy']],
};

const normalize = (text: string) =>
  text
    .split('\n')
    .filter(
      (l) => l.trim() && !l.startsWith('#') && !/^:(INPUT|FORWARD|OUTPUT|PREROUTING|POSTROUTING) /.test(l),
    )
    .map((l) => l.replace(/\[\d+:\d+\]/g, '').trim())
    .sort()
    .join('\n');

async function benchBackend(
  name: BackendName,
  n: number,
  e: number,
  changes: number,
  checkSame: boolean,
): Promise<Row> {
  const driver = name === 'nftables' ? nftDriver : iptDriver(name === 'iptables-legacy' ? 'legacy' : 'nft');
  const { services, slices } = objects(n, e);
  const tracker = new ChangeTracker(defaultNodeContext('bench-node'), quiet);
  for (const s of services) tracker.upsertService(s);
  for (const s of slices) tracker.upsertEndpointSlice(s);
  const { state } = tracker.commit();

  // (a) render ÷ the kernel applying the same text; (b) nodelet's full sync into a fresh namespace,
  // by a new proxy (its first full sync) and by a running one (its next full sync, as after someone
  // flushed the tables). Each repeat uses fresh
  // namespaces and rotates which side goes first, so drift in the machine's load falls on every side.
  const repeats = Number(args.repeat ?? (n <= 1000 ? 3 : 1));
  driver.render(state); // warm-up (JIT)
  const runner = new BenchRunner('');
  const running = driver.running ? driver.backend(runner) : undefined;
  if (running) {
    // Warm-up: the running proxy's first full sync, into a namespace of its own.
    const warmNs = await NetnsTopology.create({ backends: 0 });
    runner.netns = warmNs.node;
    await running.sync(state, emptyChangeSet(), true);
    await warmNs.destroy();
  }
  /** Backends with a standby shell waiting in a namespace of this repeat: stopped before it goes. */
  let prepared: (IptablesBackend | NftablesBackend)[] = [];
  const standbys: { close(): Promise<void> }[] = [];
  const renders: number[] = [];
  const renderFaults: number[] = [];
  const runningRenders: number[] = [];
  const runningRenderFloors: number[] = [];
  const floors: number[] = [];
  const fulls: number[] = [];
  const runningFulls: number[] = [];
  let text: Buffer = Buffer.alloc(0);
  const chunkedFloors: number[] = [];
  /** Per repeat: when the new proxy's restore, and the chunked floor, had taken 10 %, 50 %, 100 % of the input. */
  const inputAcked: { nodelet: (number | null)[][]; chunkedFloor: (number | null)[][] } = {
    nodelet: [],
    chunkedFloor: [],
  };
  const sequentials: number[] = [];
  /** ms waited before each repeat for the previous one's namespaces to be torn down by the kernel. */
  const settled: number[] = [];
  let namespaces: NetnsTopology[] = [];
  let floorNs: NetnsTopology | undefined;
  let nodeletNs: NetnsTopology | undefined;
  let backend: IptablesBackend | NftablesBackend | undefined;
  const freshNs = async () => {
    const ns = await NetnsTopology.create({ backends: 0 });
    namespaces.push(ns);
    return ns.node;
  };
  try {
    for (let r = 0; r < repeats; r++) {
      for (const b of prepared) await b.stop();
      prepared = [];
      for (const ns of namespaces) await ns.destroy();
      namespaces = [];
      // The render is timed on the idle machine too, as the applies are, and on the kernel CPU: a new
      // renderer's, as in a proxy's first full sync.
      placement.benchOnKernelCpu();
      settled.push(await settle());
      const faults = process.resourceUsage().minorPageFault;
      const t0 = performance.now();
      driver.render(state);
      renders.push(performance.now() - t0);
      renderFaults.push(process.resourceUsage().minorPageFault - faults);
      placement.benchBesideKernel();
      text = driver.text(state);
      const floorNode = await freshNs();
      floorNs = namespaces[0];
      const nodeletNode = await freshNs();
      nodeletNs = namespaces[1];
      const floor = floorStandby(floorNode, driver.floorCommand);
      standbys.push(floor);
      const runFloor = async () => floors.push(await floor.run(text));
      // The floor again, its text written as a streamed sync writes: what streaming itself costs.
      const chunkedFloor = floorStandby(await freshNs(), driver.floorCommand);
      standbys.push(chunkedFloor);
      const runChunkedFloor = async () => {
        let progress: InputProgress | undefined;
        const ms = await chunkedFloor.run(text, {
          progress: (t) => (progress = new InputProgress(text.length, t)),
        });
        chunkedFloors.push(ms);
        inputAcked.chunkedFloor.push(progress!.at);
      };
      const nodeletRunner = new BenchRunner(nodeletNode);
      const b = driver.backend(nodeletRunner);
      // As a proxy does when it starts, before its first sync (the floor's shell is started ahead too).
      await b.prepare();
      prepared.push(b);
      backend = b;
      const runNodelet = async () => {
        const t1 = performance.now();
        const progress = new InputProgress(text.length, t1);
        nodeletRunner.progress = progress;
        await b.sync(state, emptyChangeSet(), true);
        fulls.push(performance.now() - t1);
        nodeletRunner.progress = undefined;
        inputAcked.nodelet.push(progress.at);
      };
      const legs = [runFloor, runNodelet, runChunkedFloor];
      if (running) {
        const node = await freshNs();
        // Its standby shell moves to this repeat's namespace (the bench's doing: a proxy's namespace never changes).
        await running.stop();
        runner.netns = node;
        await running.prepare();
        legs.push(async () => {
          const t1 = performance.now();
          await running.sync(state, emptyChangeSet(), true);
          runningFulls.push(performance.now() - t1);
        });
      }
      if (driver.sequential) {
        const sequential = driver.sequential;
        const node = await freshNs();
        legs.push(async () => {
          const t1 = performance.now();
          await sequential(node, state);
          sequentials.push(performance.now() - t1);
        });
      }
      // Each repeat rotates which goes first.
      for (let k = 0; k < legs.length; k++) await legs[(r + k) % legs.length]!();
    }
    const renderMs = median(renders);
    const floorMs = median(floors);
    const nodeletFullMs = median(fulls);
    const sequentialMs = sequentials.length > 0 ? median(sequentials) : undefined;
    process.stdout.write(
      `  ${name} ${n}: render ${renderMs.toFixed(0)} ms, kernel apply ${floorMs.toFixed(0)} ms, nodelet full sync ${nodeletFullMs.toFixed(0)} ms (floor fed in chunks ${median(chunkedFloors).toFixed(0)} ms)${sequentialMs !== undefined ? ` (not streamed ${sequentialMs.toFixed(0)} ms)` : ''}`,
    );

    // (c) one endpoint replaced, `changes` times: nodelet's sync (the tracker update and commit
    // included) vs the hand-made minimal transaction, alternating which runs first.
    const nodeletRuns: number[] = [];
    const handRuns: number[] = [];
    let nodeletBytes = 0;
    let handBytes = 0;
    let partial = true;
    // k = -1: one change first, on both sides and not counted, so that nodelet's partial sync runs
    // warm (the JIT has seen only full syncs so far; a running proxy's partial syncs are its hot path).
    for (let k = -1; k < changes; k++) {
      const i = Math.floor(((k + 1) * n) / (changes + 1));
      // The state map is live, but each commit replaces a port's state object: `before` stays as it was.
      const before = state.servicePorts.get(`bench/svc-${i}:http`)!;
      const ips = before.endpoints.map((x) => x.ip);
      ips[(k + 1) % e] = num2ip(POD_BASE + n * e + 1000 + k + 1);
      const t2 = performance.now();
      tracker.upsertEndpointSlice(slice(i, ips));
      const c = tracker.commit();
      const commitMs = performance.now() - t2;
      const after = c.state.servicePorts.get(`bench/svc-${i}:http`)!;
      const hand = driver.handMade(before, after, n * e > 1000);
      handBytes = hand.length;
      const handFloor = floorStandby(floorNs!.node, driver.floorCommand);
      standbys.push(handFloor);
      const b = backend!;
      const runNodelet = async () => {
        const t3 = performance.now();
        const result = await b.sync(c.state, c.changes, false);
        nodeletRuns.push(performance.now() - t3 + commitMs);
        partial &&= !result.full;
        nodeletBytes = result.bytes ?? 0;
      };
      const runHand = async () => handRuns.push(await handFloor.run(Buffer.from(hand)));
      settled.push(await settle()); // as for (a) and (b): the kernel done with the previous transactions
      if (k % 2 === 0) {
        await runNodelet();
        await runHand();
      } else {
        await runHand();
        await runNodelet();
      }
    }
    nodeletRuns.shift(); // the warm-up change
    handRuns.shift();
    const nodeletMs = median(nodeletRuns);
    const handMadeMs = median(handRuns);
    process.stdout.write(
      `, change ${nodeletMs.toFixed(0)} vs ${handMadeMs.toFixed(0)} ms (load ${loadavg()[0]!.toFixed(1)})\n`,
    );

    // (a) for a running proxy, last and on its own (its renderer and second state would otherwise be
    // in the heap through every leg above): as many renders as repeats, each on an idle machine and
    // each paired with a kernel apply of the same text just after it (the CPUs' speed drifts within
    // minutes: a ratio to the floor measured at the start of the row would carry that drift).
    if (driver.runningRender) {
      const twin = new ChangeTracker(defaultNodeContext('bench-node'), quiet);
      for (const s of services) twin.upsertService(s);
      for (const s of slices) twin.upsertEndpointSlice(s);
      const runningRender = driver.runningRender(state, twin.commit().state);
      for (let r = 0; r < repeats; r++) {
        const floor = floorStandby(await freshNs(), driver.floorCommand);
        standbys.push(floor);
        placement.benchOnKernelCpu();
        settled.push(await settle());
        const t0 = performance.now();
        runningRender();
        runningRenders.push(performance.now() - t0);
        placement.benchBesideKernel();
        runningRenderFloors.push(await floor.run(text));
      }
      process.stdout.write(`    a running proxy's render: ${median(runningRenders).toFixed(0)} ms\n`);
    }
    let sameRulesAfterChanges: boolean | undefined;
    if (checkSame) {
      const [a, b] = await Promise.all([
        exec(floorNs!.node, driver.dump[0], driver.dump[1]),
        exec(nodeletNs!.node, driver.dump[0], driver.dump[1]),
      ]);
      sameRulesAfterChanges = normalize(a.out) === normalize(b.out);
    }
    return {
      backend: name,
      services: n,
      endpoints: e,
      rules: { bytes: Buffer.byteLength(text), lines: text.toString().split('\n').length - 1 },
      renderMs: r2(renderMs),
      ...(runningRenders.length > 0
        ? {
            runningRenderMs: r2(median(runningRenders)),
            runningRenderRatio: Math.round(pairedRatio(runningRenders, runningRenderFloors) * 1000) / 1000,
          }
        : {}),
      repeats: {
        render: renders.map(r2),
        renderFaults,
        ...(runningRenders.length > 0
          ? { runningRender: runningRenders.map(r2), runningRenderFloor: runningRenderFloors.map(r2) }
          : {}),
        floorApply: floors.map(r2),
        nodeletFull: fulls.map(r2),
        ...(runningFulls.length > 0 ? { runningFull: runningFulls.map(r2) } : {}),
        ...(sequentials.length > 0 ? { notStreamed: sequentials.map(r2) } : {}),
        chunkedFloor: chunkedFloors.map(r2),
        inputAckedMs: inputAcked,
        settledMs: settled.map(Math.round),
      },
      floorApplyMs: r2(floorMs),
      renderRatio: Math.round(pairedRatio(renders, floors) * 1000) / 1000,
      nodeletFullMs: r2(nodeletFullMs),
      fullRatio: r2(pairedRatio(fulls, floors)),
      chunkedFloorRatio: Math.round(pairedRatio(chunkedFloors, floors) * 1000) / 1000,
      ...(runningFulls.length > 0
        ? { runningFullMs: r2(median(runningFulls)), runningFullRatio: r2(pairedRatio(runningFulls, floors)) }
        : {}),
      ...(sequentialMs !== undefined
        ? { notStreamedMs: r2(sequentialMs), notStreamedRatio: r2(pairedRatio(sequentials, floors)) }
        : {}),
      change: {
        nodeletMs: r2(nodeletMs),
        handMadeMs: r2(handMadeMs),
        ratio: r2(pairedRatio(nodeletRuns, handRuns)),
        nodeletBytes,
        handMadeBytes: handBytes,
        partial,
        runs: { nodelet: nodeletRuns.map(r2), handMade: handRuns.map(r2) },
      },
      ...(sameRulesAfterChanges !== undefined ? { sameRulesAfterChanges } : {}),
      load: loadavg().map(r2),
    };
  } finally {
    for (const b of [...prepared, ...(running ? [running] : [])]) await b.stop();
    for (const f of standbys) await f.close();
    for (const ns of namespaces) await ns.destroy();
    placement.release();
  }
}

/** iperf3's block size, each side: large reads and writes, as a bulk transfer makes them. */
const IPERF_BLOCK = '256K';

/** A free TCP port of 127.0.0.1 (the kernel picks it; closed again before iperf3 binds it). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether `iperf3 --version` runs (checked before any part of the bench, not after the kernel's). */
function iperfInstalled(): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn('iperf3', ['--version'], { stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('close', (code) => resolve(code === 0));
  });
}

/** `iperf3 -s` on 127.0.0.1, in the foreground as a child of this process: the sink of every transfer. */
async function startIperfServer(): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = spawn('iperf3', ['-s', '--forceflush', '-B', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('error', (e) =>
      reject(
        new Error(`userspace bench: cannot run iperf3 (${e.message}); install it: apt-get install iperf3`),
      ),
    );
    child.once('exit', (code) => reject(new Error(`iperf3 -s -p ${port} exited with code ${code}`)));
    child.stdout!.on('data', (d) => {
      if (String(d).includes('Server listening')) resolve();
    });
  });
  return { child, port };
}

/** One `iperf3 -c` transfer of `mb` MiB to `port` (the sink itself or the proxy before it): MiB/s received. */
async function iperfTransfer(port: number, mb: number): Promise<number> {
  const args = ['-c', '127.0.0.1', '-p', String(port), '-n', `${mb}M`, '-l', IPERF_BLOCK, '-J'];
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn('iperf3', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0
        ? resolve(text)
        : reject(new Error(`iperf3 ${args.join(' ')} exited with code ${code}: ${text.slice(0, 500)}`)),
    );
  });
  // The receiver's rate: bytes that reached the sink over the receiver's time. The sender's
  // end-of-test message can overtake a few MiB still inside the proxy; the sink stops counting then.
  const { end } = JSON.parse(out) as {
    end: Record<'sum_sent' | 'sum_received', { bytes: number; seconds: number }>;
  };
  const received = end.sum_received;
  if (end.sum_sent.bytes < mb * 1024 * 1024 || received.bytes < 0.95 * end.sum_sent.bytes) {
    throw new Error(
      `iperf3 sent ${end.sum_sent.bytes} bytes and the sink got ${received.bytes}, for ${mb} MiB`,
    );
  }
  return received.bytes / 1024 / 1024 / received.seconds;
}

/** CPU time (user + system) a process has used so far, in ms (Linux, from /proc). */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100; // USER_HZ on Linux

/** Starts a Node child and resolves with it and the first line it prints. */
async function startChild(args: string[]): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d) => resolve(String(d).trim()));
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
  return { child, line };
}

interface UserspaceResult {
  directMiBps: number;
  proxiedMiBps: number;
  /** Median of the rounds' ratios: each pairs transfers run back to back, under the same load. */
  ratio: number;
  /** Ratio of each round (direct and proxied back to back). */
  roundRatios: number[];
  /** CPU the proxy process used per MiB carried, and the sink per MiB received (direct). */
  proxyCpuMsPerMiB: number;
  sinkCpuMsPerMiB: number;
  mib: number;
  rounds: number;
  /** Sender and sink of every transfer. */
  harness: string;
  load: number[];
}

/**
 * Bulk TCP through the userspace proxy ÷ a direct loopback connection. iperf3 is sender and sink
 * (-l 256K): its C loops read and write into fixed buffers, so on two CPUs the harness takes as little
 * as it can from the proxy, and the direct transfer is as fast as this machine makes it. Sink, proxy and
 * each transfer's sender are processes of their own; rounds alternate which of the two goes first.
 */
async function benchUserspace(mb: number, rounds: number): Promise<UserspaceResult> {
  const sink = await startIperfServer();
  const proxy = await startChild([join(here, 'proxy-userspace-child.js'), String(sink.port)]);
  const proxyPort = Number(proxy.line);
  try {
    await iperfTransfer(sink.port, mb); // warm-up
    await iperfTransfer(proxyPort, mb);
    const direct: number[] = [];
    const via: number[] = [];
    let proxyCpu = 0;
    let sinkCpu = 0;
    const runDirect = async () => {
      const s0 = await cpuMs(sink.child.pid!);
      direct.push(await iperfTransfer(sink.port, mb));
      sinkCpu += (await cpuMs(sink.child.pid!)) - s0;
    };
    const runProxied = async () => {
      const p0 = await cpuMs(proxy.child.pid!);
      via.push(await iperfTransfer(proxyPort, mb));
      proxyCpu += (await cpuMs(proxy.child.pid!)) - p0;
    };
    for (let i = 0; i < rounds; i++) {
      if (i % 2 === 0) {
        await runDirect();
        await runProxied();
      } else {
        await runProxied();
        await runDirect();
      }
    }
    const roundRatios = via.map((v, i) => v / direct[i]!);
    return {
      directMiBps: Math.round(median(direct)),
      proxiedMiBps: Math.round(median(via)),
      ratio: r2(median(roundRatios)),
      roundRatios: roundRatios.map(r2),
      proxyCpuMsPerMiB: r2(proxyCpu / (mb * rounds)),
      sinkCpuMsPerMiB: r2(sinkCpu / (mb * rounds)),
      mib: mb,
      rounds,
      harness: `iperf3 -l ${IPERF_BLOCK}`,
      load: loadavg().map(r2),
    };
  } finally {
    proxy.child.stdin!.end();
    sink.child.kill();
  }
}

/** A flag's value as a whole number ≥ 1; a clear error naming the flag otherwise. */
function positiveInt(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag} must be a whole number ≥ 1, not '${value}'`);
  return n;
}

async function main(): Promise<void> {
  placement = CpuPlacement.fromFlag(args['kernel-cpu']);
  const sizes = args.services.split(',').map((v) => positiveInt('services', v));
  const e = positiveInt('endpoints', args.endpoints);
  if (args.repeat !== undefined) positiveInt('repeat', args.repeat);
  const userspaceMb = positiveInt('userspace-mb', args['userspace-mb']);
  const userspaceRounds = positiveInt('userspace-rounds', args['userspace-rounds']);
  const backends = args.backends.split(',').filter(Boolean) as BackendName[];
  const unknown = backends.filter((b) => !BACKENDS.includes(b));
  if (unknown.length > 0) {
    throw new Error(`--backends: unknown ${unknown.join(', ')} (known: ${BACKENDS.join(', ')}; '' for none)`);
  }
  const userspaceMode = args.userspace;
  if (!['on', 'off', 'only'].includes(userspaceMode)) {
    throw new Error(`--userspace must be on, off or only, not ${userspaceMode}`);
  }
  if (userspaceMode !== 'off' && !(await iperfInstalled())) {
    throw new Error('--userspace on|only needs iperf3 (apt-get install iperf3); or pass --userspace off');
  }
  const kernelBackends = userspaceMode === 'only' ? [] : backends;
  if (kernelBackends.length > 0) {
    const support = await netnsSupport();
    if (!support.ok) throw new Error(`the proxy bench needs root and ip netns: ${support.reason}`);
  }
  const changes = positiveInt('changes', args.changes);
  const rows: Row[] = [];
  const skipped: string[] = [];
  const loadStart = loadavg();
  const spinStart = kernelBackends.length > 0 ? cpuSpeeds() : [];
  console.log(
    `proxy bench: ${sizes.join(', ')} services × ${e} endpoints; ${cpus().length} CPUs, kernel ${release()}, load ${loadStart.map((l) => l.toFixed(1)).join(' ')}`,
  );
  if (kernelBackends.length > 0) {
    console.log(
      `  kernel-side commands on CPU ${placement.kernelCpu ?? 'any (--kernel-cpu off)'}; one spin loop per CPU: ${spinStart.join(', ')} ms`,
    );
  }
  for (const name of kernelBackends) {
    for (const n of sizes) {
      if (name === 'iptables-nft' && n > 1000 && !args.slow) {
        skipped.push(
          `iptables-nft at ${n} services: one apply takes minutes here (5,000 ≈ 8 min); run with --slow`,
        );
        console.log(`  ${name} ${n}: skipped (minutes per apply on this machine; --slow to include)`);
        continue;
      }
      rows.push(await benchBackend(name, n, e, changes, n === Math.min(...sizes)));
    }
  }
  let userspace: UserspaceResult | undefined;
  if (userspaceMode !== 'off') {
    console.log('  userspace: bulk TCP throughput …');
    userspace = await benchUserspace(userspaceMb, userspaceRounds);
  }

  const table = [
    '| backend | services × endpoints | rules (bytes) | (a) render ms | kernel apply ms | (a) ratio | (a) running proxy | (b) nodelet full ms | (b) ratio | (b) running proxy | (b) not streamed | (c) nodelet change ms | hand-made ms | (c) ratio |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.backend} | ${r.services} × ${r.endpoints} | ${r.rules.bytes.toLocaleString('en')} | ${r.renderMs} | ${r.floorApplyMs} | ${r.renderRatio} | ${r.runningRenderRatio ?? '—'} | ${r.nodeletFullMs} | ${r.fullRatio} | ${r.runningFullRatio ?? '—'} | ${r.notStreamedRatio ?? '—'} | ${r.change.nodeletMs} | ${r.change.handMadeMs} | ${r.change.ratio} |`,
    ),
  ].join('\n');
  if (rows.length > 0) console.log('\n' + table);
  if (userspace) {
    console.log(
      `\nuserspace: direct ${userspace.directMiBps} MiB/s, through the proxy ${userspace.proxiedMiBps} MiB/s (medians), ratio ${userspace.ratio} (median of the rounds ${userspace.roundRatios.join(', ')}; ${userspace.mib} MiB per run, ${userspace.harness}); proxy CPU ${userspace.proxyCpuMsPerMiB} ms/MiB, sink ${userspace.sinkCpuMsPerMiB} ms/MiB; load ${userspace.load.join(' ')}`,
    );
  }
  for (const s of skipped) console.log(`skipped: ${s}`);
  await mkdir(dirname(outFile), { recursive: true });
  await writeFile(
    outFile,
    JSON.stringify(
      {
        date: new Date().toISOString(),
        cpus: cpus().length,
        kernel: release(),
        loadavg: { start: loadStart, end: loadavg() },
        // Where the kernel-side commands ran, and the same spin loop's ms on each CPU at start and end.
        kernelCpu: placement.kernelCpu ?? null,
        cpuSpinMs: kernelBackends.length > 0 ? { start: spinStart, end: cpuSpeeds() } : undefined,
        rows,
        skipped,
        userspace,
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`wrote ${outFile}`);
}

// A bad flag is one line naming it; anything else keeps its stack.
await main().catch((err: Error) => {
  console.error(err.message.startsWith('--') ? `proxy bench: ${err.message}` : err);
  process.exit(2);
});

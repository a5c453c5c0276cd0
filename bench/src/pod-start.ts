/**
 * Pod start overhead on real containerd: how long `nodelet kubelet` takes from N static pod manifests
 * written to all N containers Running, against a floor measured in the same run — the same
 * RunPodSandbox + CreateContainer + StartContainer calls made straight to containerd, N pods in flight
 * at once — and the kubelet's resident memory with 0, 10 and 30 running pods.
 *
 *   npx tsc -b bench packages/cli && npm run bench:pod-start --workspace @nodelet/bench -- [--pods 1,10,30] [--repeat 3] [--skip-calls]
 *
 * Needs root and the containerd of scripts/containerd/setup.sh (socket NODELET_CONTAINERD_SOCKET, default
 * /run/containerd/containerd.sock) with `nodelet.test/busybox:1` imported.
 *
 *   nodelet  one `nodelet kubelet --runtime containerd` child process for the whole run (the CLI, as a
 *            node operator starts it), on a temporary manifest directory, root dir and pod log dir. t0 is
 *            just before the N manifest files are written (new pod names in every run: pods the node
 *            has not run, not the UIDs it removed a moment ago); the end is when the kubelet's status
 *            of the last of the N pods says Running with its container running — seen on the
 *            kubelet's stderr, where at `--v 2` it logs every pod status change as it makes it (no
 *            poll's lag, no poll's CPU), and checked once more on its read-only `/pods` afterwards.
 *            Then the manifests are removed and the run waits until nodelet and containerd hold none
 *            of them.
 *   floor    for each pod, RunPodSandbox + CreateContainer + StartContainer through @nodelet/cri's gRPC
 *            client, with the requests the kubelet makes (its own KubeRuntime.sandboxConfig; the same
 *            image, command, labels, annotations, log path and resources), built before t0; all N pods
 *            at once (Promise.all), as the kubelet starts every pod's worker at once. Then every sandbox
 *            is stopped and removed.
 *   ratio    nodelet / floor, per run (each nodelet run and its floor run back to back, alternating
 *            which goes first); the row holds the medians of --repeat runs (3 × --repeat for N = 1).
 *   CPU      the kubelet process's CPU time (/proc/<pid>/stat) from t0 until all were Running, and this
 *            process's CPU time for the floor's calls: on 2 cores, CPU the kubelet burns is CPU
 *            containerd does not get.
 *   RSS      VmRSS of the kubelet process (/proc/<pid>/status), sampled every 250 ms over 3 s — idle
 *            before any pod, and with N pods Running (from 2 s after the last one was seen Running, so
 *            the start burst's garbage has had a collection): the median of the samples (and the
 *            highest, as `rssPeakMiB`); with --repeat, the highest median of the runs.
 *
 *   calls    CRI calls per pod, which do not depend on the machine's load: after the timed runs, a second
 *            kubelet talks to containerd through a counting HTTP/2 pass-through and starts N pods once
 *            more; the calls from t0 until all Running are counted by method, those that read the
 *            whole runtime (PLEG relist, housekeeping: a List* with an empty request; Version, Status)
 *            apart as background. The counter also times the calls, which splits the run: t0 to the
 *            first call (manifests read and parsed, workers started), the last StartContainer to all
 *            Running seen, and at N = 1 the run minus containerd's own time for the floor's three calls —
 *            what the kubelet adds, in ms, which moves far less with the load than the ratio. N = 1 is
 *            counted as often as it is timed (medians), larger N once. --skip-calls leaves this out.
 *
 * The floor's sandboxes carry another node name, so the kubelet's housekeeping leaves them alone.
 * Prints a table (with the load average over the runs) and writes bench/results/pod-start.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import {
  connect as http2Connect,
  constants as http2Constants,
  createServer as createHttp2Server,
  type ClientHttp2Session,
  type Http2Server,
  type OutgoingHttpHeaders,
} from 'node:http2';
import { connect as netConnect } from 'node:net';
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
  criLinuxResources,
  hashContainer,
  ImagePuller,
  KubeRuntime,
  parseManifests,
  PodNetwork,
  VolumeManager,
} from '@nodelet/kubelet';
import {
  freeLoopbackPort as freePort,
  pollUntil as until,
  processCpuMs as cpuMsOf,
  processRssMiB as rssMiB,
} from './kubelet-process.js';

const IMAGE = 'nodelet.test/busybox:1';
const NODE = 'bench-pod-start';
const FLOOR_NODE = 'bench-pod-start-floor';
const COUNT_NODE = 'bench-pod-start-counted';
const GOALS = { ratio: 1.1, rssMiBAt30: 120 };

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '1,10,30' },
    repeat: { type: 'string', default: '3' },
    'timeout-s': { type: 'string', default: '180' },
    'skip-calls': { type: 'boolean', default: false },
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
/**
 * Runs per pod count: --repeat, and three times as many for one pod. A start of one pod takes half a
 * second, and containerd's own time for it moves by a third between two runs on a busy machine (the
 * floor: 430–720 ms in one run of this bench), far more than the kubelet adds; more pairs make the
 * median hold still, at little cost.
 */
const runsFor = (n: number) => (n === 1 ? 3 * repeat : repeat);
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

/** Pod i of a run: names (so static-pod UIDs) are new in every run, as N pods a node has not run. */
function manifest(i: number, run = 0): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: start-${run}-${i}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`;
}

/** One kept-alive connection for the reads of /pods. */
const pollAgent = new Agent({ keepAlive: true, maxSockets: 1 });

function getPods(port: number): Promise<Pod[]> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/pods', agent: pollAgent, timeout: 5000 },
      (res) => {
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
      },
    );
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

/** The kubelet's debug line for a status change (`--v 2`): `... Pod status updated pod="ns/name" ... running="k/n"`. */
const STATUS_LINE = /\] Pod status updated pod="[^"/]*\/([^"]+)" .*phase="(\w+)" running="(\d+)\/(\d+)"/;

class Nodelet {
  stderr = '';
  private partial = '';
  /** Pods whose latest status has every container running, by name (from the kubelet's log). */
  private readonly runningPods = new Set<string>();
  private waiting: { names: string[]; done: () => void } | undefined;

  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly manifests: string,
    readonly node: string,
  ) {
    child.stderr!.setEncoding('utf8').on('data', (s: string) => this.onStderr(s));
  }

  /**
   * Follows the kubelet's status changes as it logs them: the moment a pod's status says Running is
   * seen when it happens, with none of a poll's lag and none of its CPU in the kubelet.
   */
  private onStderr(s: string): void {
    if (this.stderr.length < 1 << 20) this.stderr += s;
    const lines = (this.partial + s).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) {
      const m = STATUS_LINE.exec(line);
      if (!m) continue;
      const [, name, phase, running, total] = m;
      if (phase === 'Running' && running === total && Number(total) > 0) this.runningPods.add(name!);
      else this.runningPods.delete(name!);
    }
    if (this.waiting?.names.every((n) => this.runningPods.has(n))) this.waiting.done();
  }

  static async start(dir: string, runtimeEndpoint = endpoint, node = NODE): Promise<Nodelet> {
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
        runtimeEndpoint,
        '--pod-manifest-path',
        manifests,
        '--root-dir',
        join(dir, 'root'),
        '--read-only-port',
        String(port),
        '--port',
        '0',
        '--hostname-override',
        node,
        '--config',
        join(dir, 'nodelet.yaml'),
        // Debug level: the kubelet logs each pod status change, which is how the runs see the end.
        '--v',
        '2',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const k = new Nodelet(child, port, manifests, node);
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

  private runs = 0;
  /** When the last run's manifests were written (performance.now()). */
  lastT0 = 0;

  /**
   * Writes N manifests; resolves with ms until the kubelet's status of every one says Running with its
   * container running (its log line), checked once more on /pods afterwards.
   */
  async run(n: number): Promise<number> {
    const run = ++this.runs;
    const names = Array.from({ length: n }, (_, i) => `start-${run}-${i}-${this.node}`);
    let end = 0;
    const allRunningSeen = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = undefined;
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${n} pods Running:\n${this.stderr.slice(-2000)}`,
          ),
        );
      }, timeoutMs);
      this.waiting = {
        names,
        done: () => {
          end = performance.now();
          clearTimeout(timer);
          this.waiting = undefined;
          resolve();
        },
      };
    });
    const t0 = (this.lastT0 = performance.now());
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        writeFile(join(this.manifests, `start-${run}-${i}.yaml`), manifest(i, run)),
      ),
    );
    await allRunningSeen;
    const pods = await getPods(this.port);
    if (!allRunning(pods, n)) {
      throw new Error(
        `the kubelet logged ${n} pods Running but /pods disagrees: ${JSON.stringify(pods.map((p) => p.status))}`,
      );
    }
    return end - t0;
  }

  async clean(n: number, cri: CriClient): Promise<void> {
    const { items: sandboxes } = await cri.runtime.listPodSandbox({
      filter: { id: '', labelSelector: { 'nodelet.dev/node': this.node } },
    });
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        rm(join(this.manifests, `start-${this.runs}-${i}.yaml`), { force: true }),
      ),
    );
    await until(
      'nodelet to remove the pods',
      async () => {
        const pods = await getPods(this.port);
        const { items } = await cri.runtime.listPodSandbox({
          filter: { id: '', labelSelector: { 'nodelet.dev/node': this.node } },
        });
        return pods.length === 0 && items.length === 0 ? true : undefined;
      },
      timeoutMs,
      200,
    );
    await shimsGone(sandboxes.map((sb) => sb.id));
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
// CRI calls per pod
// ------------------------------------------------------------------------------------------------

/**
 * A gRPC (HTTP/2) pass-through on a unix socket in front of containerd that counts the calls by method,
 * for a run of its own: a kubelet pointed at it makes the calls it always makes, and their number per pod
 * does not depend on how loaded the machine is (the timings do). Calls that read the whole runtime —
 * a List* with an empty request (PLEG's relist, housekeeping) and Version/Status — happen every second
 * whatever the pods do; they are counted apart as `background`.
 */
class CriCallCounter {
  private counts = new Map<string, number>();
  /** The calls for the pods (not background), with when they reached the counter and were answered. */
  private calls: { method: string; start: number; end: number }[] = [];
  private readonly upstream: ClientHttp2Session;

  private constructor(
    private readonly server: Http2Server,
    readonly endpoint: string,
    upstreamSocket: string,
  ) {
    this.upstream = http2Connect('http://localhost', { createConnection: () => netConnect(upstreamSocket) });
    this.upstream.on('error', () => undefined); // each stream reports its own failure
    server.on('stream', (stream, headers) => {
      const method = String(headers[':path'] ?? '').replace(/^\/runtime\.v1\.\w+\//, '');
      const start = performance.now();
      let background = false;
      const forwarded: OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(headers)) {
        if (!k.startsWith(':') || k === ':path' || k === ':method') forwarded[k] = v;
      }
      const req = this.upstream.request(forwarded);
      let first = true;
      stream.on('data', (chunk: Buffer) => {
        // The first 5 bytes of a gRPC message: compressed flag, then the message length.
        if (first)
          background = this.count(
            method,
            /^List/.test(method) && chunk.length >= 5 && chunk.readUInt32BE(1) === 0,
          );
        first = false;
        req.write(chunk);
      });
      stream.on('end', () => {
        if (first) background = this.count(method, false);
        req.end();
      });
      let trailers: OutgoingHttpHeaders = {};
      req.on('response', (h, flags) => {
        const out: OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(h)) if (!k.startsWith(':') || k === ':status') out[k] = v;
        if (flags & http2Constants.NGHTTP2_FLAG_END_STREAM) stream.respond(out, { endStream: true });
        else stream.respond(out, { waitForTrailers: true });
      });
      req.on('trailers', (h) => (trailers = h));
      stream.on('wantTrailers', () => stream.sendTrailers(trailers));
      req.on('data', (chunk: Buffer) => stream.write(chunk));
      req.on('end', () => {
        stream.end();
        if (!background) this.calls.push({ method, start, end: performance.now() });
      });
      req.on('error', () => stream.close(http2Constants.NGHTTP2_INTERNAL_ERROR));
      stream.on('error', () => req.close(http2Constants.NGHTTP2_CANCEL));
    });
  }

  static async start(path: string, upstreamSocket: string): Promise<CriCallCounter> {
    const server = createHttp2Server();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, resolve);
    });
    return new CriCallCounter(server, `unix://${path}`, upstreamSocket);
  }

  /** Counts a call; true when it is background. */
  private count(method: string, listsAll: boolean): boolean {
    const background = listsAll || /^(Version|Status|ImageFsInfo)$/.test(method);
    const key = background ? `background ${method}` : method;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    return background;
  }

  peek(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }

  /**
   * The calls counted since the last take, by method (background ones prefixed `background `), and
   * the timings of those for the pods.
   */
  take(): { byMethod: Record<string, number>; calls: { method: string; start: number; end: number }[] } {
    const byMethod = Object.fromEntries([...this.counts].sort(([a], [b]) => a.localeCompare(b)));
    const calls = this.calls;
    this.counts = new Map();
    this.calls = [];
    return { byMethod, calls };
  }

  async close(): Promise<void> {
    this.upstream.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

interface CallCounts {
  pods: number;
  /** Calls for the pods (not background), divided by the number of pods. */
  perPod: number;
  /** Calls from t0 until all pods were Running, by method. */
  byMethod: Record<string, number>;
  /** t0 until all Running, in this run through the counter. */
  ms: number;
  /** t0 until the first call for the pods reached containerd (manifests read, parsed, pods dispatched). */
  firstCallMs: number;
  /** The last StartContainer answered until the kubelet's status said all Running (status read back, set). */
  afterLastStartMs: number;
  /**
   * N = 1: the run minus containerd's own time for the three calls the floor makes (RunPodSandbox,
   * CreateContainer, StartContainer as the counter saw them): what the kubelet adds, in ms, much less
   * sensitive to the machine's load than the ratio.
   */
  kubeletMs?: number;
}

/** One untimed run per pod count through the counter, with a kubelet of its own. */
async function countCalls(dir: string, cri: CriClient): Promise<CallCounts[]> {
  const counter = await CriCallCounter.start(join(dir, 'counter.sock'), socket);
  await mkdir(join(dir, 'counted'));
  const k = await Nodelet.start(join(dir, 'counted'), counter.endpoint, COUNT_NODE);
  const out: CallCounts[] = [];
  try {
    // As in the timed runs (which sample idle memory first), PLEG has relisted before the pods come.
    await until(
      'the counted kubelet to relist',
      async () => ((counter.peek()['background ListContainers'] ?? 0) >= 2 ? true : undefined),
      30_000,
      50,
    );
    for (const n of sizes) {
      // N = 1 is cheap and its timings small: repeated like the timed runs, the row holds the medians.
      const rounds: CallCounts[] = [];
      for (let r = 0; r < (n === 1 ? runsFor(n) : 1); r++) {
        counter.take();
        const ms = await k.run(n);
        const t0 = k.lastT0;
        const { byMethod, calls } = counter.take();
        const forPods = Object.entries(byMethod)
          .filter(([m]) => !m.startsWith('background'))
          .reduce((sum, [, c]) => sum + c, 0);
        const starts = calls.filter((c) => c.method === 'StartContainer');
        const floorCalls = calls.filter((c) =>
          /^(RunPodSandbox|CreateContainer|StartContainer)$/.test(c.method),
        );
        rounds.push({
          pods: n,
          perPod: forPods / n,
          byMethod,
          ms,
          firstCallMs: Math.min(...calls.map((c) => c.start)) - t0,
          afterLastStartMs: t0 + ms - Math.max(...starts.map((c) => c.end)),
          ...(n === 1 ? { kubeletMs: ms - floorCalls.reduce((sum, c) => sum + c.end - c.start, 0) } : {}),
        });
        await k.clean(n, cri);
      }
      const mid = <K extends keyof CallCounts>(key: K) => median(rounds.map((c) => c[key] as number));
      out.push({
        ...rounds[rounds.length - 1]!,
        ms: mid('ms'),
        firstCallMs: mid('firstCallMs'),
        afterLastStartMs: mid('afterLastStartMs'),
        ...(n === 1 ? { kubeletMs: mid('kubeletMs') } : {}),
      });
    }
  } finally {
    await k.stop();
    await counter.close();
  }
  return out;
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
      network: new PodNetwork({}, { rootDir: tmpdir(), nodeIPs: [], logger }),
    },
  );
  cri.close();
  const out: FloorRequest[] = [];
  for (let i = 0; i < n; i++) {
    const file = `/floor/${round}/start-${i}.yaml`;
    const { pods } = parseManifests(manifest(i, round), file, {
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
          resources: criLinuxResources(res),
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
  await shimsGone(items.map((sb) => sb.id));
}

/**
 * Waits until the containerd shims of these (removed) sandboxes have exited:
 * a shim goes on tearing its pod down after RemovePodSandbox returns, and a run that starts meanwhile
 * shares the CPU with it. Every run — floor or nodelet — starts after the previous one's pods are gone
 * this far, so neither inherits the other's teardown.
 */
async function shimsGone(sandboxIds: string[]): Promise<void> {
  if (sandboxIds.length === 0) return;
  const ids = new Set(sandboxIds);
  await until(
    `the containerd shims of ${ids.size} removed sandbox(es) to exit`,
    async () => {
      for (const pid of await readdir('/proc').catch(() => [] as string[])) {
        if (!/^\d+$/.test(pid)) continue;
        const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
        if (!cmdline.includes('containerd-shim')) continue;
        const args = cmdline.split('\0');
        const id = args[args.indexOf('-id') + 1];
        if (id && ids.has(id)) return undefined;
      }
      return true;
    },
    30_000,
    50,
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
let calls: CallCounts[] = [];
let rss0 = { median: 0, peak: 0 };
const load: number[] = [loadavg()[0]!];
try {
  rss0 = await sampleRss(k.child.pid!);
  let round = 0;
  for (const n of sizes) {
    const perRun: Row['perRun'] = [];
    let rss = { median: 0, peak: 0 };
    for (let r = 0; r < runsFor(n); r++) {
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
      load.push(loadavg()[0]!);
      process.stderr.write(
        `  N=${n} run ${r + 1}/${runsFor(n)}: floor ${floorMs.toFixed(0)} ms, nodelet ${nodeletMs.toFixed(0)} ms, ratio ${(nodeletMs / floorMs).toFixed(2)} (load ${loadavg()[0]!.toFixed(1)})\n`,
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
  await k.stop();
  // Counted in a run of their own (through a proxy that would slow the timed runs).
  if (!args['skip-calls']) calls = await countCalls(dir, cri);
} finally {
  await k.stop();
  pollAgent.destroy();
  await cleanFloor(cri).catch(() => undefined);
  cri.close();
  await rm(dir, { recursive: true, force: true });
}

const fmt = (x: number, d = 0) => x.toFixed(d);
console.log(
  `\npod start on containerd ${version.runtimeVersion} (load average ${fmt(Math.min(...load), 1)}–${fmt(Math.max(...load), 1)}), medians of ${repeat} runs (${runsFor(1)} for 1 pod)\n`,
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
if (calls.length > 0) {
  console.log(
    '\nCRI calls the kubelet made from t0 until all Running (a run of its own, through a counter)\n',
  );
  console.log(
    'pods     ms  first call ms  after last start ms  kubelet ms (N = 1: the run minus the 3 floor calls)',
  );
  for (const c of calls) {
    console.log(
      `${String(c.pods).padStart(4)}  ${fmt(c.ms).padStart(5)}  ${fmt(c.firstCallMs, 1).padStart(13)}  ${fmt(c.afterLastStartMs, 1).padStart(19)}  ${c.kubeletMs === undefined ? '-' : fmt(c.kubeletMs, 1)}`,
    );
  }
  console.log('\npods  per pod  for the pods, by method                                       background');
  for (const c of calls) {
    const entries = Object.entries(c.byMethod);
    const forPods = entries.filter(([m]) => !m.startsWith('background')).map(([m, n]) => `${m} ${n}`);
    const background = entries
      .filter(([m]) => m.startsWith('background'))
      .map(([m, n]) => `${m.replace('background ', '')} ${n}`);
    console.log(
      `${String(c.pods).padStart(4)}  ${fmt(c.perPod, 1).padStart(7)}  ${forPods.join(', ').padEnd(60)}  ${background.join(', ')}`,
    );
  }
}
const result = {
  date: new Date().toISOString(),
  runtime: `${version.runtimeName} ${version.runtimeVersion}`,
  loadavg1: loadavg()[0],
  loadavg1Range: [Math.min(...load), Math.max(...load)],
  repeat,
  goals: GOALS,
  rssMiBIdle: rss0.median,
  rssPeakMiBIdle: rss0.peak,
  rows,
  criCalls: calls,
};
await mkdir(dirname(outFile), { recursive: true });
await writeFile(outFile, JSON.stringify(result, null, 2) + '\n');
console.log(`\nwrote ${outFile}`);

/**
 * Simulated nodes: N kubelets on the fake runtime, in this process, joined to an embedded control plane
 * (also in this process) through @kubernetes/client-node over HTTPS, as `nodelet up --nodes N` runs
 * them. Against a floor measured in the same run.
 *
 *   npm run bench:nodes --workspace @nodelet/bench -- [--nodes 100] [--pods 10000] [--concurrency 32]
 *
 * Per run:
 *
 *   floor   a second control plane (controllers off, no nodes): the same pods POSTed over HTTPS
 *           (keep-alive, `--concurrency` in flight, the admin's client certificate): creates/s — what
 *           the API server alone sustains here.
 *   nodes   the control plane with its scheduler, and `--nodes` kubelets (fake runtime, images present,
 *           capacity 32 CPU / 64 GiB / 110 pods each), each with its own API client (50 QPS, burst 100),
 *           node lease, status, events; the time until every node is Ready; then the pods are POSTed the
 *           same way and a watch counts them Running (as the API reports them): pods/s from the first
 *           create to the last Running, p50/p99 of create → Running, and the process RSS and heap at the
 *           end (control plane and every node together).
 *   ratio   floor creates/s ÷ pods Running/s: what running a pod costs over storing it.
 *
 * Prints a table and writes bench/results/nodes.json.
 */
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { ControlPlane } from '@nodelet/controlplane';
import { createLogger, EventBus, type Logger, RealClock } from '@nodelet/kernel';
import { Kubelet } from '@nodelet/kubelet';
import { FakeRuntime } from '@nodelet/runtime-fake';

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const image = 'registry.local/bench/app:1.0';

function podBody(i: number) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `sim-${String(i).padStart(6, '0')}`, labels: { app: 'sim' } },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'app',
          image,
          imagePullPolicy: 'IfNotPresent',
          resources: { requests: { cpu: '10m', memory: '16Mi' } },
        },
      ],
    },
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface Credentials {
  url: string;
  ca: string;
  cert: string;
  key: string;
}

async function credentials(cp: ControlPlane): Promise<Credentials> {
  const pki = join(cp.dataDir, 'pki');
  const [ca, cert, key] = await Promise.all(
    ['ca.crt', 'admin.crt', 'admin.key'].map((f) => readFile(join(pki, f), 'utf8')),
  );
  return { url: cp.url, ca: ca!, cert: cert!, key: key! };
}

/** POSTs `count` pods with `concurrency` in flight on keep-alive connections; returns per-create start times. */
async function createPods(c: Credentials, count: number, concurrency: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca: c.ca, cert: c.cert, key: c.key });
  const started: number[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const body = JSON.stringify(podBody(i));
      started[i] = performance.now();
      await new Promise<void>((resolve, reject) => {
        const r = request(
          `${c.url}/api/v1/namespaces/default/pods`,
          { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
          (res) => {
            res.resume();
            res.on('end', () =>
              res.statusCode === 201 ? resolve() : reject(new Error(`create ${i}: HTTP ${res.statusCode}`)),
            );
          },
        );
        r.on('error', reject);
        r.end(body);
      });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
  return started;
}

async function floor(pods: number, concurrency: number, logger: Logger): Promise<number> {
  const dataDir = await mkdtemp(join(tmpdir(), 'nodelet-bench-floor-'));
  const cp = new ControlPlane({
    dataDir,
    clock: new RealClock(),
    logger: logger.child('floor'),
    port: 0,
    controllers: { scheduler: false, endpointSlices: false },
  });
  await cp.start();
  try {
    const c = await credentials(cp);
    const t0 = performance.now();
    await createPods(c, pods, concurrency);
    return pods / ((performance.now() - t0) / 1000);
  } finally {
    await cp.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      nodes: { type: 'string', default: '100' },
      pods: { type: 'string', default: '10000' },
      concurrency: { type: 'string', default: '32' },
    },
  });
  const nodeCount = Number(values.nodes);
  const podCount = Number(values.pods);
  const concurrency = Number(values.concurrency);
  const logger = createLogger({ level: 'warn' });
  const clock = new RealClock();

  process.stderr.write(`floor: ${podCount} creates on a bare control plane…\n`);
  const floorRate = await floor(podCount, concurrency, logger);

  const dataDir = await mkdtemp(join(tmpdir(), 'nodelet-bench-nodes-'));
  const cp = new ControlPlane({
    dataDir,
    clock,
    logger: logger.child('cp'),
    port: 0,
    controllers: { endpointSlices: false },
  });
  await cp.start();
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const core = kc.makeApiClient(k8s.CoreV1Api);

  process.stderr.write(`starting ${nodeCount} simulated nodes…\n`);
  const t0 = performance.now();
  const kubelets: Kubelet[] = [];
  const runtimes: FakeRuntime[] = [];
  for (let n = 0; n < nodeCount; n++) {
    const name = `sim-node-${String(n).padStart(3, '0')}`;
    const nodeLogger = logger.child(name);
    const runtime = new FakeRuntime({
      clock,
      logger: nodeLogger,
      // Instant pulls (the fake's default is 100 ms): "images present", as in earlier runs.
      config: {
        pullLatencyMs: 0,
        preloadedImages: [image],
        podCIDR: `10.${100 + Math.floor(n / 256)}.${n % 256}.0/24`,
      },
    });
    const rootDir = join(dataDir, 'nodes', name);
    await mkdir(rootDir, { recursive: true });
    const kubelet = new Kubelet(
      { runtime, images: runtime, bus: new EventBus(clock, nodeLogger), clock, logger: nodeLogger },
      {
        nodeName: name,
        hostIP: `192.168.${Math.floor(n / 250)}.${(n % 250) + 1}`,
        rootDir: join(rootDir, 'root'),
        podLogsDir: join(rootDir, 'logs'),
        apiServer: {
          kubeconfig: await cp.nodeKubeconfig(name),
          capacity: { cpu: '32', memory: '64Gi', pods: '110' },
        },
      },
    );
    await kubelet.start();
    kubelets.push(kubelet);
    runtimes.push(runtime);
  }
  for (;;) {
    const list = await core.listNode();
    const ready = list.items.filter((n) =>
      n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    if (ready.length === nodeCount) break;
    if (performance.now() - t0 > 300_000)
      throw new Error(`only ${ready.length} of ${nodeCount} nodes Ready after 5 min`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const readyMs = performance.now() - t0;
  process.stderr.write(
    `${nodeCount} nodes Ready in ${(readyMs / 1000).toFixed(1)} s; creating ${podCount} pods…\n`,
  );

  // Count pods Running as the API reports them.
  const runningAt = new Map<string, number>();
  let resolveAll!: () => void;
  const allRunning = new Promise<void>((r) => (resolveAll = r));
  const watch = await new k8s.Watch(kc).watch(
    '/api/v1/namespaces/default/pods',
    { labelSelector: 'app=sim' },
    (_type, pod: k8s.V1Pod) => {
      if (pod.status?.phase === 'Running' && !runningAt.has(pod.metadata!.name!)) {
        runningAt.set(pod.metadata!.name!, performance.now());
        if (runningAt.size === podCount) resolveAll();
      }
    },
    (err) => {
      if (err) process.stderr.write(`watch ended: ${String(err)}\n`);
    },
  );
  const c = await credentials(cp);
  const start = performance.now();
  const created = await createPods(c, podCount, concurrency);
  const createdMs = performance.now() - start;
  const timeout = setTimeout(() => resolveAll(), 600_000);
  await allRunning;
  clearTimeout(timeout);
  const end = performance.now();
  watch.abort();
  if (runningAt.size < podCount)
    throw new Error(`only ${runningAt.size} of ${podCount} pods Running after 10 min`);

  const latencies = created
    .map((t, i) => runningAt.get(`sim-${String(i).padStart(6, '0')}`)! - t)
    .sort((a, b) => a - b);
  global.gc?.();
  const memory = process.memoryUsage();
  const perNode = new Map<number, number>();
  for (const r of runtimes) perNode.set(r.counts().running, (perNode.get(r.counts().running) ?? 0) + 1);
  const result = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      loadavg: loadavg().map((l) => Number(l.toFixed(2))),
      node: process.version,
    },
    nodes: nodeCount,
    pods: podCount,
    concurrency,
    floor: { createsPerSec: Math.round(floorRate) },
    nodesReadyMs: Math.round(readyMs),
    createsPerSec: Math.round(podCount / (createdMs / 1000)),
    podsRunningPerSec: Math.round(podCount / ((end - start) / 1000)),
    createToRunningMs: {
      p50: Math.round(percentile(latencies, 50)),
      p99: Math.round(percentile(latencies, 99)),
    },
    allRunningMs: Math.round(end - start),
    ratio: Number((floorRate / (podCount / ((end - start) / 1000))).toFixed(2)),
    rssMiB: Math.round(memory.rss / 1048576),
    heapUsedMiB: Math.round(memory.heapUsed / 1048576),
    rssPerNodeMiB: Number((memory.rss / 1048576 / nodeCount).toFixed(1)),
    podsPerNode: Object.fromEntries([...perNode].sort((a, b) => a[0] - b[0])),
  };

  const rows: [string, string][] = [
    ['nodes / pods', `${nodeCount} / ${podCount}`],
    ['floor: API creates/s (no nodes)', String(result.floor.createsPerSec)],
    ['nodes Ready after', `${(readyMs / 1000).toFixed(1)} s`],
    ['API creates/s (with nodes)', String(result.createsPerSec)],
    ['pods Running/s', String(result.podsRunningPerSec)],
    ['create → Running p50 / p99', `${result.createToRunningMs.p50} / ${result.createToRunningMs.p99} ms`],
    ['ratio (floor ÷ Running/s)', String(result.ratio)],
    [
      'process RSS / heap',
      `${result.rssMiB} / ${result.heapUsedMiB} MiB (${result.rssPerNodeMiB} MiB per node)`,
    ],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
  await mkdir(join(benchDir, 'results'), { recursive: true });
  await writeFile(join(benchDir, 'results', 'nodes.json'), JSON.stringify(result, null, 2) + '\n');

  for (const k of kubelets) await k.stop();
  await cp.stop();
  await rm(dataDir, { recursive: true, force: true });
}

await main();

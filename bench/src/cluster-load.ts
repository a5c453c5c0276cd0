/**
 * What the cluster benchmarks share: an embedded control plane's admin credentials, pods POSTed over
 * HTTPS with a fixed number in flight (the creates-only floor), and simulated nodes — kubelets on the
 * fake runtime in this process, joined through the API as `nodelet up --nodes N` runs them.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { ControlPlane } from '@nodelet/controlplane';
import { type Clock, EventBus, type Logger, RealClock } from '@nodelet/kernel';
import { Kubelet } from '@nodelet/kubelet';
import { FakeRuntime } from '@nodelet/runtime-fake';

export const image = 'registry.local/bench/app:1.0';

export function podBody(i: number) {
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

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export interface Credentials {
  url: string;
  ca: string;
  cert: string;
  key: string;
}

export async function credentials(cp: ControlPlane): Promise<Credentials> {
  const pki = join(cp.dataDir, 'pki');
  const [ca, cert, key] = await Promise.all(
    ['ca.crt', 'admin.crt', 'admin.key'].map((f) => readFile(join(pki, f), 'utf8')),
  );
  return { url: cp.url, ca: ca!, cert: cert!, key: key! };
}

/** POSTs `body` to `path` with the admin's certificate; rejects unless 201. */
export function post(c: Credentials, agent: Agent, path: string, body: object): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const r = request(
      `${c.url}${path}`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 201 ? resolve() : reject(new Error(`POST ${path}: HTTP ${res.statusCode}`)),
        );
      },
    );
    r.on('error', reject);
    r.end(JSON.stringify(body));
  });
}

export function adminAgent(c: Credentials, maxSockets: number): Agent {
  return new Agent({ keepAlive: true, maxSockets, ca: c.ca, cert: c.cert, key: c.key });
}

/** POSTs `count` pods with `concurrency` in flight on keep-alive connections; returns per-create start times. */
export async function createPods(c: Credentials, count: number, concurrency: number): Promise<number[]> {
  const agent = adminAgent(c, concurrency);
  const started: number[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      started[i] = performance.now();
      await post(c, agent, '/api/v1/namespaces/default/pods', podBody(i));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
  return started;
}

/**
 * The creates-only floor: milliseconds for a bare control plane (no controllers, no nodes) to store
 * `pods` pods POSTed with `concurrency` in flight — one API request per pod.
 */
export async function floorMs(pods: number, concurrency: number, logger: Logger): Promise<number> {
  const dataDir = await mkdtemp(join(tmpdir(), 'nodelet-bench-floor-'));
  const cp = new ControlPlane({
    dataDir,
    clock: new RealClock(),
    logger: logger.child('floor'),
    port: 0,
    controllers: { scheduler: false, endpointSlices: false, workloads: false },
  });
  await cp.start();
  try {
    const c = await credentials(cp);
    const t0 = performance.now();
    await createPods(c, pods, concurrency);
    return performance.now() - t0;
  } finally {
    await cp.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * `count` kubelets on fake runtimes (instant pulls, the image present, a pod CIDR each; capacity
 * 32 CPU / 64 GiB / 110 pods), each with its own API client, lease and status, as nodes of `cp`.
 */
export async function startSimulatedNodes(
  cp: ControlPlane,
  count: number,
  { clock, logger, dataDir }: { clock: Clock; logger: Logger; dataDir: string },
): Promise<{ kubelets: Kubelet[]; runtimes: FakeRuntime[] }> {
  const kubelets: Kubelet[] = [];
  const runtimes: FakeRuntime[] = [];
  for (let n = 0; n < count; n++) {
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
        // Simulated pods get their token volumes as directories: no tmpfs mounted on the host per pod.
        tmpfsVolumes: false,
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
  return { kubelets, runtimes };
}

/** Polls until `count` nodes are Ready; throws after 5 min from `t0`. */
export async function waitNodesReady(core: k8s.CoreV1Api, count: number, t0: number): Promise<void> {
  for (;;) {
    const list = await core.listNode();
    const ready = list.items.filter((n) =>
      n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    if (ready.length === count) return;
    if (performance.now() - t0 > 300_000)
      throw new Error(`only ${ready.length} of ${count} nodes Ready after 5 min`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * A control plane with its scheduler and workload controllers (no EndpointSlices) and `nodeCount`
 * simulated nodes, all Ready; `stop()` stops the kubelets and the control plane and removes the data.
 */
export async function startBenchCluster(
  nodeCount: number,
  { clock, logger, prefix }: { clock: Clock; logger: Logger; prefix: string },
) {
  const dataDir = await mkdtemp(join(tmpdir(), prefix));
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
  const { kubelets, runtimes } = await startSimulatedNodes(cp, nodeCount, { clock, logger, dataDir });
  await waitNodesReady(core, nodeCount, t0);
  return {
    cp,
    kc,
    kubelets,
    runtimes,
    readyMs: performance.now() - t0,
    async stop() {
      for (const k of kubelets) await k.stop();
      await cp.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Prints `rows` as a two-column table and writes `result` to bench/results/<name>.json. */
export async function report(name: string, rows: [string, string][], result: object): Promise<void> {
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
  const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, `${name}.json`), JSON.stringify(result, null, 2) + '\n');
}

/** When and where a result was measured: the date, the machine's CPUs and load, Node's version. */
export function runContext() {
  return {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      loadavg: loadavg().map((l) => Number(l.toFixed(2))),
      node: process.version,
    },
  };
}

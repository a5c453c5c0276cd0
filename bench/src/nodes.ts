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
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { createLogger, RealClock } from '@nodelet/kernel';
import {
  createPods,
  credentials,
  floorMs,
  percentile,
  startBenchCluster,
  report,
  runContext,
} from './cluster-load.js';

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
  const floorRate = podCount / ((await floorMs(podCount, concurrency, logger)) / 1000);

  const cluster = await startBenchCluster(nodeCount, { clock, logger, prefix: 'nodelet-bench-nodes-' });
  const { cp, kc, runtimes } = cluster;
  const { readyMs } = cluster;
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
    ...runContext(),
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
  await report('nodes', rows, result);

  await cluster.stop();
}

await main();

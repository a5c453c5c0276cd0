/**
 * A Deployment on simulated nodes: one Deployment of `--replicas` pods on `--nodes` kubelets (fake
 * runtime, in this process, joined over HTTPS as `nodelet up --nodes N` runs them), against the
 * creates-only floor of the same run.
 *
 *   npm run bench:deployment --workspace @nodelet/bench -- [--replicas 1000] [--nodes 10]
 *
 *   floor      a bare control plane (no controllers, no nodes): the same number of pods POSTed over
 *              HTTPS, 32 in flight — the time to store them, one API request per pod
 *   deployment the control plane with its scheduler, ReplicaSet and Deployment controllers and the
 *              nodes; one Deployment POSTed; the time until its status says every replica Ready, and
 *              the controllers' writes per pod (pod creates by the ReplicaSet controller, bindings by the
 *              scheduler, ReplicaSet and Deployment writes), counted from the store's writes
 *   ratios     time to all Ready ÷ floor time; controller writes per pod ÷ 1 (the floor's)
 *
 * Prints a table and writes bench/results/deployment.json.
 */
import { parseArgs } from 'node:util';
import { createLogger, RealClock } from '@nodelet/kernel';
import {
  adminAgent,
  credentials,
  image,
  post,
  startBenchCluster,
  floorMs,
  report,
  runContext,
} from './cluster-load.js';

function deploymentBody(replicas: number) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'bench' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'bench' } },
      template: {
        metadata: { labels: { app: 'bench' } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            { name: 'app', image, imagePullPolicy: 'IfNotPresent', resources: { requests: { cpu: '10m' } } },
          ],
        },
      },
    },
  };
}

/** Store writes by what made them: the controllers' (and the scheduler's) against the kubelets'. */
interface WriteCounts {
  podCreates: number;
  bindings: number;
  replicaSetWrites: number;
  deploymentWrites: number;
  podStatusWrites: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { replicas: { type: 'string', default: '1000' }, nodes: { type: 'string', default: '10' } },
  });
  const replicas = Number(values.replicas);
  const nodeCount = Number(values.nodes);
  const logger = createLogger({ level: 'warn' });
  const clock = new RealClock();

  process.stderr.write(`floor: ${replicas} creates on a bare control plane…\n`);
  const floor = await floorMs(replicas, 32, logger);

  const cluster = await startBenchCluster(nodeCount, { clock, logger, prefix: 'nodelet-bench-deploy-' });
  const { cp } = cluster;

  const counts: WriteCounts = {
    podCreates: 0,
    bindings: 0,
    replicaSetWrites: 0,
    deploymentWrites: 0,
    podStatusWrites: 0,
  };
  const store = cp.registry.store;
  const stops = [
    store.subscribe('pods', (e) => {
      if (e.op === 'create') counts.podCreates++;
      else if (e.op === 'update' && !e.prev?.spec?.nodeName && e.object.spec?.nodeName) counts.bindings++;
      else if (e.op === 'update') counts.podStatusWrites++;
    }),
    store.subscribe('replicasets', () => counts.replicaSetWrites++),
    store.subscribe('deployments', () => counts.deploymentWrites++),
  ];
  let resolveReady!: () => void;
  const allReady = new Promise<void>((r) => (resolveReady = r));
  stops.push(
    store.subscribe('deployments', (e) => {
      if (e.object.status?.readyReplicas === replicas && e.object.status?.updatedReplicas === replicas)
        resolveReady();
    }),
  );

  process.stderr.write(`a Deployment of ${replicas} replicas on ${nodeCount} nodes…\n`);
  const c = await credentials(cp);
  const agent = adminAgent(c, 1);
  const t0 = performance.now();
  await post(c, agent, '/apis/apps/v1/namespaces/default/deployments', deploymentBody(replicas));
  const timeout = setTimeout(() => resolveReady(), 600_000);
  await allReady;
  clearTimeout(timeout);
  const readyMs = performance.now() - t0;
  agent.destroy();
  for (const stop of stops) stop();

  const controllerWrites =
    counts.podCreates + counts.bindings + counts.replicaSetWrites + counts.deploymentWrites;
  const result = {
    ...runContext(),
    replicas,
    nodes: nodeCount,
    floor: { createsMs: Math.round(floor), requestsPerPod: 1 },
    allReadyMs: Math.round(readyMs),
    timeRatio: Number((readyMs / floor).toFixed(2)),
    writes: counts,
    controllerWritesPerPod: Number((controllerWrites / replicas).toFixed(3)),
    writesRatio: Number((controllerWrites / replicas / 1).toFixed(3)),
  };
  const rows: [string, string][] = [
    ['replicas / nodes', `${replicas} / ${nodeCount}`],
    ['floor: creates only', `${(floor / 1000).toFixed(2)} s (1 request per pod)`],
    ['Deployment: all Ready after', `${(readyMs / 1000).toFixed(2)} s`],
    ['time ratio (÷ floor)', String(result.timeRatio)],
    [
      'controller writes',
      `${counts.podCreates} pod creates, ${counts.bindings} bindings, ${counts.replicaSetWrites} ReplicaSet, ${counts.deploymentWrites} Deployment`,
    ],
    ['controller writes per pod (÷ floor 1)', String(result.controllerWritesPerPod)],
    ['kubelet pod status writes', String(counts.podStatusWrites)],
  ];
  await report('deployment', rows, result);

  await cluster.stop();
}

await main();

import { createLogger, MemorySink, type Loop, VirtualClock } from '@nodelet/kernel';
import { DefaultTolerationSecondsAdmission } from '../admission/default-toleration-seconds.js';
import { Registry } from '../apiserver/registry.js';
import { rfc3339, rfc3339Micro, type KubeObject } from '../object.js';
import { deployments } from '../resources/deployments.js';
import { coreEvents } from '../resources/events.js';
import { leases } from '../resources/leases.js';
import { namespaces } from '../resources/namespaces.js';
import { nodes } from '../resources/nodes.js';
import { pods } from '../resources/pods.js';
import { replicaSets } from '../resources/replica-sets.js';
import { RevisionStore } from '../storage/revision-store.js';
import { readyNode } from '../test-helpers.js';
import { DeploymentController } from './deployment-controller.js';
import { EventRecorder } from './event-recorder.js';
import { NodeLifecycleController, type NodeLifecycleOptions } from './node-lifecycle-controller.js';
import { PodGarbageCollector } from './pod-gc-controller.js';
import { ReplicaSetController } from './replicaset-controller.js';
import { Scheduler } from './scheduler.js';
import { TaintEvictionController } from './taint-eviction-controller.js';

/**
 * A cluster for the node lifecycle tests: an in-memory store with DefaultTolerationSeconds admission,
 * the scheduler, the Deployment, ReplicaSet, node lifecycle, taint eviction and pod GC controllers, all on one
 * virtual clock, and a simulated kubelet per node that renews its Lease every 10 s and reports the pods
 * bound to it Running and Ready every second — until the test stops it.
 */
export function nodeCluster(nodeNames: string[], options: NodeLifecycleOptions = {}) {
  const clock = new VirtualClock();
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock,
    types: [namespaces, pods, replicaSets, deployments, nodes, leases, coreEvents],
    admission: [new DefaultTolerationSecondsAdmission()],
  });
  for (const name of ['default', 'kube-node-lease'])
    registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const logger = createLogger({ sink: new MemorySink().sink });
  const recorder = (c: string) => new EventRecorder(registry, clock, logger, c);
  const controllers = [
    new Scheduler(registry, clock, logger, recorder('default-scheduler')),
    new ReplicaSetController(registry, clock, logger),
    new DeploymentController(registry, clock, logger),
    new NodeLifecycleController(registry, clock, logger, recorder('node-controller'), options),
    new TaintEvictionController(registry, clock, logger, recorder('taint-eviction-controller')),
    new PodGarbageCollector(registry, clock, logger),
  ];
  const kubelets = new Map<string, Loop>();

  /** The simulated kubelet of `name`: registers (or reports Ready again), then renews and syncs. */
  const startKubelet = (name: string) => {
    const now = rfc3339(clock.now());
    if (!registry.store.get('nodes', '', name)) {
      const node = readyNode(name);
      node.status.conditions[0]!.lastHeartbeatTime = now;
      node.status.conditions[0]!.lastTransitionTime = now;
      registry.create(nodes, '', node);
    } else {
      registry.store.update('nodes', '', name, (n) => {
        n.status.conditions = n.status.conditions.map((c: any) =>
          c.type === 'Ready'
            ? {
                ...c,
                status: 'True',
                reason: 'KubeletReady',
                lastHeartbeatTime: now,
                lastTransitionTime: now,
              }
            : c,
        );
        return n;
      });
    }
    let tick = 0;
    const loop = clock.loop(
      () => {
        if (tick++ % 10 === 0) renewLease(name);
        runBoundPods(name);
      },
      { period: 1_000 },
    );
    kubelets.set(name, loop);
  };

  const renewLease = (name: string) => {
    const spec = { holderIdentity: name, leaseDurationSeconds: 40, renewTime: rfc3339Micro(clock.now()) };
    if (registry.store.get('leases', 'kube-node-lease', name)) {
      registry.store.update('leases', 'kube-node-lease', name, (l) => ({ ...l, spec }));
    } else {
      registry.create(leases, 'kube-node-lease', {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace: 'kube-node-lease' },
        spec,
      });
    }
  };

  const runBoundPods = (name: string) => {
    for (const { object: pod } of registry.store.listAll('pods')) {
      if (pod.spec?.nodeName !== name || pod.status?.phase === 'Running') continue;
      registry.store.update('pods', pod.metadata.namespace!, pod.metadata.name!, (p) => {
        const at = rfc3339(clock.now());
        p.status = {
          ...p.status,
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: at }],
        };
        return p;
      });
    }
  };

  for (const name of nodeNames) startKubelet(name);
  for (const c of controllers) c.start();

  return {
    clock,
    registry,
    startKubelet,
    /** The kubelet of `name` stops, as if SIGKILLed: no more Lease renewals, status or pod updates. */
    killKubelet: (name: string) => {
      kubelets.get(name)?.stop();
      kubelets.delete(name);
    },
    node: (name: string): KubeObject => registry.store.get('nodes', '', name)!.object,
    pod: (name: string, namespace = 'default'): KubeObject | undefined =>
      registry.store.get('pods', namespace, name)?.object,
    pods: (): KubeObject[] => registry.store.listAll('pods').map((s) => s.object),
    events: (reason: string): KubeObject[] =>
      registry.store
        .listAll('events')
        .map((s) => s.object)
        .filter((e) => e.reason === reason),
    stop: () => {
      for (const loop of kubelets.values()) loop.stop();
      for (const c of controllers) c.stop();
    },
  };
}

export const condition = (o: KubeObject | undefined, type: string): Record<string, any> | undefined =>
  (o?.status?.conditions ?? []).find((c: any) => c.type === type);

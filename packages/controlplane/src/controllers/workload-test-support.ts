import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import type { ResourceType } from '../apiserver/resource-type.js';
import { rfc3339, type KubeObject } from '../object.js';
import { controllerRevisions } from '../resources/controller-revisions.js';
import { namespaces } from '../resources/namespaces.js';
import { pods } from '../resources/pods.js';
import { RevisionStore } from '../storage/revision-store.js';

/**
 * What the workload controllers' tests share: a registry on an in-memory store and a virtual clock with
 * the `default` namespace, and the pod changes a scheduler and a kubelet would make.
 */
export function workloadRegistry(types: ResourceType[]) {
  const clock = new VirtualClock();
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock,
    types: [namespaces, pods, controllerRevisions, ...types],
  });
  registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const logger = createLogger({ sink: new MemorySink().sink });
  return { clock, registry, logger };
}

/** The pods of `default` that are not being deleted. */
export function livePods(registry: Registry): KubeObject[] {
  return registry.store
    .listAll('pods', 'default')
    .map((s) => s.object)
    .filter((p) => !p.metadata.deletionTimestamp);
}

/** Bound to `node`, Running and Ready since `at`, as the scheduler and the kubelet would leave it. */
export function makeReady(registry: Registry, name: string, node: string, at: number): void {
  registry.store.update('pods', 'default', name, (p) => {
    p.spec.nodeName = node;
    p.status = {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: rfc3339(at) }],
    };
    return p;
  });
}

/** What the kubelet does once a deleted pod's containers are gone: the pod object goes. */
export function finishDeletions(registry: Registry): void {
  for (const { object } of registry.store.listAll('pods', 'default')) {
    if (object.metadata.deletionTimestamp) registry.forceRemove('pods', 'default', object.metadata.name!);
  }
}

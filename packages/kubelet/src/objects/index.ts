import type { Pod, Service } from '@nodelet/api';
import type { KubeApi } from '@nodelet/client';
import type { Clock, Logger } from '@nodelet/kernel';
import type { PodObjects } from '@nodelet/volume';
import type { PodRegistry } from '../pod-manager.js';
import { ApiPodObjects } from './api-objects.js';
import { StandalonePodObjects } from './standalone.js';

export { ApiPodObjects, type ApiPodObjectsOptions } from './api-objects.js';
export { ObjectCache } from './object-cache.js';
export { podConfigMapNames, podSecretNames } from './references.js';
export { ServiceCache } from './service-cache.js';
export { StandalonePodObjects } from './standalone.js';
export { TokenManager } from './token-manager.js';

/** The kubelet's one view of the API objects its pods reference, and what goes with it. */
export interface KubeletObjects {
  /** For everything that reads them: env, volumes, image pull secrets. */
  objects: PodObjects;
  /** Where the pod manager registers desired pods (absent: nothing to watch). */
  registry?: PodRegistry;
  /** The Services of a pod's service variables (absent: none, as a standalone kubelet). */
  services?: (pod: Pod) => Promise<Service[]>;
  stop(): void;
}

/**
 * An embedder's PodObjects when given (registered with the pod manager when it can be); else, for a
 * kubelet joined to a cluster, the API-backed one on the node agent's connection; else the standalone
 * one, which has nothing to read.
 */
export function kubeletObjects(options: {
  given?: PodObjects;
  joined: boolean;
  api: () => KubeApi | undefined;
  clock: Clock;
  logger: Logger;
}): KubeletObjects {
  const { given } = options;
  if (given) {
    const registry = isRegistry(given) ? given : undefined;
    const services = given instanceof ApiPodObjects ? (pod: Pod) => given.servicesFor(pod) : undefined;
    return { objects: given, registry, services, stop: () => undefined };
  }
  if (!options.joined) return { objects: new StandalonePodObjects(), stop: () => undefined };
  const objects = new ApiPodObjects({ api: options.api, clock: options.clock, logger: options.logger });
  return {
    objects,
    registry: objects,
    services: (pod) => objects.servicesFor(pod),
    stop: () => objects.stop(),
  };
}

function isRegistry(o: object): o is PodRegistry {
  const r = o as Partial<PodRegistry>;
  return typeof r.registerPod === 'function' && typeof r.unregisterPod === 'function';
}

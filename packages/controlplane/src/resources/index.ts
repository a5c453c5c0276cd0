import type { ResourceType } from '../apiserver/resource-type.js';
import type { ServiceAllocator } from './allocators.js';
import { certificateSigningRequests } from './certificates.js';
import { pods } from './pods.js';
import { makeServices } from './services.js';
import {
  configMaps,
  coreEvents,
  endpointSlices,
  eventsV1,
  leases,
  namespaces,
  nodes,
  secrets,
  serviceAccounts,
} from './simple.js';

/** Every resource the control plane serves, in discovery order. */
export function servedResources(allocator: ServiceAllocator): ResourceType[] {
  return [
    namespaces,
    pods,
    makeServices(allocator),
    nodes,
    configMaps,
    secrets,
    serviceAccounts,
    coreEvents,
    endpointSlices,
    leases,
    eventsV1,
    certificateSigningRequests,
  ];
}

export { pods, podQosClass } from './pods.js';
export * from './allocators.js';
export { eventToEventsV1, eventsV1ToEvent, immortalNamespaces } from './simple.js';
export * from './certificates.js';

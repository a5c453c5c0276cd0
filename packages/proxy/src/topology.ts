import type { EndpointInfo } from './endpoints.js';
import { type ServicePortInfo, usesClusterEndpoints, usesLocalEndpoints } from './service-port.js';

/** The zone label of a node (`topology.kubernetes.io/zone`). */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

export interface CategorizedEndpoints {
  /** Endpoints for Cluster traffic policy: ready ones (topology-filtered), else serving-terminating ones. */
  clusterEndpoints: EndpointInfo[];
  /** Endpoints for Local traffic policy: this node's ready ones, else its serving-terminating ones. */
  localEndpoints: EndpointInfo[];
  /** The union: every endpoint some rule of this service can send traffic to. */
  allReachableEndpoints: EndpointInfo[];
  /** Whether the service has any usable endpoint anywhere (decides REJECT versus DROP). */
  hasEndpoints: boolean;
}

/**
 * Zone hints are used only when the service asks for topology-aware routing, the node has a zone, every
 * ready endpoint carries hints, and at least one is hinted for this node's zone; otherwise all endpoints
 * are used (upstream `canUseTopology`).
 */
function canUseTopology(
  endpoints: readonly EndpointInfo[],
  svc: ServicePortInfo,
  labels: Record<string, string>,
) {
  if (!svc.topologyAware) return false;
  const zone = labels[ZONE_LABEL];
  if (!zone) return false;
  let hasForZone = false;
  for (const ep of endpoints) {
    if (!ep.ready) continue;
    if (!ep.zoneHints) return false;
    if (ep.zoneHints.includes(zone)) hasForZone = true;
  }
  return hasForZone;
}

/**
 * Splits a service port's endpoints by traffic policy, as upstream `CategorizeEndpoints`: ready endpoints
 * serve; serving-but-terminating ones only when no ready endpoint exists (for Cluster policy anywhere,
 * for Local policy on this node).
 */
export function categorizeEndpoints(
  endpoints: readonly EndpointInfo[],
  svc: ServicePortInfo,
  topologyLabels: Record<string, string>,
): CategorizedEndpoints {
  let clusterEndpoints: EndpointInfo[] = [];
  let localEndpoints: EndpointInfo[] = [];
  let hasEndpoints = false;

  if (usesClusterEndpoints(svc)) {
    const useTopology = canUseTopology(endpoints, svc, topologyLabels);
    const zone = topologyLabels[ZONE_LABEL];
    clusterEndpoints = endpoints.filter(
      (ep) => ep.ready && (!useTopology || (ep.zoneHints ?? []).includes(zone!)),
    );
    if (clusterEndpoints.length === 0)
      clusterEndpoints = endpoints.filter((ep) => ep.serving && ep.terminating);
    if (clusterEndpoints.length > 0) hasEndpoints = true;
  }
  if (!usesLocalEndpoints(svc)) {
    return { clusterEndpoints, localEndpoints, allReachableEndpoints: clusterEndpoints, hasEndpoints };
  }

  let localReady = false;
  let localServingTerminating = false;
  for (const ep of endpoints) {
    if (ep.ready) {
      hasEndpoints = true;
      if (ep.isLocal) localReady = true;
    } else if (ep.serving && ep.terminating) {
      hasEndpoints = true;
      if (ep.isLocal) localServingTerminating = true;
    }
  }
  if (localReady) localEndpoints = endpoints.filter((ep) => ep.isLocal && ep.ready);
  else if (localServingTerminating) {
    localEndpoints = endpoints.filter((ep) => ep.isLocal && ep.serving && ep.terminating);
  }
  if (!usesClusterEndpoints(svc)) {
    return { clusterEndpoints, localEndpoints, allReachableEndpoints: localEndpoints, hasEndpoints };
  }
  const seen = new Set(clusterEndpoints.map((e) => e.endpoint));
  const allReachableEndpoints = [...clusterEndpoints];
  for (const ep of localEndpoints) if (!seen.has(ep.endpoint)) allReachableEndpoints.push(ep);
  allReachableEndpoints.sort((a, b) => (a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0));
  return { clusterEndpoints, localEndpoints, allReachableEndpoints, hasEndpoints };
}

import type { EndpointInfo } from './endpoints.js';
import { externallyAccessible, usesClusterEndpoints, usesLocalEndpoints } from './service-port.js';
import type { ServicePortState } from './state.js';

/**
 * What a backend does with traffic its policy has no endpoint for: `reject` when the service has no
 * usable endpoint anywhere (the client learns at once), `drop` when it has some, but none on this node
 * for a Local policy (as upstream: another node may serve the client).
 */
export type NoEndpointAction = 'reject' | 'drop';

/**
 * Which endpoints each kind of traffic to one service port goes to, by its traffic policies (upstream
 * syncProxyRules, the part every backend shares). Internal traffic is to the cluster IP
 * (internalTrafficPolicy); external traffic is to external IPs, load-balancer IPs and the node port
 * (externalTrafficPolicy).
 */
export interface EndpointSelection {
  /** Endpoints for internal traffic; empty when it has none. */
  readonly internal: readonly EndpointInfo[];
  /** Endpoints for external traffic; empty when it has none. */
  readonly external: readonly EndpointInfo[];
  /** Internal traffic goes to this node's endpoints only (it dispatches through the local set). */
  readonly internalLocal: boolean;
  readonly externalLocal: boolean;
  /** What to do with internal traffic when `internal` is empty; undefined when it is not. */
  readonly internalNoEndpoints: NoEndpointAction | undefined;
  readonly externalNoEndpoints: NoEndpointAction | undefined;
  /** Some traffic dispatches over the cluster-wide set, and it is not empty (upstream's SVC chain). */
  readonly dispatchesCluster: boolean;
  /** Some traffic dispatches over this node's set, and it is not empty (upstream's SVL chain). */
  readonly dispatchesLocal: boolean;
  /** External traffic exists and has somewhere to go or be refused (upstream's EXT chain). */
  readonly externalEntry: boolean;
}

const noEndpoints = (p: ServicePortState, has: boolean): NoEndpointAction | undefined =>
  has ? undefined : p.hasEndpoints ? 'drop' : 'reject';

/** The endpoint selection of `p` (cheap: a few comparisons, no copies). */
export function selectEndpoints(p: ServicePortState): EndpointSelection {
  const hasLocal = p.localEndpoints.length > 0;
  const hasInternal = p.hasEndpoints && (!p.internalPolicyLocal || hasLocal);
  const hasExternal = p.hasEndpoints && (!p.externalPolicyLocal || hasLocal);
  const pick = (local: boolean) => (local ? p.localEndpoints : p.clusterEndpoints);
  return {
    internal: hasInternal ? pick(p.internalPolicyLocal) : [],
    external: hasExternal ? pick(p.externalPolicyLocal) : [],
    internalLocal: p.internalPolicyLocal,
    externalLocal: p.externalPolicyLocal,
    internalNoEndpoints: noEndpoints(p, hasInternal),
    externalNoEndpoints: noEndpoints(p, hasExternal),
    dispatchesCluster: p.clusterEndpoints.length > 0 && usesClusterEndpoints(p),
    dispatchesLocal: hasLocal && usesLocalEndpoints(p),
    externalEntry: p.hasEndpoints && externallyAccessible(p),
  };
}

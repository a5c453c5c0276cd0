import type { EndpointInfo } from './endpoints.js';
import type { ServicePortInfo } from './service-port.js';

/**
 * What the proxy knows about this node, for rules that depend on it (upstream's proxier parameters).
 */
export interface NodeContext {
  readonly nodeName: string;
  /** This node's IPv4 addresses (for LoadBalancerSourceRanges "allow from node" and the userspace proxy). */
  readonly nodeIPs: readonly string[];
  /** This node's topology labels (`topology.kubernetes.io/zone`), for topology-aware routing. */
  readonly topologyLabels: Readonly<Record<string, string>>;
  /** Pod CIDR of the cluster; traffic to a ClusterIP from outside it is masqueraded. Empty: not detected. */
  readonly clusterCIDR: string;
  /** SNAT every packet to a service (upstream --masquerade-all). */
  readonly masqueradeAll: boolean;
  /** The bit of the packet mark that asks for masquerade (upstream default 14: 0x4000). */
  readonly masqueradeBit: number;
  /** CIDRs of the node addresses that accept NodePort traffic; empty means every local address. */
  readonly nodePortAddresses: readonly string[];
}

export const defaultNodeContext = (nodeName = 'node'): NodeContext => ({
  nodeName,
  nodeIPs: [],
  topologyLabels: {},
  clusterCIDR: '',
  masqueradeAll: false,
  masqueradeBit: 14,
  nodePortAddresses: [],
});

/** One service port with its endpoints already split by traffic policy: what a backend renders. */
export interface ServicePortState extends ServicePortInfo {
  /** Every endpoint of this port, ready or not. */
  readonly endpoints: readonly EndpointInfo[];
  readonly clusterEndpoints: readonly EndpointInfo[];
  readonly localEndpoints: readonly EndpointInfo[];
  readonly allReachableEndpoints: readonly EndpointInfo[];
  readonly hasEndpoints: boolean;
}

/** The whole desired state, handed to a backend on every sync. */
export interface ProxyState {
  readonly node: NodeContext;
  /** Service ports by ServicePortName (`ns/name:port`). */
  readonly servicePorts: ReadonlyMap<string, ServicePortState>;
}

/**
 * What changed since the last successful sync (upstream's UpdateServiceMapResult/UpdateEndpointsMapResult).
 * A backend doing a partial sync rewrites only what these name.
 */
export interface ChangeSet {
  /** Services (`ns/name`) whose ports or endpoints changed. */
  readonly services: ReadonlySet<string>;
  /** Service ports added or changed (present in the new state). */
  readonly updated: ReadonlySet<string>;
  /** Service ports removed (absent from the new state). */
  readonly removed: ReadonlySet<string>;
}

export const emptyChangeSet = (): ChangeSet => ({
  services: new Set(),
  updated: new Set(),
  removed: new Set(),
});

export interface SyncResult {
  /** Whether the backend rewrote everything (it may upgrade a partial request to a full one). */
  readonly full: boolean;
  /** Rules, elements or listeners written by this sync; a backend-specific count, for logs and benchmarks. */
  readonly written: number;
  /** Bytes handed to the kernel tool (iptables-restore, nft), 0 when nothing was applied. */
  readonly bytes?: number;
  /** A human summary: `iptables-restore (legacy): 12 chains, 40 rules`. */
  readonly summary?: string;
}

/**
 * The updated service ports of `changes` that `state` has, in the order a full render writes them (by
 * name), without sorting every port of the state: what a partial render goes through.
 */
export function sortedUpdatedPorts(state: ProxyState, changes: ChangeSet): ServicePortState[] {
  const ports: ServicePortState[] = [];
  for (const name of [...changes.updated].sort()) {
    const p = state.servicePorts.get(name);
    if (p) ports.push(p);
  }
  return ports;
}

/** Service ports of a state in a stable order (by name), the order rules are rendered in. */
export function sortedServicePorts(state: ProxyState): ServicePortState[] {
  return [...state.servicePorts.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

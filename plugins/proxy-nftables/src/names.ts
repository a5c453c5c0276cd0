import { type EndpointInfo, hashName, type ServicePortInfo } from '@nodelet/proxy';

/**
 * Names in the `ip kube-proxy` table, as upstream's nftables proxier makes them: a prefix, 8 characters
 * of base32(sha256(name)), and the readable name `namespace/service/protocol/port` (for endpoints
 * `…__ip/port`), so `nft list table ip kube-proxy` can be read without a legend.
 */
export const TABLE = 'kube-proxy';
export const FAMILY = 'ip';

const MAX_BASE = 256 - 16;

function hashAndTruncate(name: string): string {
  let out = `${hashName(name, 8)}-${name}`;
  if (out.length > MAX_BASE) out = out.slice(0, MAX_BASE - 3) + '...';
  return out;
}

// Remembered per object (service-port and endpoint objects are replaced when their service changes).
const portBases = new WeakMap<ServicePortInfo, string>();
const endpointBases = new WeakMap<EndpointInfo, { chain: string; affinity: string }>();

function portBase(p: ServicePortInfo): string {
  let b = portBases.get(p);
  if (b === undefined) {
    b = hashAndTruncate(`${p.namespace}/${p.serviceName}/${p.protocol.toLowerCase()}/${p.portName}`);
    portBases.set(p, b);
  }
  return b;
}

function endpointNames(p: ServicePortInfo, ep: EndpointInfo): { chain: string; affinity: string } {
  let n = endpointBases.get(ep);
  if (n === undefined) {
    const base = hashAndTruncate(
      `${p.namespace}/${p.serviceName}/${p.protocol.toLowerCase()}/${p.portName}__${ep.ip}/${ep.port}`,
    );
    n = { chain: `endpoint-${base}`, affinity: `affinity-${base}` };
    endpointBases.set(ep, n);
  }
  return n;
}

export const serviceChain = (p: ServicePortInfo) => `service-${portBase(p)}`;
export const localChain = (p: ServicePortInfo) => `local-${portBase(p)}`;
export const externalChain = (p: ServicePortInfo) => `external-${portBase(p)}`;
export const firewallChain = (p: ServicePortInfo) => `firewall-${portBase(p)}`;
export const endpointChain = (p: ServicePortInfo, ep: EndpointInfo) => endpointNames(p, ep).chain;
export const affinitySet = (p: ServicePortInfo, ep: EndpointInfo) => endpointNames(p, ep).affinity;

/** Per-service chains always contain a `/`; none of the fixed chains do. */
export const isServiceChain = (name: string) => name.includes('/');
export const isAffinitySet = (name: string) => name.startsWith('affinity-');

export const CLUSTER_IPS = 'cluster-ips';
export const SERVICE_IPS = 'service-ips';
export const SERVICE_NODEPORTS = 'service-nodeports';
export const NO_ENDPOINT_SERVICES = 'no-endpoint-services';
export const NO_ENDPOINT_NODEPORTS = 'no-endpoint-nodeports';
export const FIREWALL_IPS = 'firewall-ips';
export const NODEPORT_IPS = 'nodeport-ips';
export const REJECT_CHAIN = 'reject-chain';
export const MARK_MASQ = 'mark-for-masquerade';
export const MASQUERADING = 'masquerading';
export const SERVICES = 'services';

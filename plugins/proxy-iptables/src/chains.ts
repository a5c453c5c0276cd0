import { type EndpointInfo, hashName, type ServicePortInfo } from '@nodelet/proxy';

/**
 * Chain names, as upstream kube-proxy computes them: a prefix and the first 16 characters of
 * base32(sha256(servicePortName + protocol [+ endpoint])). The same service gets the same chains here as
 * under kube-proxy, so rules can be compared line by line and survive a restart unchanged.
 */
export const KUBE_SERVICES = 'KUBE-SERVICES';
export const KUBE_EXTERNAL_SERVICES = 'KUBE-EXTERNAL-SERVICES';
export const KUBE_NODEPORTS = 'KUBE-NODEPORTS';
export const KUBE_POSTROUTING = 'KUBE-POSTROUTING';
export const KUBE_MARK_MASQ = 'KUBE-MARK-MASQ';
export const KUBE_FORWARD = 'KUBE-FORWARD';
export const KUBE_PROXY_FIREWALL = 'KUBE-PROXY-FIREWALL';
export const KUBE_PROXY_CANARY = 'KUBE-PROXY-CANARY';

// Service-port and endpoint objects are replaced (not changed) when their service changes, so names
// are remembered per object: each name is computed once, as upstream stores them in its infos.
interface PortChains {
  svc: string;
  svl: string;
  ext: string;
  fw: string;
}
const portChains = new WeakMap<ServicePortInfo, PortChains>();
const endpointNames = new WeakMap<EndpointInfo, string>();

function chainsOf(p: ServicePortInfo): PortChains {
  let c = portChains.get(p);
  if (c === undefined) {
    const h = hashName(p.name + p.protocol.toLowerCase());
    c = { svc: `KUBE-SVC-${h}`, svl: `KUBE-SVL-${h}`, ext: `KUBE-EXT-${h}`, fw: `KUBE-FW-${h}` };
    portChains.set(p, c);
  }
  return c;
}

export const serviceChain = (p: ServicePortInfo) => chainsOf(p).svc;
export const serviceLocalChain = (p: ServicePortInfo) => chainsOf(p).svl;
export const externalChain = (p: ServicePortInfo) => chainsOf(p).ext;
export const firewallChain = (p: ServicePortInfo) => chainsOf(p).fw;
export function endpointChain(p: ServicePortInfo, ep: EndpointInfo): string {
  let name = endpointNames.get(ep);
  if (name === undefined) {
    name = `KUBE-SEP-${hashName(p.name + p.protocol.toLowerCase() + ep.endpoint)}`;
    endpointNames.set(ep, name);
  }
  return name;
}

const SERVICE_CHAIN_PREFIXES = ['KUBE-SVC-', 'KUBE-SVL-', 'KUBE-EXT-', 'KUBE-FW-', 'KUBE-SEP-'];

/** A per-service chain (SVC, SVL, EXT, FW, SEP): ours to delete when no service uses it. */
export function isServiceChain(name: string): boolean {
  return SERVICE_CHAIN_PREFIXES.some((p) => name.startsWith(p));
}

/** Rules that hook our chains into the built-in ones (upstream `iptablesJumpChains`), in prepend order. */
export interface JumpRule {
  table: 'filter' | 'nat';
  from: string;
  to: string;
  comment: string;
  extra: string;
}

const NEW = '-m conntrack --ctstate NEW';
export const JUMP_RULES: readonly JumpRule[] = [
  {
    table: 'filter',
    from: 'INPUT',
    to: KUBE_EXTERNAL_SERVICES,
    comment: 'kubernetes externally-visible service portals',
    extra: NEW,
  },
  {
    table: 'filter',
    from: 'FORWARD',
    to: KUBE_EXTERNAL_SERVICES,
    comment: 'kubernetes externally-visible service portals',
    extra: NEW,
  },
  {
    table: 'filter',
    from: 'INPUT',
    to: KUBE_NODEPORTS,
    comment: 'kubernetes health check service ports',
    extra: '',
  },
  { table: 'filter', from: 'FORWARD', to: KUBE_SERVICES, comment: 'kubernetes service portals', extra: NEW },
  { table: 'filter', from: 'OUTPUT', to: KUBE_SERVICES, comment: 'kubernetes service portals', extra: NEW },
  { table: 'filter', from: 'FORWARD', to: KUBE_FORWARD, comment: 'kubernetes forwarding rules', extra: '' },
  {
    table: 'filter',
    from: 'INPUT',
    to: KUBE_PROXY_FIREWALL,
    comment: 'kubernetes load balancer firewall',
    extra: NEW,
  },
  {
    table: 'filter',
    from: 'OUTPUT',
    to: KUBE_PROXY_FIREWALL,
    comment: 'kubernetes load balancer firewall',
    extra: NEW,
  },
  {
    table: 'filter',
    from: 'FORWARD',
    to: KUBE_PROXY_FIREWALL,
    comment: 'kubernetes load balancer firewall',
    extra: NEW,
  },
  { table: 'nat', from: 'OUTPUT', to: KUBE_SERVICES, comment: 'kubernetes service portals', extra: '' },
  { table: 'nat', from: 'PREROUTING', to: KUBE_SERVICES, comment: 'kubernetes service portals', extra: '' },
  {
    table: 'nat',
    from: 'POSTROUTING',
    to: KUBE_POSTROUTING,
    comment: 'kubernetes postrouting rules',
    extra: '',
  },
];

/** The top-level chains we own, per table (flushed and deleted by cleanup). */
export const FILTER_CHAINS = [
  KUBE_SERVICES,
  KUBE_EXTERNAL_SERVICES,
  KUBE_FORWARD,
  KUBE_NODEPORTS,
  KUBE_PROXY_FIREWALL,
];
export const NAT_CHAINS = [KUBE_SERVICES, KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_MARK_MASQ];

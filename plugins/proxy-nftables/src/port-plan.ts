import type { EndpointSelection, NoEndpointAction, PortPlan, ServicePortState } from '@nodelet/proxy';
import { selectEndpoints } from '@nodelet/proxy';
import type { Element } from './elements.js';
import {
  affinitySet,
  CLUSTER_IPS,
  endpointChain,
  externalChain,
  FIREWALL_IPS,
  firewallChain,
  localChain,
  NO_ENDPOINT_NODEPORTS,
  NO_ENDPOINT_SERVICES,
  REJECT_CHAIN,
  SERVICE_IPS,
  SERVICE_NODEPORTS,
  serviceChain,
} from './names.js';

/** The sets and maps service ports put elements in: [field of a plan's elements, name, kind]. */
export const ELEMENT_CONTAINERS = [
  ['clusterIPs', CLUSTER_IPS, 'set'],
  ['serviceIPs', SERVICE_IPS, 'map'],
  ['serviceNodePorts', SERVICE_NODEPORTS, 'map'],
  ['noEndpointServices', NO_ENDPOINT_SERVICES, 'map'],
  ['noEndpointNodePorts', NO_ENDPOINT_NODEPORTS, 'map'],
  ['firewallIPs', FIREWALL_IPS, 'map'],
] as const;

export type ElementContainer = (typeof ELEMENT_CONTAINERS)[number][0];

/**
 * What one service port has in the `ip kube-proxy` table besides its chains' rules: its chains
 * (endpoint chains first, then service, local, external, firewall: rules may reference only chains
 * that exist), its affinity sets, and its elements in the shared sets and maps.
 */
export interface NftPortPlan extends PortPlan {
  readonly sel: EndpointSelection;
  readonly svc: string;
  readonly local: string;
  readonly ext: string;
  readonly fw: string;
  /** Upstream's nftables proxier filters source ranges whether or not the service has endpoints. */
  readonly usesFirewall: boolean;
  readonly chains: string[];
  readonly sets: string[];
  readonly elements: Readonly<Record<ElementContainer, readonly Element[]>>;
}

/** The verdict of a traffic policy without endpoints; '' when it has endpoints. */
function verdict(action: NoEndpointAction | undefined): string {
  return action === 'reject' ? `goto ${REJECT_CHAIN}` : action === 'drop' ? 'drop' : '';
}

/** Chains, sets and elements of one service port (upstream syncProxyRules, per port). */
export function planPort(p: ServicePortState): NftPortPlan {
  const proto = p.protocol.toLowerCase();
  const sel = selectEndpoints(p);
  const svc = serviceChain(p);
  const local = localChain(p);
  const ext = externalChain(p);
  const fw = firewallChain(p);
  const usesFirewall = p.loadBalancerIPs.length > 0 && p.loadBalancerSourceRanges.length > 0;
  const chains: string[] = [];
  const sets: string[] = [];
  for (const ep of p.allReachableEndpoints) {
    chains.push(endpointChain(p, ep));
    if (p.sessionAffinity === 'ClientIP') sets.push(affinitySet(p, ep));
  }
  if (sel.dispatchesCluster) chains.push(svc);
  if (sel.dispatchesLocal) chains.push(local);
  if (sel.externalEntry) chains.push(ext);
  if (usesFirewall) chains.push(fw);

  const internalChain = p.internalPolicyLocal ? local : svc;
  const internalVerdict = verdict(sel.internalNoEndpoints);
  const externalVerdict = verdict(sel.externalNoEndpoints);
  const hasExternal = !sel.externalNoEndpoints;
  const el = {
    clusterIPs: [{ key: p.clusterIP, value: '' }] as Element[],
    serviceIPs: [] as Element[],
    serviceNodePorts: [] as Element[],
    noEndpointServices: [] as Element[],
    noEndpointNodePorts: [] as Element[],
    firewallIPs: [] as Element[],
  };
  const key = (ip: string, port: number) => `${ip} . ${proto} . ${port}`;
  if (!sel.internalNoEndpoints) {
    el.serviceIPs.push({ key: key(p.clusterIP, p.port), value: `goto ${internalChain}` });
  } else {
    el.noEndpointServices.push({ key: key(p.clusterIP, p.port), value: internalVerdict, comment: p.name });
  }
  for (const ip of p.externalIPs) {
    if (p.hasEndpoints) el.serviceIPs.push({ key: key(ip, p.port), value: `goto ${ext}` });
    if (!hasExternal)
      el.noEndpointServices.push({ key: key(ip, p.port), value: externalVerdict, comment: p.name });
  }
  for (const ip of p.loadBalancerIPs) {
    if (p.hasEndpoints) el.serviceIPs.push({ key: key(ip, p.port), value: `goto ${ext}` });
    if (usesFirewall) el.firewallIPs.push({ key: key(ip, p.port), value: `goto ${fw}` });
    if (!hasExternal)
      el.noEndpointServices.push({ key: key(ip, p.port), value: externalVerdict, comment: p.name });
  }
  if (p.nodePort > 0) {
    const npKey = `${proto} . ${p.nodePort}`;
    if (p.hasEndpoints) el.serviceNodePorts.push({ key: npKey, value: `goto ${ext}` });
    if (!hasExternal) el.noEndpointNodePorts.push({ key: npKey, value: externalVerdict, comment: p.name });
  }
  return { port: p, sel, svc, local, ext, fw, usesFirewall, chains, sets, elements: el };
}

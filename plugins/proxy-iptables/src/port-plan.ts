import {
  type EndpointSelection,
  type NoEndpointAction,
  type PortPlan,
  type ServicePortState,
  selectEndpoints,
} from '@nodelet/proxy';
import {
  endpointChain,
  externalChain,
  firewallChain,
  KUBE_EXTERNAL_SERVICES,
  KUBE_NODEPORTS,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  serviceChain,
  serviceLocalChain,
} from './chains.js';
import { comment } from './rule-text.js';

/** The chains one service port owns and its rules in the top-level chains (read-only outside the renderer). */
export interface ServiceBlock extends PortPlan {
  readonly sel: EndpointSelection;
  /** Service, service-local, external and firewall chain names of this port. */
  readonly svc: string;
  readonly svl: string;
  readonly ext: string;
  readonly fw: string;
  readonly usesFirewall: boolean;
  /** nat chains this service port owns (EXT, FW, SVC, SVL, SEP), in the order they are written. */
  readonly chains: string[];
  readonly natServices: readonly string[];
  readonly natNodePorts: readonly string[];
  readonly filterServices: readonly string[];
  readonly filterExternal: readonly string[];
  readonly filterNodePorts: readonly string[];
  readonly filterFirewall: readonly string[];
}

/** What a traffic policy without endpoints does: [target, comment]. */
function noEndpointRule(name: string, action: NoEndpointAction): [string, string] {
  return action === 'reject'
    ? ['REJECT', `${name} has no endpoints`]
    : ['DROP', `${name} has no local endpoints`];
}

export type TopLevelLines =
  'natServices' | 'natNodePorts' | 'filterServices' | 'filterExternal' | 'filterNodePorts' | 'filterFirewall';

/** Shared by every block without rules in a top-level chain (most have one or two): no array each. */
export const NONE: readonly string[] = Object.freeze([]);

function add(b: ServiceBlock, list: TopLevelLines, line: string): void {
  const lines = b[list];
  if (lines === NONE) (b as { [k in TopLevelLines]: readonly string[] })[list] = [line];
  else (lines as string[]).push(line);
}

/**
 * The chains of one service port and its rules in the top-level chains, following upstream's
 * syncProxyRules for that port. Cheap (one or a few lines): the per-service chains' rules, the bulk of
 * the output, are rendered by `writeBody`.
 */
export function planBlock(p: ServicePortState): ServiceBlock {
  const sel = selectEndpoints(p);
  const name = p.name;
  const proto = p.protocol.toLowerCase();
  const svc = serviceChain(p);
  const svl = serviceLocalChain(p);
  const ext = externalChain(p);
  const fw = firewallChain(p);
  const usesFirewall =
    p.hasEndpoints && p.loadBalancerIPs.length > 0 && p.loadBalancerSourceRanges.length > 0;
  // The chains in the order they are written: EXT, FW, SVC, SVL, then one SEP per endpoint.
  const eps = p.allReachableEndpoints;
  const chains = new Array<string>(
    +sel.externalEntry + +usesFirewall + +sel.dispatchesCluster + +sel.dispatchesLocal + eps.length,
  );
  let k = 0;
  if (sel.externalEntry) chains[k++] = ext;
  if (usesFirewall) chains[k++] = fw;
  if (sel.dispatchesCluster) chains[k++] = svc;
  if (sel.dispatchesLocal) chains[k++] = svl;
  for (const ep of eps) chains[k++] = endpointChain(p, ep);
  const b: ServiceBlock = {
    port: p,
    sel,
    svc,
    svl,
    ext,
    fw,
    usesFirewall,
    chains,
    natServices: NONE,
    natNodePorts: NONE,
    filterServices: NONE,
    filterExternal: NONE,
    filterNodePorts: NONE,
    filterFirewall: NONE,
  };
  const match = (ip: string, port: number) => `-m ${proto} -p ${proto} -d ${ip} --dport ${port}`;
  const internalChain = p.internalPolicyLocal ? b.svl : b.svc;
  const lbChain = b.usesFirewall ? b.fw : b.ext;
  const external = sel.externalNoEndpoints && noEndpointRule(name, sel.externalNoEndpoints);

  // Capture the cluster IP.
  if (!sel.internalNoEndpoints) {
    add(
      b,
      'natServices',
      `-A ${KUBE_SERVICES} ${comment(`${name} cluster IP`)} ${match(p.clusterIP, p.port)} -j ${internalChain}`,
    );
  } else {
    const [target, why] = noEndpointRule(name, sel.internalNoEndpoints);
    add(
      b,
      'filterServices',
      `-A ${KUBE_SERVICES} ${comment(why)} ${match(p.clusterIP, p.port)} -j ${target}`,
    );
  }
  // External IPs.
  for (const ip of p.externalIPs) {
    if (p.hasEndpoints) {
      add(
        b,
        'natServices',
        `-A ${KUBE_SERVICES} ${comment(`${name} external IP`)} ${match(ip, p.port)} -j ${b.ext}`,
      );
    }
    if (external) {
      add(
        b,
        'filterExternal',
        `-A ${KUBE_EXTERNAL_SERVICES} ${comment(external[1])} ${match(ip, p.port)} -j ${external[0]}`,
      );
    }
  }
  // Load-balancer ingress IPs.
  for (const ip of p.loadBalancerIPs) {
    if (p.hasEndpoints) {
      add(
        b,
        'natServices',
        `-A ${KUBE_SERVICES} ${comment(`${name} loadbalancer IP`)} ${match(ip, p.port)} -j ${lbChain}`,
      );
    }
    if (b.usesFirewall) {
      add(
        b,
        'filterFirewall',
        `-A ${KUBE_PROXY_FIREWALL} ${comment(`${name} traffic not accepted by ${b.fw}`)} ${match(ip, p.port)} -j DROP`,
      );
    }
  }
  if (external) {
    for (const ip of p.loadBalancerIPs) {
      add(
        b,
        'filterExternal',
        `-A ${KUBE_EXTERNAL_SERVICES} ${comment(external[1])} ${match(ip, p.port)} -j ${external[0]}`,
      );
    }
  }
  // Node ports.
  if (p.nodePort > 0) {
    if (p.hasEndpoints) {
      add(
        b,
        'natNodePorts',
        `-A ${KUBE_NODEPORTS} ${comment(name)} -m ${proto} -p ${proto} --dport ${p.nodePort} -j ${b.ext}`,
      );
    }
    if (external) {
      add(
        b,
        'filterExternal',
        `-A ${KUBE_EXTERNAL_SERVICES} ${comment(external[1])} -m addrtype --dst-type LOCAL -m ${proto} -p ${proto} --dport ${p.nodePort} -j ${external[0]}`,
      );
    }
  }
  if (p.healthCheckNodePort > 0) {
    add(
      b,
      'filterNodePorts',
      `-A ${KUBE_NODEPORTS} ${comment(`${name} health check node port`)} -m tcp -p tcp --dport ${p.healthCheckNodePort} -j ACCEPT`,
    );
  }

  return b;
}

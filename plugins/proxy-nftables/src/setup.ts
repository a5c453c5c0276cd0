import { type NodeContext, nodePortIPs } from '@nodelet/proxy';
import {
  CLUSTER_IPS,
  FAMILY,
  FIREWALL_IPS,
  MARK_MASQ,
  MASQUERADING,
  NO_ENDPOINT_NODEPORTS,
  NO_ENDPOINT_SERVICES,
  NODEPORT_IPS,
  REJECT_CHAIN,
  SERVICE_IPS,
  SERVICE_NODEPORTS,
  SERVICES,
  TABLE,
} from './names.js';
import { ELEMENT_CONTAINERS } from './port-plan.js';

/** The table, as commands name it. */
export const T = `${FAMILY} ${TABLE}`;

/**
 * Base chains (hooked into netfilter) as upstream: filter chains run just before DNAT (dstnat − 10 = −110)
 * or just after it (−90), so filters see service IPs; nat chains at dstnat (−100) and srcnat (100).
 * Numbers, because nft 1.0.6 refuses the names `dstnat`/`srcnat` in some of these hooks.
 */
const BASE_CHAINS = [
  ['filter-prerouting', 'filter', 'prerouting', '-110'],
  ['filter-input', 'filter', 'input', '-110'],
  ['filter-forward', 'filter', 'forward', '-110'],
  ['filter-output', 'filter', 'output', '-110'],
  ['filter-output-post-dnat', 'filter', 'output', '-90'],
  ['nat-prerouting', 'nat', 'prerouting', '-100'],
  ['nat-output', 'nat', 'output', '-100'],
  ['nat-postrouting', 'nat', 'postrouting', '100'],
] as const;

/** Regular chains jumped to from base chains: [to, from, condition]. */
const JUMPS = [
  ['nodeport-endpoints-check', 'filter-input', 'ct state new'],
  ['service-endpoints-check', 'filter-input', 'ct state new'],
  ['service-endpoints-check', 'filter-forward', 'ct state new'],
  ['service-endpoints-check', 'filter-output', 'ct state new'],
  ['firewall-check', 'filter-prerouting', 'ct state new'],
  ['firewall-check', 'filter-output', 'ct state new'],
  [SERVICES, 'nat-output', ''],
  [SERVICES, 'nat-prerouting', ''],
  [MASQUERADING, 'nat-postrouting', ''],
  ['cluster-ips-check', 'filter-forward', 'ct state new'],
  ['cluster-ips-check', 'filter-output-post-dnat', 'ct state new'],
] as const;

/**
 * The table and its top-level chains, sets and maps (what no service port owns), as a full sync
 * writes them: created, or flushed when the table exists (`fresh`: it does not); `recreate`: the base
 * chains are deleted and made again (the first sync of a process into an existing table, as upstream).
 */
export function setupCommands(node: NodeContext, fresh: boolean, recreate: boolean): string[] {
  const out: string[] = [];
  const mark = `0x${(1 << node.masqueradeBit).toString(16)}`;
  const flush = (what: string) => {
    if (!fresh) out.push(`flush ${what}`);
  };
  out.push(`add table ${T} { comment "rules for kube-proxy" ; }`);
  if (recreate && !fresh) {
    for (const [name] of BASE_CHAINS) out.push(`add chain ${T} ${name}`, `delete chain ${T} ${name}`);
  }
  for (const [name, type, hook, priority] of BASE_CHAINS) {
    out.push(`add chain ${T} ${name} { type ${type} hook ${hook} priority ${priority} ; }`);
    flush(`chain ${T} ${name}`);
  }
  const created = new Set<string>();
  const ensure = (name: string) => {
    if (created.has(name)) return;
    created.add(name);
    out.push(`add chain ${T} ${name}`);
    flush(`chain ${T} ${name}`);
  };
  for (const [to, from, cond] of JUMPS) {
    ensure(to);
    out.push(`add rule ${T} ${from}${cond ? ` ${cond}` : ''} jump ${to}`);
  }
  for (const c of [SERVICES, 'cluster-ips-check', MASQUERADING, MARK_MASQ]) ensure(c);
  out.push(`add rule ${T} ${MARK_MASQ} mark set mark or ${mark}`);
  out.push(`add rule ${T} ${MASQUERADING} mark and ${mark} == 0 return`);
  out.push(`add rule ${T} ${MASQUERADING} mark set mark xor ${mark}`);
  out.push(`add rule ${T} ${MASQUERADING} masquerade fully-random`);
  out.push(`add set ${T} ${CLUSTER_IPS} { type ipv4_addr ; comment "Active ClusterIPs" ; }`);
  out.push(
    `add rule ${T} cluster-ips-check ip daddr @${CLUSTER_IPS} reject comment "Reject traffic to invalid ports of ClusterIPs"`,
  );
  out.push(`add set ${T} ${NODEPORT_IPS} { type ipv4_addr ; comment "IPs that accept NodePort traffic" ; }`);
  const matchAll = node.nodePortAddresses.length === 0;
  if (matchAll) out.push(`delete set ${T} ${NODEPORT_IPS}`);
  else {
    flush(`set ${T} ${NODEPORT_IPS}`);
    for (const ip of nodePortIPs(node.nodeIPs, node.nodePortAddresses)) {
      if (!ip.startsWith('127.')) out.push(`add element ${T} ${NODEPORT_IPS} { ${ip} }`);
    }
  }
  out.push(
    `add map ${T} ${NO_ENDPOINT_SERVICES} { type ipv4_addr . inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to services with no endpoints" ; }`,
  );
  out.push(
    `add map ${T} ${NO_ENDPOINT_NODEPORTS} { type inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to service nodeports with no endpoints" ; }`,
  );
  out.push(
    `add chain ${T} ${REJECT_CHAIN} { comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ; }`,
  );
  flush(`chain ${T} ${REJECT_CHAIN}`);
  out.push(`add rule ${T} ${REJECT_CHAIN} reject`);
  out.push(
    `add rule ${T} service-endpoints-check ip daddr . meta l4proto . th dport vmap @${NO_ENDPOINT_SERVICES}`,
  );
  out.push(
    matchAll
      ? `add rule ${T} nodeport-endpoints-check ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @${NO_ENDPOINT_NODEPORTS}`
      : `add rule ${T} nodeport-endpoints-check ip daddr @${NODEPORT_IPS} meta l4proto . th dport vmap @${NO_ENDPOINT_NODEPORTS}`,
  );
  out.push(
    `add map ${T} ${FIREWALL_IPS} { type ipv4_addr . inet_proto . inet_service : verdict ; comment "destinations that are subject to LoadBalancerSourceRanges" ; }`,
  );
  out.push(`add rule ${T} firewall-check ip daddr . meta l4proto . th dport vmap @${FIREWALL_IPS}`);
  out.push(
    `add map ${T} ${SERVICE_IPS} { type ipv4_addr . inet_proto . inet_service : verdict ; comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; }`,
  );
  out.push(
    `add map ${T} ${SERVICE_NODEPORTS} { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }`,
  );
  out.push(`add rule ${T} ${SERVICES} ip daddr . meta l4proto . th dport vmap @${SERVICE_IPS}`);
  out.push(
    matchAll
      ? `add rule ${T} ${SERVICES} fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @${SERVICE_NODEPORTS}`
      : `add rule ${T} ${SERVICES} ip daddr @${NODEPORT_IPS} meta l4proto . th dport vmap @${SERVICE_NODEPORTS}`,
  );
  for (const [, name, kind] of ELEMENT_CONTAINERS) flush(`${kind} ${T} ${name}`);
  return out;
}

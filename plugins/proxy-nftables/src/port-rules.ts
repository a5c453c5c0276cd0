import {
  type Body,
  bodyLayout,
  cidrContains,
  type EndpointInfo,
  type NodeContext,
  type ServicePortState,
  type TextArena,
} from '@nodelet/proxy';
import { affinitySet, endpointChain, MARK_MASQ } from './names.js';
import type { NftPortPlan } from './port-plan.js';

/**
 * Renders the chains of a port's plan into `arena` as one range, chain after chain in the order of
 * `plan.chains`, each as it goes into a `table … { }` block: `\tchain NAME {`, its rules, `\t}`. An
 * endpoint's affinity set is declared just before its chain (the chain's preamble: written with it,
 * not compared with it). Without `keepLayout` the body's layout is shared scratch (see `bodyLayout`).
 */
export function writeBody(plan: NftPortPlan, node: NodeContext, arena: TextArena, keepLayout = true): Body {
  const p = plan.port;
  const n = plan.chains.length;
  const endpoints = p.allReachableEndpoints;
  const affinity = p.sessionAffinity === 'ClientIP';
  const layout = bodyLayout(n, keepLayout);
  let ruleCount = 0;
  arena.begin();
  for (let i = 0; i < n; i++) {
    const chain = plan.chains[i]!;
    layout[i] = arena.written;
    const ep = i < endpoints.length ? endpoints[i]! : undefined;
    if (ep && affinity) {
      arena
        .text('\tset ')
        .text(affinitySet(p, ep))
        .text(' { type ipv4_addr ; flags dynamic,timeout ; timeout ')
        .text(String(p.stickyMaxAgeSeconds))
        .text('s ; }\n');
    }
    layout[2 * n + 1 + i] = arena.written - layout[i]!;
    arena.text('\tchain ').text(chain).text(' {\n');
    const rules = ep ? endpointRules(p, ep, affinity) : policyRules(plan, chain, node);
    for (const r of rules) arena.text('\t\t').line(r);
    arena.line('\t}');
    layout[n + 1 + i] = rules.length;
    ruleCount += rules.length;
  }
  layout[n] = arena.written;
  return { span: arena.end(ruleCount), layout };
}

/** An endpoint chain: masquerade hairpin traffic, remember the client for affinity, DNAT. */
function endpointRules(p: ServicePortState, ep: EndpointInfo, affinity: boolean): string[] {
  const rules = [`ip saddr ${ep.ip} jump ${MARK_MASQ}`];
  if (affinity) rules.push(`update @${affinitySet(p, ep)} { ip saddr }`);
  rules.push(`meta l4proto ${p.protocol.toLowerCase()} dnat to ${ep.endpoint}`);
  return rules;
}

/** The rules of a port's service, local, external or firewall chain. */
function policyRules(plan: NftPortPlan, chain: string, node: NodeContext): string[] {
  const p = plan.port;
  const { sel, svc, local, ext, fw } = plan;
  const rules: string[] = [];
  // Masquerade off-cluster traffic to the cluster IP: the first rule of the internal policy's chain.
  if (chain === (p.internalPolicyLocal ? local : svc) && !sel.internalNoEndpoints) {
    const m = `ip daddr ${p.clusterIP} ${p.protocol.toLowerCase()} dport ${p.port}`;
    if (node.masqueradeAll) rules.push(`${m} jump ${MARK_MASQ}`);
    else if (node.clusterCIDR) rules.push(`${m} ip saddr != ${node.clusterCIDR} jump ${MARK_MASQ}`);
  }
  if (chain === ext) {
    if (!p.externalPolicyLocal) rules.push(`jump ${MARK_MASQ}`);
    else {
      if (node.clusterCIDR)
        rules.push(`ip saddr ${node.clusterCIDR} goto ${svc} comment "short-circuit pod traffic"`);
      rules.push(`fib saddr type local jump ${MARK_MASQ} comment "masquerade local traffic"`);
      rules.push(`fib saddr type local goto ${svc} comment "short-circuit local traffic"`);
    }
    if (!sel.externalNoEndpoints) rules.push(`goto ${p.externalPolicyLocal ? local : svc}`);
  } else if (chain === fw) {
    const sources = [...p.loadBalancerSourceRanges];
    if (p.loadBalancerSourceRanges.some((c) => node.nodeIPs.some((ip) => cidrContains(c, ip)))) {
      sources.push(...p.loadBalancerIPs);
    }
    rules.push(`ip saddr != { ${sources.join(', ')} } drop`);
  } else if (chain === svc) {
    dispatch(rules, p, p.clusterEndpoints);
  } else if (chain === local) {
    dispatch(rules, p, p.localEndpoints);
  }
  return rules;
}

/** A service (or local) chain's dispatch: affinity checks, then `numgen random mod N vmap`. */
function dispatch(rules: string[], p: ServicePortState, endpoints: ServicePortState['endpoints']): void {
  if (p.sessionAffinity === 'ClientIP') {
    for (const ep of endpoints) rules.push(`ip saddr @${affinitySet(p, ep)} goto ${endpointChain(p, ep)}`);
  }
  const entries = endpoints.map((ep, i) => `${i} : goto ${endpointChain(p, ep)}`).join(' , ');
  rules.push(`numgen random mod ${endpoints.length} vmap { ${entries} }`);
}

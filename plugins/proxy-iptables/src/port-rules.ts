import {
  cidrContains,
  bodyLayout,
  type Body,
  type NodeContext,
  type ServicePortState,
  type TextArena,
} from '@nodelet/proxy';
import { endpointChain, KUBE_MARK_MASQ } from './chains.js';
import type { ServiceBlock } from './port-plan.js';
import { comment, MASQ_TAIL, probability, protocolPieces } from './rule-text.js';

/**
 * Renders the rules of a block's chains into `arena` as one range, chain after chain in the order of
 * `b.chains`, so consecutive blocks make one contiguous range of output. Each rule goes into the arena
 * as soon as it is made. Without `keepLayout` the body's layout is shared scratch, valid until the next
 * call (enough for writing the body out; not for comparing it).
 */
export function writeBody(
  b: ServiceBlock,
  node: NodeContext,
  large: boolean,
  arena: TextArena,
  keepLayout = true,
): Body {
  const p = b.port;
  const { sel, svc, svl, ext, fw } = b;
  const name = p.name;
  const pieces = protocolPieces(p.protocol);
  const n = b.chains.length;
  const firstSep = n - p.allReachableEndpoints.length;
  const layout = bodyLayout(n, keepLayout);
  let ruleCount = 0;
  arena.begin();

  // Masquerade off-cluster traffic to the cluster IP: the first rule of the internal policy's chain.
  const internalChain = p.internalPolicyLocal ? svl : svc;
  const masquerade = !sel.internalNoEndpoints && (node.masqueradeAll || !!node.clusterCIDR);
  for (let i = 0; i < firstSep; i++) {
    const c = b.chains[i]!;
    layout[i] = arena.written;
    let count = 0;
    if (c === internalChain && masquerade) {
      //   -A CHAIN -m comment --comment "NAME cluster IP" -m P -p P -d IP --dport PORT [! -s CIDR] -j KUBE-MARK-MASQ
      arena
        .text('-A ')
        .text(c)
        .text(' ')
        .text(comment(`${name} cluster IP`))
        .text(pieces.destination);
      arena.text(p.clusterIP).text(' --dport ').text(String(p.port));
      if (!node.masqueradeAll) arena.text(' ! -s ').text(node.clusterCIDR!);
      arena.text(MASQ_TAIL);
      count++;
    }
    const lines: string[] = [];
    if (c === ext) {
      // The external-destinations chain.
      if (!p.externalPolicyLocal) {
        lines.push(
          `-A ${ext} ${comment(`masquerade traffic for ${name} external destinations`)} -j ${KUBE_MARK_MASQ}`,
        );
      } else {
        if (node.clusterCIDR) {
          lines.push(
            `-A ${ext} ${comment(`pod traffic for ${name} external destinations`)} -s ${node.clusterCIDR} -j ${svc}`,
          );
        }
        lines.push(
          `-A ${ext} ${comment(`masquerade LOCAL traffic for ${name} external destinations`)} -m addrtype --src-type LOCAL -j ${KUBE_MARK_MASQ}`,
          `-A ${ext} ${comment(`route LOCAL traffic for ${name} external destinations`)} -m addrtype --src-type LOCAL -j ${svc}`,
        );
      }
      if (!sel.externalNoEndpoints) lines.push(`-A ${ext} -j ${p.externalPolicyLocal ? svl : svc}`);
    } else if (c === fw) {
      // The load-balancer source-range firewall chain.
      const head = `-A ${fw} ${comment(`${name} loadbalancer IP`)}`;
      let allowFromNode = false;
      for (const cidr of p.loadBalancerSourceRanges) {
        lines.push(`${head} -s ${cidr} -j ${ext}`);
        if (node.nodeIPs.some((ip) => cidrContains(cidr, ip))) allowFromNode = true;
      }
      if (allowFromNode) for (const ip of p.loadBalancerIPs) lines.push(`${head} -s ${ip} -j ${ext}`);
      lines.push(`-A ${fw} ${comment(`other traffic to ${name} will be dropped by KUBE-PROXY-FIREWALL`)}`);
    }
    for (const l of lines) arena.line(l);
    count += lines.length;
    if (c === svc) {
      count += dispatch(arena, p, svc, p.clusterEndpoints, b.chains, firstSep, large);
    } else if (c === svl) {
      count += dispatch(arena, p, svl, p.localEndpoints, b.chains, firstSep, large);
    }
    layout[n + 1 + i] = count;
    ruleCount += count;
  }
  // One endpoint chain per reachable endpoint:
  //   -A KUBE-SEP-X [-m comment --comment NAME] -s IP -j KUBE-MARK-MASQ
  //   -A KUBE-SEP-X [-m comment --comment NAME] [-m recent --name KUBE-SEP-X --set] -m P -p P -j DNAT --to-destination IP:PORT
  const sepHead = large ? '' : ` ${comment(name)}`;
  const dnat = pieces.dnat;
  const affinity = p.sessionAffinity === 'ClientIP';
  const endpoints = p.allReachableEndpoints;
  for (let i = 0; i < endpoints.length; i++) {
    const sep = b.chains[firstSep + i]!;
    const ep = endpoints[i]!;
    layout[firstSep + i] = arena.written;
    // Written piece by piece: no string per rule (a render's garbage is what makes it touch new memory).
    arena.text('-A ').text(sep).text(sepHead).text(' -s ').text(ep.ip).text(MASQ_TAIL);
    arena.text('-A ').text(sep).text(sepHead);
    if (affinity) arena.text(' -m recent --name ').text(sep).text(' --set');
    arena.text(dnat).text(ep.endpoint).newline();
    layout[n + 1 + firstSep + i] = 2;
    ruleCount += 2;
  }
  layout[n] = arena.written;
  return { span: arena.end(ruleCount), layout };
}

/**
 * A service (or service-local) chain's dispatch, written into the open range of `arena`: affinity
 * checks, then one rule per endpoint, each but the last taken with probability 1/(endpoints left).
 * Returns the number of rules. The endpoint chains' names are `chains` from `firstSep` on when `endpoints`
 * is the port's list of reachable endpoints (the usual case), else computed.
 *
 *   -A CHAIN [-m comment --comment "NAME -> IP:PORT"] -m recent --name SEP --rcheck --seconds T --reap -j SEP
 *   -A CHAIN [-m comment --comment "NAME -> IP:PORT"] [-m statistic --mode random --probability P] -j SEP
 */
function dispatch(
  arena: TextArena,
  p: ServicePortState,
  chain: string,
  endpoints: ServicePortState['endpoints'],
  chains: readonly string[],
  firstSep: number,
  large: boolean,
): number {
  const n = endpoints.length;
  const reachable = endpoints === p.allReachableEndpoints;
  const names = reachable ? chains : endpoints.map((ep) => endpointChain(p, ep));
  const first = reachable ? firstSep : 0;
  // The comment "NAME -> IP:PORT" always has spaces, so it is always quoted.
  const commentHead = large ? '' : ` -m comment --comment "${p.name.replace(/"/g, '\\"')} -> `;
  const ruleHead = (i: number) => {
    arena.text('-A ').text(chain);
    if (!large) arena.text(commentHead).text(endpoints[i]!.endpoint).text('"');
    return arena;
  };
  if (p.sessionAffinity === 'ClientIP') {
    const check = ` --rcheck --seconds ${p.stickyMaxAgeSeconds} --reap -j `;
    for (let i = 0; i < n; i++) {
      const sep = names[first + i]!;
      ruleHead(i).text(' -m recent --name ').text(sep).text(check).text(sep).newline();
    }
  }
  for (let i = 0; i < n; i++) {
    ruleHead(i);
    if (i < n - 1) arena.text(' -m statistic --mode random --probability ').text(probability(n - i));
    arena
      .text(' -j ')
      .text(names[first + i]!)
      .newline();
  }
  return (p.sessionAffinity === 'ClientIP' ? 2 : 1) * n;
}

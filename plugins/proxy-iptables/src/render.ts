import {
  type ChangeSet,
  cidrContains,
  externallyAccessible,
  type NodeContext,
  nodePortIPs,
  type ProxyState,
  type ServicePortState,
  sortedServicePorts,
  usesClusterEndpoints,
  usesLocalEndpoints,
} from '@nodelet/proxy';
import {
  endpointChain,
  externalChain,
  FILTER_CHAINS,
  firewallChain,
  isServiceChain,
  type JumpRule,
  KUBE_EXTERNAL_SERVICES,
  KUBE_FORWARD,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_CANARY,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  NAT_CHAINS,
  serviceChain,
  serviceLocalChain,
} from './chains.js';

/** Above this many endpoints, per-endpoint comments are left out (upstream's "large cluster mode"). */
export const LARGE_CLUSTER_ENDPOINTS = 1000;

/** The rules one service port contributes, by the chain they go to. */
interface ServiceBlock {
  /** nat chains this service port owns (SVC, SVL, EXT, FW, SEP), in the order they are written. */
  chains: string[];
  /** The `-A` lines of each of those chains, as one text per chain. */
  chainRules: Map<string, string>;
  /** How many `-A` lines `chainRules` holds. */
  ruleCount: number;
  natServices: string[];
  natNodePorts: string[];
  filterServices: string[];
  filterExternal: string[];
  filterNodePorts: string[];
  filterFirewall: string[];
}

export interface RenderOutput {
  /** iptables-restore input; '' when nothing needs writing. */
  text: string;
  full: boolean;
  /** Top-level chain contents of this render, keyed `table chain`. */
  topLevel: Map<string, string>;
  /** Every per-service nat chain the rules now use, with its rules. */
  activeChains: Map<string, string>;
  /** Chain lines (created or flushed) and rule lines written. */
  chainsWritten: number;
  rulesWritten: number;
  deletedChains: string[];
}

export interface RenderInput {
  state: ProxyState;
  changes: ChangeSet;
  full: boolean;
  /** Per-service chains present in the kernel (from iptables-save); deleted when unused. Full syncs only. */
  existingChains?: ReadonlySet<string>;
  /** Jump rules missing from the built-in chains; inserted in the same transaction. */
  missingJumps?: readonly JumpRule[];
}

const quote = (s: string) => (/[\s"]/.test(s) ? `"${s.replace(/"/g, '\\"')}"` : s);
const comment = (s: string) => `-m comment --comment ${quote(s)}`;
const probability = (n: number) => (1 / n).toFixed(10);

/**
 * Renders upstream-shaped iptables rules (filter + nat) as iptables-restore input, and remembers what it
 * rendered so the next render can be partial (KEP-3453): only the chains of changed service ports, only
 * the top-level chains whose content changed, and deletion of the chains nothing uses any more. After a
 * successful restore call `applied(output)`; after a failed one `reset()`, which makes the next render full.
 */
export class IptablesRenderer {
  private readonly blocks = new Map<string, ServiceBlock>();
  private appliedTop: Map<string, string> | undefined;
  /** Per-service chains in the kernel and their rules, as last applied. */
  private appliedChains = new Map<string, string>();
  private largeClusterMode = false;

  /** Whether a partial render is possible (a full one was applied and nothing failed since). */
  get canPartial(): boolean {
    return this.appliedTop !== undefined;
  }

  render(input: RenderInput): RenderOutput {
    const { state, changes } = input;
    let full = input.full || !this.appliedTop;
    const totalEndpoints = [...state.servicePorts.values()].reduce((n, p) => n + p.endpoints.length, 0);
    const large = totalEndpoints > LARGE_CLUSTER_ENDPOINTS;
    if (large !== this.largeClusterMode) {
      this.largeClusterMode = large;
      full = true;
    }
    const mark = `0x${(1 << state.node.masqueradeBit).toString(16)}`;
    const rerendered = new Set<string>();
    if (full) {
      this.blocks.clear();
      for (const p of state.servicePorts.values()) {
        this.blocks.set(p.name, renderBlock(p, state.node, large));
        rerendered.add(p.name);
      }
    } else {
      for (const name of changes.removed) this.blocks.delete(name);
      for (const name of changes.updated) {
        const p = state.servicePorts.get(name);
        if (!p) continue;
        this.blocks.set(name, renderBlock(p, state.node, large));
        rerendered.add(name);
      }
    }

    const ordered = sortedServicePorts(state).map((p) => this.blocks.get(p.name)!);
    const top = new Map<string, string[]>();
    const put = (table: string, chain: string, lines: string[]) => top.set(`${table} ${chain}`, lines);
    const collect = (pick: (b: ServiceBlock) => string[]) => ordered.flatMap(pick);
    put(
      'filter',
      KUBE_SERVICES,
      collect((b) => b.filterServices),
    );
    put(
      'filter',
      KUBE_EXTERNAL_SERVICES,
      collect((b) => b.filterExternal),
    );
    put(
      'filter',
      KUBE_NODEPORTS,
      collect((b) => b.filterNodePorts),
    );
    put(
      'filter',
      KUBE_PROXY_FIREWALL,
      collect((b) => b.filterFirewall),
    );
    put('filter', KUBE_FORWARD, [
      `-A ${KUBE_FORWARD} -m conntrack --ctstate INVALID -j DROP`,
      `-A ${KUBE_FORWARD} ${comment('kubernetes forwarding rules')} -m mark --mark ${mark}/${mark} -j ACCEPT`,
      `-A ${KUBE_FORWARD} ${comment('kubernetes forwarding conntrack rule')} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
    ]);
    put('nat', KUBE_POSTROUTING, [
      `-A ${KUBE_POSTROUTING} -m mark ! --mark ${mark}/${mark} -j RETURN`,
      `-A ${KUBE_POSTROUTING} -j MARK --xor-mark ${mark}`,
      `-A ${KUBE_POSTROUTING} ${comment('kubernetes service traffic requiring SNAT')} -j MASQUERADE --random-fully`,
    ]);
    put('nat', KUBE_MARK_MASQ, [`-A ${KUBE_MARK_MASQ} -j MARK --or-mark ${mark}`]);
    put('nat', KUBE_SERVICES, [...collect((b) => b.natServices), ...nodePortsTail(state.node)]);
    put(
      'nat',
      KUBE_NODEPORTS,
      collect((b) => b.natNodePorts),
    );

    const topLevel = new Map([...top].map(([k, lines]) => [k, lines.join('\n')]));
    const changedTop = (key: string) => full || this.appliedTop!.get(key) !== topLevel.get(key);

    const activeChains = new Map<string, string>();
    for (const b of ordered) for (const c of b.chains) activeChains.set(c, b.chainRules.get(c) ?? '');
    const stale = new Set<string>();
    const known = full ? (input.existingChains ?? new Set<string>()) : this.appliedChains.keys();
    for (const c of known) if (isServiceChain(c) && !activeChains.has(c)) stale.add(c);
    if (full) for (const c of this.appliedChains.keys()) if (!activeChains.has(c)) stale.add(c);

    const out: string[] = [];
    let chainsWritten = 0;
    let rulesWritten = 0;
    const jumps = input.missingJumps ?? [];
    for (const table of ['filter', 'nat'] as const) {
      const tops = table === 'filter' ? FILTER_CHAINS : NAT_CHAINS;
      const topChanged = tops.filter((c) => changedTop(`${table} ${c}`));
      const tableJumps = jumps.filter((j) => j.table === table);
      const serviceChains: string[] = [];
      const serviceRules: string[] = [];
      let serviceRuleCount = 0;
      if (table === 'nat') {
        // Only chains whose rules differ from what the kernel has: an endpoint change rewrites the
        // service chain and adds one endpoint chain, not every endpoint chain of that service.
        for (const p of sortedServicePorts(state)) {
          if (!rerendered.has(p.name)) continue;
          const b = this.blocks.get(p.name)!;
          for (const c of b.chains) {
            const text = b.chainRules.get(c) ?? '';
            if (!full && this.appliedChains.get(c) === text) continue;
            serviceChains.push(c);
            if (text) {
              serviceRules.push(text);
              serviceRuleCount += full ? 0 : text.split('\n').length;
            }
          }
        }
      }
      const staleHere = table === 'nat' ? [...stale].sort() : [];
      if (
        topChanged.length === 0 &&
        tableJumps.length === 0 &&
        serviceChains.length === 0 &&
        staleHere.length === 0
      ) {
        continue;
      }
      out.push(`*${table}`);
      for (const c of topChanged) out.push(`:${c} - [0:0]`);
      for (const c of serviceChains) out.push(`:${c} - [0:0]`);
      for (const c of staleHere) out.push(`:${c} - [0:0]`);
      chainsWritten += topChanged.length + serviceChains.length;
      for (const j of tableJumps) {
        out.push(`-I ${j.from} 1${j.extra ? ` ${j.extra}` : ''} ${comment(j.comment)} -j ${j.to}`);
        rulesWritten++;
      }
      for (const c of topChanged) {
        const lines = top.get(`${table} ${c}`)!;
        for (const l of lines) out.push(l);
        rulesWritten += lines.length;
      }
      for (const r of serviceRules) out.push(r);
      rulesWritten +=
        full && table === 'nat' ? ordered.reduce((n, b) => n + b.ruleCount, 0) : serviceRuleCount;
      for (const c of staleHere) out.push(`-X ${c}`);
      out.push('COMMIT');
    }
    if (full) {
      // The canary: an empty chain whose disappearance means someone flushed the tables (upstream's
      // KUBE-PROXY-CANARY). Partial syncs check it and turn into a full sync when it is gone.
      out.push('*mangle', `:${KUBE_PROXY_CANARY} - [0:0]`, 'COMMIT');
    }
    return {
      text: out.length > 0 ? out.join('\n') + '\n' : '',
      full,
      topLevel,
      activeChains,
      chainsWritten,
      rulesWritten,
      deletedChains: [...stale].sort(),
    };
  }

  /** Records that `output` is now in the kernel: the base for the next partial render. */
  applied(output: RenderOutput): void {
    this.appliedTop = output.topLevel;
    this.appliedChains = output.activeChains;
  }

  /** Forgets what was applied: the next render is full. */
  reset(): void {
    this.appliedTop = undefined;
  }
}

function nodePortsTail(node: NodeContext): string[] {
  const c = comment('kubernetes service nodeports; NOTE: this must be the last rule in this chain');
  if (node.nodePortAddresses.length === 0) {
    return [`-A ${KUBE_SERVICES} ${c} -m addrtype --dst-type LOCAL ! -d 127.0.0.0/8 -j ${KUBE_NODEPORTS}`];
  }
  return nodePortIPs(node.nodeIPs, node.nodePortAddresses)
    .filter((ip) => !ip.startsWith('127.'))
    .map((ip) => `-A ${KUBE_SERVICES} ${c} -d ${ip} -j ${KUBE_NODEPORTS}`);
}

/** The rules of one service port, following upstream's syncProxyRules for that port. */
export function renderBlock(p: ServicePortState, node: NodeContext, large: boolean): ServiceBlock {
  const b: ServiceBlock = {
    chains: [],
    chainRules: new Map(),
    ruleCount: 0,
    natServices: [],
    natNodePorts: [],
    filterServices: [],
    filterExternal: [],
    filterNodePorts: [],
    filterFirewall: [],
  };
  const proto = p.protocol.toLowerCase();
  const name = p.name;
  const add = (chain: string, rule: string) => {
    const prev = b.chainRules.get(chain);
    b.chainRules.set(chain, prev === undefined ? rule : `${prev}\n${rule}`);
    b.ruleCount++;
  };
  const match = (ip: string, port: number) => `-m ${proto} -p ${proto} -d ${ip} --dport ${port}`;
  const svcChain = serviceChain(p);
  const svlChain = serviceLocalChain(p);
  const extChain = externalChain(p);
  const fwChain = firewallChain(p);

  const usesCluster = p.clusterEndpoints.length > 0 && usesClusterEndpoints(p);
  const usesLocal = p.localEndpoints.length > 0 && usesLocalEndpoints(p);
  const internalChain = p.internalPolicyLocal ? svlChain : svcChain;
  const hasInternal = p.hasEndpoints && (!p.internalPolicyLocal || p.localEndpoints.length > 0);
  const externalPolicyChain = p.externalPolicyLocal ? svlChain : svcChain;
  const hasExternal = p.hasEndpoints && (!p.externalPolicyLocal || p.localEndpoints.length > 0);
  const usesExt = p.hasEndpoints && externallyAccessible(p);
  const usesFW = p.hasEndpoints && p.loadBalancerIPs.length > 0 && p.loadBalancerSourceRanges.length > 0;
  const lbChain = usesFW ? fwChain : extChain;

  let internalTarget = '';
  let internalComment = '';
  let externalTarget = '';
  let externalComment = '';
  if (!p.hasEndpoints) {
    internalTarget = externalTarget = 'REJECT';
    internalComment = externalComment = `${name} has no endpoints`;
  } else {
    if (!hasInternal) {
      internalTarget = 'DROP';
      internalComment = `${name} has no local endpoints`;
    }
    if (!hasExternal) {
      externalTarget = 'DROP';
      externalComment = `${name} has no local endpoints`;
    }
  }

  // Capture the cluster IP.
  if (hasInternal) {
    b.natServices.push(
      `-A ${KUBE_SERVICES} ${comment(`${name} cluster IP`)} ${match(p.clusterIP, p.port)} -j ${internalChain}`,
    );
  } else {
    b.filterServices.push(
      `-A ${KUBE_SERVICES} ${comment(internalComment)} ${match(p.clusterIP, p.port)} -j ${internalTarget}`,
    );
  }
  // External IPs.
  for (const ip of p.externalIPs) {
    if (p.hasEndpoints) {
      b.natServices.push(
        `-A ${KUBE_SERVICES} ${comment(`${name} external IP`)} ${match(ip, p.port)} -j ${extChain}`,
      );
    }
    if (!hasExternal) {
      b.filterExternal.push(
        `-A ${KUBE_EXTERNAL_SERVICES} ${comment(externalComment)} ${match(ip, p.port)} -j ${externalTarget}`,
      );
    }
  }
  // Load-balancer ingress IPs.
  for (const ip of p.loadBalancerIPs) {
    if (p.hasEndpoints) {
      b.natServices.push(
        `-A ${KUBE_SERVICES} ${comment(`${name} loadbalancer IP`)} ${match(ip, p.port)} -j ${lbChain}`,
      );
    }
    if (usesFW) {
      b.filterFirewall.push(
        `-A ${KUBE_PROXY_FIREWALL} ${comment(`${name} traffic not accepted by ${fwChain}`)} ${match(ip, p.port)} -j DROP`,
      );
    }
  }
  if (!hasExternal) {
    for (const ip of p.loadBalancerIPs) {
      b.filterExternal.push(
        `-A ${KUBE_EXTERNAL_SERVICES} ${comment(externalComment)} ${match(ip, p.port)} -j ${externalTarget}`,
      );
    }
  }
  // Node ports.
  if (p.nodePort > 0) {
    if (p.hasEndpoints) {
      b.natNodePorts.push(
        `-A ${KUBE_NODEPORTS} ${comment(name)} -m ${proto} -p ${proto} --dport ${p.nodePort} -j ${extChain}`,
      );
    }
    if (!hasExternal) {
      b.filterExternal.push(
        `-A ${KUBE_EXTERNAL_SERVICES} ${comment(externalComment)} -m addrtype --dst-type LOCAL -m ${proto} -p ${proto} --dport ${p.nodePort} -j ${externalTarget}`,
      );
    }
  }
  if (p.healthCheckNodePort > 0) {
    b.filterNodePorts.push(
      `-A ${KUBE_NODEPORTS} ${comment(`${name} health check node port`)} -m tcp -p tcp --dport ${p.healthCheckNodePort} -j ACCEPT`,
    );
  }

  // Masquerade off-cluster traffic to the cluster IP.
  if (hasInternal) {
    const base = `-A ${internalChain} ${comment(`${name} cluster IP`)} ${match(p.clusterIP, p.port)}`;
    if (node.masqueradeAll) add(internalChain, `${base} -j ${KUBE_MARK_MASQ}`);
    else if (node.clusterCIDR) add(internalChain, `${base} ! -s ${node.clusterCIDR} -j ${KUBE_MARK_MASQ}`);
  }
  // The external-destinations chain.
  if (usesExt) {
    b.chains.push(extChain);
    if (!p.externalPolicyLocal) {
      add(
        extChain,
        `-A ${extChain} ${comment(`masquerade traffic for ${name} external destinations`)} -j ${KUBE_MARK_MASQ}`,
      );
    } else {
      if (node.clusterCIDR) {
        add(
          extChain,
          `-A ${extChain} ${comment(`pod traffic for ${name} external destinations`)} -s ${node.clusterCIDR} -j ${svcChain}`,
        );
      }
      add(
        extChain,
        `-A ${extChain} ${comment(`masquerade LOCAL traffic for ${name} external destinations`)} -m addrtype --src-type LOCAL -j ${KUBE_MARK_MASQ}`,
      );
      add(
        extChain,
        `-A ${extChain} ${comment(`route LOCAL traffic for ${name} external destinations`)} -m addrtype --src-type LOCAL -j ${svcChain}`,
      );
    }
    if (hasExternal) add(extChain, `-A ${extChain} -j ${externalPolicyChain}`);
  }
  // The load-balancer source-range firewall chain.
  if (usesFW) {
    b.chains.push(fwChain);
    const head = `-A ${fwChain} ${comment(`${name} loadbalancer IP`)}`;
    let allowFromNode = false;
    for (const cidr of p.loadBalancerSourceRanges) {
      add(fwChain, `${head} -s ${cidr} -j ${extChain}`);
      if (node.nodeIPs.some((ip) => cidrContains(cidr, ip))) allowFromNode = true;
    }
    if (allowFromNode) for (const ip of p.loadBalancerIPs) add(fwChain, `${head} -s ${ip} -j ${extChain}`);
    add(
      fwChain,
      `-A ${fwChain} ${comment(`other traffic to ${name} will be dropped by KUBE-PROXY-FIREWALL`)}`,
    );
  }
  if (usesCluster) {
    b.chains.push(svcChain);
    writeServiceToEndpoints(b, p, svcChain, p.clusterEndpoints, large);
  }
  if (usesLocal) {
    b.chains.push(svlChain);
    writeServiceToEndpoints(b, p, svlChain, p.localEndpoints, large);
  }
  for (const ep of p.allReachableEndpoints) {
    const sep = endpointChain(p, ep);
    b.chains.push(sep);
    const head = `-A ${sep}${large ? '' : ` ${comment(name)}`}`;
    add(sep, `${head} -s ${ep.ip} -j ${KUBE_MARK_MASQ}`);
    const affinity = p.sessionAffinity === 'ClientIP' ? ` -m recent --name ${sep} --set` : '';
    add(sep, `${head}${affinity} -m ${proto} -p ${proto} -j DNAT --to-destination ${ep.endpoint}`);
  }
  return b;
}

function writeServiceToEndpoints(
  b: ServiceBlock,
  p: ServicePortState,
  chain: string,
  endpoints: ServicePortState['endpoints'],
  large: boolean,
): void {
  const c = (ep: { endpoint: string }) => (large ? '' : ` ${comment(`${p.name} -> ${ep.endpoint}`)}`);
  const add = (target: string, rule: string) => {
    const prev = b.chainRules.get(target);
    b.chainRules.set(target, prev === undefined ? rule : `${prev}\n${rule}`);
    b.ruleCount++;
  };
  if (p.sessionAffinity === 'ClientIP') {
    for (const ep of endpoints) {
      const sep = endpointChain(p, ep);
      add(
        chain,
        `-A ${chain}${c(ep)} -m recent --name ${sep} --rcheck --seconds ${p.stickyMaxAgeSeconds} --reap -j ${sep}`,
      );
    }
  }
  const n = endpoints.length;
  endpoints.forEach((ep, i) => {
    const stat = i < n - 1 ? ` -m statistic --mode random --probability ${probability(n - i)}` : '';
    add(chain, `-A ${chain}${c(ep)}${stat} -j ${endpointChain(p, ep)}`);
  });
}

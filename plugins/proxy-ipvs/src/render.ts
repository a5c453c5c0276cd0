import {
  type EndpointInfo,
  type NodeContext,
  nodePortIPs,
  type ProxyState,
  type ServicePortState,
  selectEndpoints,
  sortedServicePorts,
} from '@nodelet/proxy';

/** IPVS schedulers nodelet offers (ipvsadm `-s`): round robin, least connection, weighted round robin, source hashing, destination hashing. */
export const SCHEDULERS = ['rr', 'lc', 'wrr', 'sh', 'dh'] as const;
export type Scheduler = (typeof SCHEDULERS)[number];

/** The dummy interface that holds every service IP, so the node accepts packets for them (upstream kube-ipvs0). */
export const DUMMY_INTERFACE = 'kube-ipvs0';

export interface RealServer {
  address: string;
  port: number;
  weight: number;
}

export interface VirtualServer {
  protocol: 'TCP' | 'UDP' | 'SCTP';
  address: string;
  port: number;
  scheduler: Scheduler;
  /** Persistence timeout in seconds (sessionAffinity ClientIP); 0 for none. */
  persistence: number;
  realServers: RealServer[];
  /** The service port it serves and what kind of address this is, for reading the output. */
  servicePort: string;
  kind: 'cluster IP' | 'external IP' | 'load balancer IP' | 'node port';
}

export interface IpvsRender {
  virtualServers: VirtualServer[];
  /** Every ipset with its type and entries. */
  sets: Map<string, { type: string; comment: string; entries: Set<string> }>;
  /** Addresses bound to kube-ipvs0. */
  addresses: string[];
  /** `ipvsadm --restore` input creating every virtual and real server. */
  ipvsadm: string;
  /** `ipset restore` input: the sets the iptables helpers match on. */
  ipset: string;
  /** `iptables-restore --noflush` input: masquerade, node-port and hairpin helpers. */
  iptables: string;
}

const protoFlag = { TCP: '-t', UDP: '-u', SCTP: '--sctp-service' } as const;

/** ipvsadm's service spec: `-t 10.96.0.10:80`. */
export const serviceSpec = (vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>) =>
  `${protoFlag[vs.protocol]} ${vs.address}:${vs.port}`;

function reals(endpoints: readonly EndpointInfo[]): RealServer[] {
  return endpoints.map((e) => ({ address: e.ip, port: e.port, weight: 1 }));
}

/** The virtual servers of one service port: its cluster IP, external and LB IPs, and node port per node IP. */
export function virtualServersOf(
  p: ServicePortState,
  node: NodeContext,
  scheduler: Scheduler,
): VirtualServer[] {
  if (!p.hasEndpoints) return [];
  const sel = selectEndpoints(p);
  const internal = reals(sel.internal);
  const external = reals(sel.external);
  const base = {
    protocol: p.protocol,
    scheduler,
    persistence: p.sessionAffinity === 'ClientIP' ? p.stickyMaxAgeSeconds : 0,
    servicePort: p.name,
  };
  const out: VirtualServer[] = [
    { ...base, address: p.clusterIP, port: p.port, realServers: internal, kind: 'cluster IP' },
  ];
  for (const ip of p.externalIPs)
    out.push({ ...base, address: ip, port: p.port, realServers: external, kind: 'external IP' });
  for (const ip of p.loadBalancerIPs)
    out.push({ ...base, address: ip, port: p.port, realServers: external, kind: 'load balancer IP' });
  if (p.nodePort > 0) {
    for (const ip of nodePortIPs(node.nodeIPs, node.nodePortAddresses)) {
      out.push({ ...base, address: ip, port: p.nodePort, realServers: external, kind: 'node port' });
    }
  }
  return out;
}

/**
 * Renders IPVS mode as upstream lays it out: virtual servers with masquerading real servers (`-m`), the
 * kube-ipvs0 addresses, and the ipset + iptables helpers that masquerade off-cluster and hairpin traffic
 * and accept node ports. Services without endpoints get no virtual server (connections are refused by
 * the node, as no one listens on the address).
 */
export function renderIpvs(state: ProxyState, scheduler: Scheduler = 'rr'): IpvsRender {
  const node = state.node;
  const mark = `0x${(1 << node.masqueradeBit).toString(16)}`;
  const virtualServers: VirtualServer[] = [];
  const addresses = new Set<string>();
  const sets: IpvsRender['sets'] = new Map();
  const set = (name: string, type: string, comment: string) => {
    let s = sets.get(name);
    if (!s) sets.set(name, (s = { type, comment, entries: new Set() }));
    return s.entries;
  };
  // Declared in a fixed order, so the output is the same whatever the services.
  set(
    'KUBE-LOOP-BACK',
    'hash:ip,port,ip',
    'Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose',
  );
  set('KUBE-CLUSTER-IP', 'hash:ip,port', 'Kubernetes service cluster ip + port for masquerade purpose');
  set(
    'KUBE-EXTERNAL-IP',
    'hash:ip,port',
    'Kubernetes service external ip + port for masquerade and filter purpose',
  );
  set(
    'KUBE-EXTERNAL-IP-LOCAL',
    'hash:ip,port',
    'Kubernetes service external ip + port with externalTrafficPolicy=local',
  );
  set('KUBE-LOAD-BALANCER', 'hash:ip,port', 'Kubernetes service lb portal');
  set(
    'KUBE-LOAD-BALANCER-LOCAL',
    'hash:ip,port',
    'Kubernetes service load balancer ip + port with externalTrafficPolicy=local',
  );
  set(
    'KUBE-LOAD-BALANCER-FW',
    'hash:ip,port',
    'Kubernetes service load balancer ip + port for load balancer with sourceRange',
  );
  set(
    'KUBE-LOAD-BALANCER-SOURCE-CIDR',
    'hash:ip,port,net',
    'Kubernetes service load balancer ip + port + source cidr for packet filter purpose',
  );
  set('KUBE-NODE-PORT-TCP', 'bitmap:port', 'Kubernetes nodeport TCP port for masquerade purpose');
  set(
    'KUBE-NODE-PORT-LOCAL-TCP',
    'bitmap:port',
    'Kubernetes nodeport TCP port with externalTrafficPolicy=local',
  );
  set('KUBE-NODE-PORT-UDP', 'bitmap:port', 'Kubernetes nodeport UDP port for masquerade purpose');
  set(
    'KUBE-NODE-PORT-LOCAL-UDP',
    'bitmap:port',
    'Kubernetes nodeport UDP port with externalTrafficPolicy=local',
  );
  set('KUBE-HEALTH-CHECK-NODE-PORT', 'bitmap:port', 'Kubernetes health check node port');

  for (const p of sortedServicePorts(state)) {
    const proto = p.protocol.toLowerCase();
    const vss = virtualServersOf(p, node, scheduler);
    virtualServers.push(...vss);
    if (!p.hasEndpoints) continue;
    addresses.add(p.clusterIP);
    set('KUBE-CLUSTER-IP', '', '').add(`${p.clusterIP},${proto}:${p.port}`);
    for (const ep of p.allReachableEndpoints)
      set('KUBE-LOOP-BACK', '', '').add(`${ep.ip},${proto}:${ep.port},${ep.ip}`);
    for (const ip of p.externalIPs) {
      addresses.add(ip);
      set(p.externalPolicyLocal ? 'KUBE-EXTERNAL-IP-LOCAL' : 'KUBE-EXTERNAL-IP', '', '').add(
        `${ip},${proto}:${p.port}`,
      );
    }
    for (const ip of p.loadBalancerIPs) {
      addresses.add(ip);
      set('KUBE-LOAD-BALANCER', '', '').add(`${ip},${proto}:${p.port}`);
      if (p.externalPolicyLocal) set('KUBE-LOAD-BALANCER-LOCAL', '', '').add(`${ip},${proto}:${p.port}`);
      if (p.loadBalancerSourceRanges.length > 0) {
        set('KUBE-LOAD-BALANCER-FW', '', '').add(`${ip},${proto}:${p.port}`);
        for (const cidr of p.loadBalancerSourceRanges)
          set('KUBE-LOAD-BALANCER-SOURCE-CIDR', '', '').add(`${ip},${proto}:${p.port},${cidr}`);
      }
    }
    if (p.nodePort > 0 && p.protocol !== 'SCTP') {
      const P = p.protocol;
      set(`KUBE-NODE-PORT-${P}`, '', '').add(String(p.nodePort));
      if (p.externalPolicyLocal) set(`KUBE-NODE-PORT-LOCAL-${P}`, '', '').add(String(p.nodePort));
    }
    if (p.healthCheckNodePort > 0)
      set('KUBE-HEALTH-CHECK-NODE-PORT', '', '').add(String(p.healthCheckNodePort));
  }

  const ipvsadm = virtualServers
    .flatMap((vs) => [
      `-A ${serviceSpec(vs)} -s ${vs.scheduler}${vs.persistence ? ` -p ${vs.persistence}` : ''}`,
      ...vs.realServers.map((r) => `-a ${serviceSpec(vs)} -r ${r.address}:${r.port} -m -w ${r.weight}`),
    ])
    .join('\n');

  const ipset = ipsetScript(sets, undefined);

  const c = (text: string) => `-m comment --comment "${text}"`;
  const masqCluster = node.masqueradeAll
    ? `-A KUBE-SERVICES ${c('Kubernetes service cluster ip + port for masquerade purpose')} -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ`
    : node.clusterCIDR
      ? `-A KUBE-SERVICES ${c('Kubernetes service cluster ip + port for masquerade purpose')} ! -s ${node.clusterCIDR} -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ`
      : '';
  const iptables = [
    '*nat',
    ':KUBE-SERVICES - [0:0]',
    ':KUBE-POSTROUTING - [0:0]',
    ':KUBE-NODE-PORT - [0:0]',
    ':KUBE-LOAD-BALANCER - [0:0]',
    ':KUBE-MARK-MASQ - [0:0]',
    `-A KUBE-POSTROUTING ${c('Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose')} -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE`,
    `-A KUBE-POSTROUTING -m mark ! --mark ${mark}/${mark} -j RETURN`,
    `-A KUBE-POSTROUTING -j MARK --xor-mark ${mark}`,
    `-A KUBE-POSTROUTING ${c('kubernetes service traffic requiring SNAT')} -j MASQUERADE --random-fully`,
    `-A KUBE-MARK-MASQ -j MARK --or-mark ${mark}`,
    ...(masqCluster ? [masqCluster] : []),
    `-A KUBE-SERVICES ${c('Kubernetes service external ip + port for masquerade and filter purpose')} -m set --match-set KUBE-EXTERNAL-IP dst,dst -j KUBE-MARK-MASQ`,
    `-A KUBE-SERVICES ${c('Kubernetes service lb portal')} -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER`,
    `-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT`,
    `-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT`,
    `-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT`,
    `-A KUBE-LOAD-BALANCER ${c('Kubernetes service load balancer ip + port with externalTrafficPolicy=local')} -m set --match-set KUBE-LOAD-BALANCER-LOCAL dst,dst -j RETURN`,
    `-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ`,
    `-A KUBE-NODE-PORT -p tcp ${c('Kubernetes nodeport TCP port with externalTrafficPolicy=local')} -m set --match-set KUBE-NODE-PORT-LOCAL-TCP dst -j RETURN`,
    `-A KUBE-NODE-PORT -p tcp ${c('Kubernetes nodeport TCP port for masquerade purpose')} -m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ`,
    `-A KUBE-NODE-PORT -p udp ${c('Kubernetes nodeport UDP port with externalTrafficPolicy=local')} -m set --match-set KUBE-NODE-PORT-LOCAL-UDP dst -j RETURN`,
    `-A KUBE-NODE-PORT -p udp ${c('Kubernetes nodeport UDP port for masquerade purpose')} -m set --match-set KUBE-NODE-PORT-UDP dst -j KUBE-MARK-MASQ`,
    'COMMIT',
    '*filter',
    ':KUBE-FORWARD - [0:0]',
    ':KUBE-PROXY-FIREWALL - [0:0]',
    `-A KUBE-FORWARD ${c('kubernetes forwarding rules')} -m mark --mark ${mark}/${mark} -j ACCEPT`,
    `-A KUBE-FORWARD ${c('kubernetes forwarding conntrack rule')} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
    `-A KUBE-PROXY-FIREWALL ${c('Kubernetes service load balancer ip + port for load balancer with sourceRange')} -m set --match-set KUBE-LOAD-BALANCER-FW dst,dst -m set ! --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src -j DROP`,
    'COMMIT',
  ].join('\n');

  return {
    virtualServers,
    sets,
    addresses: [...addresses].sort(),
    ipvsadm: ipvsadm ? ipvsadm + '\n' : '',
    ipset: ipset + '\n',
    iptables: iptables + '\n',
  };
}

export const ipsetCreate = (name: string, type: string) =>
  `create ${name} ${type}${type.startsWith('bitmap') ? ' range 0-65535' : ' family inet hashsize 1024 maxelem 65536'} comment -exist`;

/**
 * `ipset restore` input for `sets`. Without `previous` (first sync, or after an error): create, flush and
 * fill each set. With the entries last written: only `del` and `add` of what changed, so no set is ever
 * briefly empty.
 */
export function ipsetScript(
  sets: IpvsRender['sets'],
  previous: ReadonlyMap<string, ReadonlySet<string>> | undefined,
): string {
  const out: string[] = [];
  for (const [name, s] of sets) {
    const prev = previous?.get(name);
    if (!prev) out.push(ipsetCreate(name, s.type), `flush ${name}`);
    for (const e of [...(prev ?? [])].sort()) if (!s.entries.has(e)) out.push(`del ${name} ${e} -exist`);
    for (const e of [...s.entries].sort()) {
      if (!prev?.has(e)) out.push(`add ${name} ${e} comment ${JSON.stringify(s.comment)} -exist`);
    }
  }
  return out.join('\n');
}

/** Everything `renderIpvs` produced, as one readable document (golden files, dry runs). */
export function formatIpvs(r: IpvsRender): string {
  return [
    `# ip addr add <address>/32 dev ${DUMMY_INTERFACE}`,
    ...r.addresses.map((a) => `${a}/32`),
    '',
    '# ipset restore',
    r.ipset.trimEnd(),
    '',
    '# ipvsadm --restore',
    r.ipvsadm.trimEnd(),
    '',
    '# iptables-restore --noflush',
    r.iptables.trimEnd(),
    '',
  ].join('\n');
}

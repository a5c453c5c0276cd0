import {
  type ChangeSet,
  cidrContains,
  type NoEndpointAction,
  type NodeContext,
  nodePortIPs,
  type ProxyState,
  type ServicePortState,
  selectEndpoints,
  sortedServicePorts,
  sortedUpdatedPorts,
} from '@nodelet/proxy';
import { type Element, elementCommands, ElementStore } from './elements.js';
import {
  affinitySet,
  CLUSTER_IPS,
  endpointChain,
  externalChain,
  FAMILY,
  FIREWALL_IPS,
  firewallChain,
  isAffinitySet,
  isServiceChain,
  localChain,
  MARK_MASQ,
  MASQUERADING,
  NO_ENDPOINT_NODEPORTS,
  NO_ENDPOINT_SERVICES,
  NODEPORT_IPS,
  REJECT_CHAIN,
  SERVICE_IPS,
  SERVICE_NODEPORTS,
  serviceChain,
  SERVICES,
  TABLE,
} from './names.js';

const T = `${FAMILY} ${TABLE}`;

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

const CHUNK_CHARS = 64 * 1024;

/**
 * Lines collected into strings of about `CHUNK_CHARS`, each line ending in a newline: never one string
 * of the whole transaction (megabytes, copied once more by every join). A full sync writes each piece
 * to nft's input as soon as it is made, while the next is rendered.
 */
class LineChunks {
  /** Every chunk taken so far, in order. */
  readonly chunks: string[] = [];
  private pending: string[] = [];
  private size = 0;

  add(lines: readonly string[]): void {
    for (const l of lines) {
      this.pending.push(l);
      this.size += l.length + 1;
    }
  }

  /** The pending lines as one chunk once they fill one (whatever is pending when `last`). */
  take(last = false): string | undefined {
    if (this.pending.length === 0 || (!last && this.size < CHUNK_CHARS)) return undefined;
    const chunk = this.pending.join('\n') + '\n';
    this.pending = [];
    this.size = 0;
    this.chunks.push(chunk);
    return chunk;
  }
}

/** Where one render collects its output. */
interface RenderSink {
  flushes: string[];
  blocks: string[];
  pending: Map<ElementStore, { adds: string[]; deletes: string[] }>;
  full: boolean;
  fresh: boolean;
  statements: number;
}

interface ServiceObjects {
  chains: string[];
  sets: string[];
}

export interface NftRenderInput {
  state: ProxyState;
  changes: ChangeSet;
  full: boolean;
  /** The table does not exist yet: nothing needs flushing. */
  fresh?: boolean;
  /** Service chains and affinity sets present in the kernel (full syncs of an existing table). */
  existingChains?: ReadonlySet<string>;
  existingSets?: ReadonlySet<string>;
  /** Delete stale chains in this transaction (kernels ≥ 6.2); otherwise flush them and return them for later. */
  deleteStaleNow?: boolean;
  /** Re-create the base chains (first sync of this process into an existing table), as upstream. */
  recreateBaseChains?: boolean;
}

export interface NftRenderOutput {
  /** The transaction as `nft -f` input, in pieces of about 64 KiB (to be written one after another). */
  chunks: string[];
  /** Characters (= bytes: the rules are ASCII) of `chunks`; 0 when there is nothing to write. */
  bytes: number;
  /** The whole transaction as one string (for error messages, tests and golden files). */
  readonly text: string;
  full: boolean;
  /** Commands (lines) in the transaction. */
  commands: number;
  /** Stale chains flushed but not deleted (delete them in a later transaction). */
  deferredChains: string[];
}

/**
 * Renders upstream's nftables layout as one `nft -f` transaction, and remembers the elements and chains
 * it wrote so the next transaction carries only changes: the elements of changed service ports, their
 * chains, and deletion of what nothing uses any more. After a failed transaction call `reset()`.
 */
export class NftRenderer {
  private readonly stores = {
    clusterIPs: new ElementStore(CLUSTER_IPS, 'set'),
    serviceIPs: new ElementStore(SERVICE_IPS, 'map'),
    serviceNodePorts: new ElementStore(SERVICE_NODEPORTS, 'map'),
    noEndpointServices: new ElementStore(NO_ENDPOINT_SERVICES, 'map'),
    noEndpointNodePorts: new ElementStore(NO_ENDPOINT_NODEPORTS, 'map'),
    firewallIPs: new ElementStore(FIREWALL_IPS, 'map'),
  };
  private readonly objects = new Map<string, ServiceObjects>();
  /** Per-service chains in the kernel and their rules, as last written (the chain block of the text). */
  private readonly chainContent = new Map<string, string>();
  private appliedChains = new Set<string>();
  private appliedSets = new Set<string>();
  private ready = false;

  get canPartial(): boolean {
    return this.ready;
  }

  reset(): void {
    this.ready = false;
    for (const s of Object.values(this.stores)) s.clear();
    this.objects.clear();
    this.chainContent.clear();
  }

  /** The whole transaction for `input` at once (partial syncs, golden files, tests). */
  render(input: NftRenderInput): NftRenderOutput {
    const steps = this.steps(input);
    let r = steps.next();
    while (!r.done) r = steps.next();
    return r.value;
  }

  /**
   * Renders the transaction for `input`, yielding it in pieces of about 64 KiB. A full render yields
   * each piece as soon as its service ports are rendered (the caller writes it to `nft -f -`, which
   * parses it while the next is rendered): every chain that exists is flushed up front, so no later
   * line changes an earlier one. A partial render decides its flushes per chain and yields at the end.
   * After a failed transaction (or a render abandoned half way) call `reset()`.
   */
  *steps(input: NftRenderInput): Generator<string, NftRenderOutput, void> {
    const { state, changes } = input;
    const full = input.full || !this.ready;
    const fresh = full && !!input.fresh;
    const text = new LineChunks();
    const setup: string[] = [];
    /** `flush chain` of existing chains about to be rewritten; then one `table { … }` block of chains. */
    const flushes: string[] = [];
    const blocks: string[] = [];
    const tail: string[] = [];
    const pending = new Map<ElementStore, { adds: string[]; deletes: string[] }>();
    for (const store of Object.values(this.stores)) pending.set(store, { adds: [], deletes: [] });
    const out: RenderSink = { flushes, blocks, pending, full, fresh, statements: 0 };

    /** A partial render's changed and removed service ports, and the objects each had before. */
    const before = new Map<string, ServiceObjects | undefined>();
    /** A full render's per-service chains in the kernel: what the listing showed, else what was written. */
    let existing: string[] = [];
    if (full) {
      for (const s of Object.values(this.stores)) s.clear();
      this.objects.clear();
      this.chainContent.clear();
      this.setup(state.node, setup, fresh, !!input.recreateBaseChains);
      if (!fresh) existing = [...(input.existingChains ?? this.appliedChains)].filter(isServiceChain).sort();
      for (const c of existing) flushes.push(`flush chain ${T} ${c}`);
      text.add(setup);
      text.add(flushes);
      let opened = false;
      for (const p of sortedServicePorts(state)) {
        this.objects.set(p.name, this.renderService(p, state.node, out));
        if (blocks.length === 0) continue;
        if (!opened) text.add([`table ${T} {`]);
        opened = true;
        text.add(blocks);
        blocks.length = 0;
        const chunk = text.take();
        if (chunk) yield chunk;
      }
      if (opened) text.add(['}']);
    } else {
      for (const name of changes.removed) {
        before.set(name, this.objects.get(name));
        for (const store of Object.values(this.stores)) {
          const p = pending.get(store)!;
          store.replace(name, [], p.adds, p.deletes);
        }
        this.objects.delete(name);
      }
      const rerender = sortedUpdatedPorts(state, changes);
      for (const p of rerender) before.set(p.name, this.objects.get(p.name));
      for (const p of rerender) this.objects.set(p.name, this.renderService(p, state.node, out));
      text.add(flushes);
      if (blocks.length > 0) text.add([`table ${T} {`, ...blocks, '}']);
    }

    const { chains: staleChainSet, sets: staleSets } = full
      ? this.staleAfterFull(input, existing)
      : this.staleAfterPartial(before);
    const deferredChains: string[] = [];
    // Flush every stale chain before deleting any: stale chains reference each other (a service
    // chain's vmap names its endpoint chains), and a referenced chain cannot be deleted. (A full
    // render flushed every existing chain up front.)
    const staleChains = [...staleChainSet].sort();
    for (const c of staleChains) {
      this.chainContent.delete(c);
      this.appliedChains.delete(c);
      if (!full) tail.push(`flush chain ${T} ${c}`);
    }
    for (const c of staleChains) {
      if (input.deleteStaleNow ?? true) tail.push(`delete chain ${T} ${c}`);
      else deferredChains.push(c); // handed to the caller, which deletes them in a later transaction
    }
    for (const s of [...staleSets].sort()) {
      this.appliedSets.delete(s);
      tail.push(`delete set ${T} ${s}`);
    }
    this.ready = true;
    const elements: string[] = [];
    for (const [store, { adds, deletes }] of pending) {
      for (const c of elementCommands(T, store.name, adds, deletes)) elements.push(c);
      out.statements += adds.length + deletes.length;
    }
    text.add(elements);
    text.add(tail);
    const last = text.take(true);
    if (last) yield last;
    const { chunks } = text;
    let bytes = 0;
    for (const c of chunks) bytes += c.length;
    let joined: string | undefined;
    const commands = setup.length + flushes.length + out.statements + tail.length;
    return {
      chunks,
      bytes,
      get text() {
        return (joined ??= chunks.join(''));
      },
      full,
      commands,
      deferredChains,
    };
  }

  /**
   * After a full render: the per-service chains `existing` names and the affinity sets the kernel has
   * (listed, or written by this renderer) that no service port uses now. Every object is indexed: a
   * full render visits all.
   */
  private staleAfterFull(
    input: NftRenderInput,
    existing: readonly string[],
  ): { chains: Set<string>; sets: Set<string> } {
    const activeChains = new Set<string>();
    const activeSets = new Set<string>();
    for (const o of this.objects.values()) {
      for (const c of o.chains) activeChains.add(c);
      for (const s of o.sets) activeSets.add(s);
    }
    const chains = new Set<string>();
    const sets = new Set<string>();
    for (const c of existing) if (!activeChains.has(c)) chains.add(c);
    for (const s of input.fresh ? [] : (input.existingSets ?? this.appliedSets)) {
      if (isAffinitySet(s) && !activeSets.has(s)) sets.add(s);
    }
    this.appliedChains = activeChains;
    this.appliedSets = activeSets;
    return { chains, sets };
  }

  /**
   * After a partial render: the chains and sets the changed or removed service ports had and no longer
   * have (a chain or set belongs to one service port: its name hashes the port's). Only those ports
   * are visited, so an endpoint change costs the same at 10 services as at 10,000.
   */
  private staleAfterPartial(before: ReadonlyMap<string, ServiceObjects | undefined>): {
    chains: Set<string>;
    sets: Set<string>;
  } {
    const chains = new Set<string>();
    const sets = new Set<string>();
    for (const [name, old] of before) {
      const now = this.objects.get(name);
      const nowChains = new Set(now?.chains);
      const nowSets = new Set(now?.sets);
      for (const c of old?.chains ?? []) if (isServiceChain(c) && !nowChains.has(c)) chains.add(c);
      for (const s of old?.sets ?? []) if (isAffinitySet(s) && !nowSets.has(s)) sets.add(s);
      for (const c of nowChains) this.appliedChains.add(c);
      for (const s of nowSets) this.appliedSets.add(s);
    }
    return { chains, sets };
  }

  private setup(node: NodeContext, out: string[], fresh: boolean, recreate: boolean): void {
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
    out.push(
      `add set ${T} ${NODEPORT_IPS} { type ipv4_addr ; comment "IPs that accept NodePort traffic" ; }`,
    );
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
    for (const s of Object.values(this.stores)) flush(`${s.kind} ${T} ${s.name}`);
  }

  /** Chains, rules and elements of one service port (upstream syncProxyRules, per port). */
  private renderService(p: ServicePortState, node: NodeContext, out: RenderSink): ServiceObjects {
    const proto = p.protocol.toLowerCase();
    const objs: ServiceObjects = { chains: [], sets: [] };
    const rules = new Map<string, string[]>();
    const setDecls = new Map<string, string>();
    const rule = (chain: string, text: string) => rules.get(chain)!.push(text);
    const chain = (name: string) => {
      objs.chains.push(name);
      rules.set(name, []);
    };
    const svc = serviceChain(p);
    const local = localChain(p);
    const ext = externalChain(p);
    const fw = firewallChain(p);
    const sel = selectEndpoints(p);
    const internalChain = p.internalPolicyLocal ? local : svc;
    const externalPolicyChain = p.externalPolicyLocal ? local : svc;
    // Upstream's nftables proxier filters source ranges whether or not the service has endpoints.
    const usesFW = p.loadBalancerIPs.length > 0 && p.loadBalancerSourceRanges.length > 0;
    const verdict = (action: NoEndpointAction | undefined) =>
      action === 'reject' ? `goto ${REJECT_CHAIN}` : action === 'drop' ? 'drop' : '';
    const internalVerdict = verdict(sel.internalNoEndpoints);
    const externalVerdict = verdict(sel.externalNoEndpoints);
    const hasInternal = !sel.internalNoEndpoints;
    const hasExternal = !sel.externalNoEndpoints;

    // Endpoint chains first, then policy chains: rules may reference only existing chains.
    for (const ep of p.allReachableEndpoints) {
      chain(endpointChain(p, ep));
      if (p.sessionAffinity === 'ClientIP') {
        const set = affinitySet(p, ep);
        objs.sets.push(set);
        setDecls.set(
          endpointChain(p, ep),
          `\tset ${set} { type ipv4_addr ; flags dynamic,timeout ; timeout ${p.stickyMaxAgeSeconds}s ; }`,
        );
      }
    }
    if (sel.dispatchesCluster) chain(svc);
    if (sel.dispatchesLocal) chain(local);
    if (sel.externalEntry) chain(ext);
    if (usesFW) chain(fw);

    const el = {
      clusterIPs: [{ key: p.clusterIP, value: '' }] as Element[],
      serviceIPs: [] as Element[],
      serviceNodePorts: [] as Element[],
      noEndpointServices: [] as Element[],
      noEndpointNodePorts: [] as Element[],
      firewallIPs: [] as Element[],
    };
    const key = (ip: string, port: number) => `${ip} . ${proto} . ${port}`;
    if (hasInternal) el.serviceIPs.push({ key: key(p.clusterIP, p.port), value: `goto ${internalChain}` });
    else
      el.noEndpointServices.push({ key: key(p.clusterIP, p.port), value: internalVerdict, comment: p.name });
    for (const ip of p.externalIPs) {
      if (p.hasEndpoints) el.serviceIPs.push({ key: key(ip, p.port), value: `goto ${ext}` });
      if (!hasExternal)
        el.noEndpointServices.push({ key: key(ip, p.port), value: externalVerdict, comment: p.name });
    }
    for (const ip of p.loadBalancerIPs) {
      if (p.hasEndpoints) el.serviceIPs.push({ key: key(ip, p.port), value: `goto ${ext}` });
      if (usesFW) el.firewallIPs.push({ key: key(ip, p.port), value: `goto ${fw}` });
      if (!hasExternal)
        el.noEndpointServices.push({ key: key(ip, p.port), value: externalVerdict, comment: p.name });
    }
    if (p.nodePort > 0) {
      const npKey = `${proto} . ${p.nodePort}`;
      if (p.hasEndpoints) el.serviceNodePorts.push({ key: npKey, value: `goto ${ext}` });
      if (!hasExternal) el.noEndpointNodePorts.push({ key: npKey, value: externalVerdict, comment: p.name });
    }

    if (hasInternal) {
      const m = `ip daddr ${p.clusterIP} ${proto} dport ${p.port}`;
      if (node.masqueradeAll) rule(internalChain, `${m} jump ${MARK_MASQ}`);
      else if (node.clusterCIDR)
        rule(internalChain, `${m} ip saddr != ${node.clusterCIDR} jump ${MARK_MASQ}`);
    }
    if (sel.externalEntry) {
      if (!p.externalPolicyLocal) rule(ext, `jump ${MARK_MASQ}`);
      else {
        if (node.clusterCIDR)
          rule(ext, `ip saddr ${node.clusterCIDR} goto ${svc} comment "short-circuit pod traffic"`);
        rule(ext, `fib saddr type local jump ${MARK_MASQ} comment "masquerade local traffic"`);
        rule(ext, `fib saddr type local goto ${svc} comment "short-circuit local traffic"`);
      }
      if (hasExternal) rule(ext, `goto ${externalPolicyChain}`);
    }
    if (usesFW) {
      const sources = [...p.loadBalancerSourceRanges];
      if (p.loadBalancerSourceRanges.some((c) => node.nodeIPs.some((ip) => cidrContains(c, ip)))) {
        sources.push(...p.loadBalancerIPs);
      }
      rule(fw, `ip saddr != { ${sources.join(', ')} } drop`);
    }
    const dispatch = (target: string, endpoints: ServicePortState['endpoints']) => {
      if (p.sessionAffinity === 'ClientIP') {
        for (const ep of endpoints)
          rule(target, `ip saddr @${affinitySet(p, ep)} goto ${endpointChain(p, ep)}`);
      }
      const entries = endpoints.map((ep, i) => `${i} : goto ${endpointChain(p, ep)}`).join(' , ');
      rule(target, `numgen random mod ${endpoints.length} vmap { ${entries} }`);
    };
    if (sel.dispatchesCluster) dispatch(svc, p.clusterEndpoints);
    if (sel.dispatchesLocal) dispatch(local, p.localEndpoints);
    for (const ep of p.allReachableEndpoints) {
      const c = endpointChain(p, ep);
      rule(c, `ip saddr ${ep.ip} jump ${MARK_MASQ}`);
      if (p.sessionAffinity === 'ClientIP') rule(c, `update @${affinitySet(p, ep)} { ip saddr }`);
      rule(c, `meta l4proto ${proto} dnat to ${ep.endpoint}`);
    }

    // Write only the chains whose rules differ from what the kernel has (all of them in a full sync).
    // A chain is kept as the one string it is written as (not a string per rule): 11,000 chains at
    // 1,000 services are 11,000 strings to keep from one sync to the next, and the rule strings die
    // young, which the garbage collector handles cheaply.
    for (const name of objs.chains) {
      const lines = rules.get(name)!;
      const block =
        lines.length > 0 ? `\tchain ${name} {\n\t\t${lines.join('\n\t\t')}\n\t}` : `\tchain ${name} {\n\t}`;
      const before = this.chainContent.get(name);
      if (!out.full && before === block) continue;
      // An existing chain is flushed first; a chain never written needs no flush. (A full render
      // flushes every chain the kernel has before it renders any.)
      if (!out.full && (before !== undefined || this.appliedChains.has(name))) {
        out.flushes.push(`flush chain ${T} ${name}`);
      }
      const decl = setDecls.get(name);
      if (decl) out.blocks.push(decl);
      out.blocks.push(block);
      out.statements += 1 + lines.length;
      this.chainContent.set(name, block);
    }

    for (const [store, wanted] of [
      [this.stores.clusterIPs, el.clusterIPs],
      [this.stores.serviceIPs, el.serviceIPs],
      [this.stores.serviceNodePorts, el.serviceNodePorts],
      [this.stores.noEndpointServices, el.noEndpointServices],
      [this.stores.noEndpointNodePorts, el.noEndpointNodePorts],
      [this.stores.firewallIPs, el.firewallIPs],
    ] as const) {
      const pend = out.pending.get(store)!;
      store.replace(p.name, wanted, pend.adds, pend.deletes);
    }
    return objs;
  }
}

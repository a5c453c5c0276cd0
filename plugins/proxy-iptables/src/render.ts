import {
  type ChangeSet,
  cidrContains,
  type EndpointSelection,
  type NoEndpointAction,
  type NodeContext,
  nodePortIPs,
  type ProxyState,
  type ServicePortState,
  selectEndpoints,
  sortedServicePorts,
  sortedUpdatedPorts,
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
import { BlockRecycler, ChunkWriter, sameSpan, type Span, TextArena } from './text-arena.js';

/** Above this many endpoints, per-endpoint comments are left out (upstream's "large cluster mode"). */
export const LARGE_CLUSTER_ENDPOINTS = 1000;

/** Output is handed on in chunks of about this size while a full render streams. */
const CHUNK_BYTES = 64 * 1024;

/** The rules one service port contributes (a renderer's bookkeeping; read-only outside it). */
export interface ServiceBlock {
  readonly port: ServicePortState;
  readonly sel: EndpointSelection;
  /** Service, service-local, external and firewall chain names of this port. */
  readonly svc: string;
  readonly svl: string;
  readonly ext: string;
  readonly fw: string;
  readonly usesFirewall: boolean;
  /** nat chains this service port owns (EXT, FW, SVC, SVL, SEP), in the order they are written. */
  readonly chains: string[];
  /** Position of each chain in `chains`, built when a large block is first searched. */
  chainIndex?: Map<string, number>;
  readonly natServices: readonly string[];
  readonly natNodePorts: readonly string[];
  readonly filterServices: readonly string[];
  readonly filterExternal: readonly string[];
  readonly filterNodePorts: readonly string[];
  readonly filterFirewall: readonly string[];
}

/**
 * A block's rules as `writeBody` rendered them: one range of an arena, and where each chain's rules are
 * in it: with n chains, chain i is bytes [layout[i], layout[i + 1]) of the range, holding layout[n + 1 + i]
 * rules. (One small array, not one object per chain.) Rules are not kept from one render to the next:
 * a renderer keeps what it needs to render them again (the port's state), not their text.
 */
interface Body {
  readonly span: Span;
  readonly layout: Uint32Array;
}

/** The rules of the top-level chains (KUBE-SERVICES, KUBE-NODEPORTS, …), keyed `table chain`. */
export type TopLevel = ReadonlyMap<string, readonly string[]>;

/** What the kernel has, from iptables-save: needed by full renders only. */
export interface KernelState {
  /** Per-service chains present in the kernel; deleted when unused. */
  existingChains?: ReadonlySet<string>;
  /** Jump rules missing from the built-in chains; inserted in the same transaction. */
  missingJumps?: readonly JumpRule[];
}

export interface RenderInput extends KernelState {
  state: ProxyState;
  changes: ChangeSet;
  full: boolean;
}

export interface RenderOutput {
  /**
   * iptables-restore input, as byte chunks in order; empty when nothing needs writing, and for a
   * streamed render (its chunks were handed on as they were made and their memory written again).
   */
  chunks: Buffer[];
  /** Total bytes of the input. */
  bytes: number;
  /** The input as one string (for tests, golden files and error messages); not for a streamed render. */
  readonly text: string;
  full: boolean;
  /** Top-level chain contents of this render, keyed `table chain`. */
  topLevel: TopLevel;
  /** Every service port's chains and rules after this render, by service port name. */
  blocks: ReadonlyMap<string, ServiceBlock>;
  /** Service ports whose rules this render wrote (a full render: all of them). */
  portsRendered: number;
  /** Chain lines (created or flushed) and rule lines written. */
  chainsWritten: number;
  rulesWritten: number;
  deletedChains: string[];
}

/** Yielded once by a full render's steps before the first line that depends on the kernel's rules. */
export const NEED_KERNEL_STATE = Symbol('need kernel state');
export type RenderStep = Buffer[] | typeof NEED_KERNEL_STATE;

const quote = (s: string) => (/[\s"]/.test(s) ? `"${s.replace(/"/g, '\\"')}"` : s);
const comment = (s: string) => `-m comment --comment ${quote(s)}`;
const MASQ_TAIL = ` -j ${KUBE_MARK_MASQ}\n`;
const probabilities: string[] = [];
/** `1/n` with 10 decimals, remembered: the same few values recur in every service chain. */
const probability = (n: number) => (probabilities[n] ??= (1 / n).toFixed(10));

/**
 * Renders upstream-shaped iptables rules (filter + nat) as iptables-restore input, and remembers what it
 * rendered so the next render can be partial (KEP-3453): only the chains of changed service ports, only
 * the top-level chains whose content changed, and deletion of the chains nothing uses any more. After a
 * successful restore call `applied(output)`; after a failed one `reset()`, which makes the next render full.
 *
 * A full render can be consumed as `steps()`: its output comes in chunks while the per-service rules are
 * still being rendered, so a restore reading them parses the beginning while the rest is produced. A
 * streamed render writes those chunks into the same few blocks over and over (each chunk is to be
 * consumed before the next step): its memory does not grow with the number of services.
 */
export class IptablesRenderer {
  private blocks = new Map<string, ServiceBlock>();
  private appliedTop: TopLevel | undefined;
  /** Each service port's chains and their rules in the kernel, as last applied. */
  private appliedBlocks: ReadonlyMap<string, ServiceBlock> = new Map();
  /** What every rendered block's rules were written for: the node, and large-cluster mode or not. */
  private context: { node: NodeContext; large: boolean } | undefined;
  /** The blocks streamed renders write into, kept from one to the next. */
  private readonly recycler = new BlockRecycler();

  /** Whether a partial render is possible (a full one was applied and nothing failed since). */
  get canPartial(): boolean {
    return this.appliedTop !== undefined;
  }

  /** The whole render at once; a full render takes the kernel state from `input`. */
  render(input: RenderInput): RenderOutput {
    return drain(this.steps(input), input, () => undefined);
  }

  /**
   * A streamed render at once, the kernel state taken from `input`: each chunk goes to `consume`, which
   * must be done with it when it returns (its memory is written again). For a sync's render without a
   * kernel tool reading it: benches, tests.
   */
  renderStreamed(input: RenderInput, consume: (chunk: Buffer) => void): RenderOutput {
    return drain(this.steps(input, true), input, consume);
  }

  /**
   * The render, step by step: yields chunks of output as they are ready, and, in a full render,
   * `NEED_KERNEL_STATE` once before anything that depends on the kernel's rules — answer it with
   * `next(kernelState)`. Abandoning the steps midway leaves the renderer needing `reset()`.
   *
   * `streamed`: the chunks of a step are written again after the next `next()` call, so they must be
   * consumed (written to the restore, copied) before it; the output keeps no chunks and has no text.
   * Otherwise every chunk is also in the returned output.
   */
  *steps(input: RenderInput, streamed = false): Generator<RenderStep, RenderOutput, KernelState | undefined> {
    const { state, changes } = input;
    let full = input.full || !this.appliedTop;
    let totalEndpoints = 0;
    for (const p of state.servicePorts.values()) totalEndpoints += p.endpoints.length;
    const large = totalEndpoints > LARGE_CLUSTER_ENDPOINTS;
    // Rules written for another node or mode are all rewritten, none carried over.
    const sameContext = this.context?.node === state.node && this.context.large === large;
    if (!sameContext) {
      this.context = { node: state.node, large };
      full = true;
    }
    /** Blocks this render writes out, in rule order: a full render's are all of them. */
    const rerendered: ServiceBlock[] = [];
    /** A partial render's new rules, one per block of `rerendered`. */
    const bodies: Body[] = [];
    let portsRendered = 0;
    let sorted: ServicePortState[] | undefined;
    if (full) {
      // Until this render is applied, nothing partial may build on the blocks it replaces.
      this.appliedTop = undefined;
      sorted = sortedServicePorts(state);
      this.blocks = new Map(); // planned port by port while their declarations stream out
    } else {
      this.blocks = new Map(this.blocks); // the applied render keeps the blocks it applied
      for (const name of changes.removed) this.blocks.delete(name);
      const arena = new TextArena();
      for (const p of sortedUpdatedPorts(state, changes)) {
        const b = planBlock(p);
        bodies.push(writeBody(b, state.node, large, arena));
        portsRendered++;
        this.blocks.set(p.name, b);
        rerendered.push(b);
      }
    }

    // The top-level chains hold a line or two of every service port. A partial render whose changed
    // ports have the same lines there as before (an endpoint change, as long as the port keeps some
    // endpoints) has the applied top-level chains: it need not go through every service port.
    // A full render has them once every port is planned, after the declarations.
    let topLevel: TopLevel | undefined;
    let ordered: ServiceBlock[] = [];
    if (!full) {
      if (sameTopLevelLines(changes, this.appliedBlocks, this.blocks)) {
        topLevel = this.appliedTop!;
      } else {
        sorted ??= sortedServicePorts(state);
        ordered = sorted.map((p) => this.blocks.get(p.name)!);
        topLevel = topLevelLines(ordered, state.node);
      }
    }
    const changedTop = (key: string) =>
      full || !sameLines(this.appliedTop!.get(key) ?? NONE, topLevel!.get(key) ?? NONE);

    const recycler = full && streamed ? this.recycler : undefined;
    const out = new ChunkWriter(recycler);
    const all: Buffer[] = [];
    let bytes = 0;
    const take = () => {
      const chunks = out.take();
      for (const c of chunks) bytes += c.length;
      if (!recycler) for (const c of chunks) all.push(c);
      return chunks;
    };
    /** After a step: its chunks have been consumed, and a streamed render writes into their blocks again. */
    const consumed = () => {
      if (recycler) out.recycle();
    };
    let chainsWritten = 0;
    let rulesWritten = 0;
    const writeTops = (table: string, chains: readonly string[]) => {
      for (const c of chains) {
        const lines = topLevel!.get(`${table} ${c}`)!;
        for (const l of lines) out.line(l);
        rulesWritten += lines.length;
      }
    };
    const writeJumps = (jumps: readonly JumpRule[]) => {
      for (const j of jumps) {
        out.line(`-I ${j.from} 1${j.extra ? ` ${j.extra}` : ''} ${comment(j.comment)} -j ${j.to}`);
        rulesWritten++;
      }
    };
    // Everything that depends on the kernel's rules (stale chains, missing jumps) comes last in its
    // table, and nat (the bulk) comes first: a full sync streams nearly all of its output before it
    // needs what iptables-save found. (A table's lines may come in any order before its COMMIT.)
    let kernel: KernelState = input;
    let stale = full ? new Set<string>() : this.staleAfterPartial(changes);

    // nat. Partial: only chains whose rules differ from what the kernel has (an endpoint change
    // rewrites the service chain and adds one endpoint chain, not every endpoint chain of the
    // service). Full: every chain, its rules rendered after the declarations, while the output streams.
    const natTops = NAT_CHAINS.filter((c) => changedTop(`nat ${c}`));
    // Full: every chain of every block (declared straight from the blocks); partial: the changed ones.
    const serviceChains: string[] = [];
    const serviceSpans: Span[] = [];
    if (!full) {
      changedChains(rerendered, bodies, this.appliedBlocks, state.node, large, serviceChains, serviceSpans);
    }
    const natJumps = () => (kernel.missingJumps ?? []).filter((j) => j.table === 'nat');
    if (full || natTops.length + serviceChains.length + stale.size + natJumps().length > 0) {
      out.line('*nat');
      for (const c of natTops) out.declare(c);
      chainsWritten += natTops.length;
      if (full) {
        // Every port planned and its chains declared, the top-level rules, every block's rules: a
        // chunk at a time. The header goes first, on its own: the restore takes the table (reading
        // what the kernel has) while the ports are planned.
        yield take();
        consumed();
        const applied = sameContext ? this.appliedBlocks : undefined;
        const blocks = this.blocks;
        const planAndDeclare = (p: ServicePortState) => {
          const b = plannedBlock(p, applied);
          blocks.set(p.name, b);
          rerendered.push(b);
          for (const c of b.chains) out.declare(c);
          chainsWritten += b.chains.length;
        };
        const line = (l: string) => out.line(l);
        const body = (b: ServiceBlock) => {
          const { span } = writeBody(b, state.node, large, out.arena, false);
          out.span(span);
          rulesWritten += span.lines;
        };
        yield* paced(sorted!, planAndDeclare, out, take, consumed);
        ordered = rerendered;
        topLevel = topLevelLines(ordered, state.node);
        const natTopLines = natTops.flatMap((c) => topLevel!.get(`nat ${c}`)!);
        yield* paced(natTopLines, line, out, take, consumed);
        yield* paced(rerendered, body, out, take, consumed);
        rulesWritten += natTopLines.length;
        portsRendered += rerendered.length;
        kernel = (yield NEED_KERNEL_STATE) ?? {};
        stale = this.staleAfterFull(ordered, kernel);
      } else {
        chainsWritten += declareAll(out, serviceChains);
        writeTops('nat', natTops);
      }
      for (const span of serviceSpans) {
        out.span(span);
        rulesWritten += span.lines;
      }
      // A stale chain is flushed (its chain line), then deleted.
      const staleSorted = [...stale].sort();
      for (const c of staleSorted) out.declare(c);
      for (const c of staleSorted) out.line(`-X ${c}`);
      writeJumps(natJumps());
      out.line('COMMIT');
    }

    // filter: the top-level chains only (REJECT/DROP for services without endpoints, firewalls).
    const filterTops = FILTER_CHAINS.filter((c) => changedTop(`filter ${c}`));
    const filterJumps = (kernel.missingJumps ?? []).filter((j) => j.table === 'filter');
    if (filterTops.length + filterJumps.length > 0) {
      out.line('*filter');
      for (const c of filterTops) out.declare(c);
      chainsWritten += filterTops.length;
      writeTops('filter', filterTops);
      writeJumps(filterJumps);
      out.line('COMMIT');
    }
    if (full) {
      // The canary: an empty chain whose disappearance means someone flushed the tables (upstream's
      // KUBE-PROXY-CANARY). Partial syncs check it and turn into a full sync when it is gone.
      out.line('*mangle');
      out.declare(KUBE_PROXY_CANARY);
      out.line('COMMIT');
    }
    const last = take();
    if (last.length > 0) yield last;
    if (recycler) out.arena.release();

    let text: string | undefined;
    const output: RenderOutput = {
      chunks: all,
      bytes,
      get text() {
        if (recycler) throw new Error('a streamed render keeps no text: render again to see it');
        return (text ??= Buffer.concat(all).toString('utf8'));
      },
      full,
      topLevel: topLevel!,
      blocks: this.blocks,
      portsRendered,
      chainsWritten,
      rulesWritten,
      deletedChains: [...stale].sort(),
    };
    return output;
  }

  /** Records that `output` is now in the kernel: the base for the next partial render. */
  applied(output: RenderOutput): void {
    this.appliedTop = output.topLevel;
    this.appliedBlocks = output.blocks;
  }

  /** Bytes of the blocks this renderer's streamed renders have written into, all of them together. */
  get streamedBlockBytes(): number {
    return this.recycler.allocated;
  }

  /** Forgets what was applied: the next render is full. */
  reset(): void {
    this.appliedTop = undefined;
  }

  /**
   * Per-service chains to delete after a full render: those the kernel has (iptables-save) or that the
   * last applied render wrote, and that no service port uses now.
   */
  private staleAfterFull(ordered: readonly ServiceBlock[], kernel: KernelState): Set<string> {
    const candidates: string[] = [];
    for (const c of kernel.existingChains ?? []) if (isServiceChain(c)) candidates.push(c);
    for (const [name, b] of this.appliedBlocks) {
      if (this.blocks.get(name) === b) continue; // carried over: every chain of it is still in use
      for (const c of b.chains) candidates.push(c);
    }
    const stale = new Set<string>();
    if (candidates.length === 0) return stale; // a fresh table: no need to index the active chains
    const active = new Set<string>();
    for (const b of ordered) for (const c of b.chains) active.add(c);
    for (const c of candidates) if (!active.has(c)) stale.add(c);
    return stale;
  }

  /**
   * Per-service chains to delete after a partial render: chains of changed or removed service ports
   * that their new rules no longer use (a chain name belongs to one service port: it hashes its name).
   */
  private staleAfterPartial(changes: ChangeSet): Set<string> {
    const stale = new Set<string>();
    for (const names of [changes.removed, changes.updated]) {
      for (const name of names) {
        const before = this.appliedBlocks.get(name);
        if (!before) continue;
        const now = new Set(this.blocks.get(name)?.chains);
        for (const c of before.chains) if (!now.has(c)) stale.add(c);
      }
    }
    return stale;
  }
}

/** Runs `steps` to the end: chunks to `consume`, the kernel state from `kernel` when asked for. */
function drain(
  steps: Generator<RenderStep, RenderOutput, KernelState | undefined>,
  kernel: KernelState,
  consume: (chunk: Buffer) => void,
): RenderOutput {
  let r = steps.next();
  while (!r.done) {
    if (r.value === NEED_KERNEL_STATE) r = steps.next(kernel);
    else {
      for (const c of r.value) consume(c);
      r = steps.next();
    }
  }
  return r.value;
}

// The loops of a render over every service port live in functions of their own, not in `steps`: the
// JIT optimises a small function within the first render, while a generator as large as `steps` is
// optimised only after a dozen renders (measured: a new proxy's render at 1,000 services took 50 ms
// until then, against 20 ms after).

/**
 * A full render's block for `p`. A service port whose state is the very object an applied block was
 * planned from (the tracker keeps it while nothing about the port changes) keeps that plan: its chain
 * names and top-level lines.
 */
function plannedBlock(
  p: ServicePortState,
  applied: ReadonlyMap<string, ServiceBlock> | undefined,
): ServiceBlock {
  const a = applied?.get(p.name);
  return a?.port === p ? a : planBlock(p);
}

/**
 * The chains of re-rendered `blocks` (their new rules: `bodies`) whose rules differ from what the kernel
 * has (an endpoint change rewrites the service chain and adds one endpoint chain, not every endpoint
 * chain of the service). What the kernel has is rendered again from the applied block's port state,
 * with the same node and mode (a partial render has both unchanged).
 */
function changedChains(
  blocks: readonly ServiceBlock[],
  bodies: readonly Body[],
  applied: ReadonlyMap<string, ServiceBlock>,
  node: NodeContext,
  large: boolean,
  chains: string[],
  spans: Span[],
): void {
  const scratch = new TextArena();
  for (let k = 0; k < blocks.length; k++) {
    const b = blocks[k]!;
    const body = bodies[k]!;
    const before = applied.get(b.port.name);
    const beforeBody = before && writeBody(before, node, large, scratch);
    for (let i = 0; i < b.chains.length; i++) {
      const span = chainSpan(b, body, i);
      if (before && sameSpan(appliedChain(before, beforeBody!, b.chains[i]!), span)) continue;
      spans.push(span);
      chains.push(b.chains[i]!);
    }
  }
}

function declareAll(out: ChunkWriter, chains: readonly string[]): number {
  for (const c of chains) out.declare(c);
  return chains.length;
}

/**
 * Writes `items` with `write` a chunk at a time: yields each chunk of output, and once it has been
 * consumed writes on. (The loop over the items is a plain function: the JIT optimises it at once.)
 */
function* paced<T>(
  items: readonly T[],
  write: (item: T) => void,
  out: ChunkWriter,
  take: () => Buffer[],
  consumed: () => void,
): Generator<Buffer[], void, unknown> {
  const progress = { next: 0 };
  while (progress.next < items.length) {
    writeSome(items, progress, write, out);
    yield take();
    consumed();
  }
}

/** Writes `items` from `progress.next` on until about a chunk of output is pending or all are written. */
function writeSome<T>(
  items: readonly T[],
  progress: { next: number },
  write: (item: T) => void,
  out: ChunkWriter,
): void {
  while (progress.next < items.length) {
    write(items[progress.next++]!);
    if (out.pending >= CHUNK_BYTES) return;
  }
}

/** Lines a service port has in the top-level chains (`planBlock` fills them). */
const TOP_LEVEL_LISTS = [
  'natServices',
  'natNodePorts',
  'filterServices',
  'filterExternal',
  'filterNodePorts',
  'filterFirewall',
] as const;

/** Whether every changed or removed service port has the same top-level lines in `now` as in `before`. */
function sameTopLevelLines(
  changes: ChangeSet,
  before: ReadonlyMap<string, ServiceBlock>,
  now: ReadonlyMap<string, ServiceBlock>,
): boolean {
  for (const names of [changes.updated, changes.removed]) {
    for (const name of names) {
      const a = before.get(name);
      const b = now.get(name);
      for (const list of TOP_LEVEL_LISTS) {
        const x = a?.[list] ?? NONE;
        const y = b?.[list] ?? NONE;
        if (!sameLines(x, y)) return false;
      }
    }
  }
  return true;
}

/** Whether two chains have the same rules (most lines are the very same strings: planned once per port). */
function sameLines(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The top-level chains' rules (keyed `table chain`): every service port's lines, then the node's. */
function topLevelLines(ordered: readonly ServiceBlock[], node: NodeContext): TopLevel {
  const mark = `0x${(1 << node.masqueradeBit).toString(16)}`;
  const collect = (list: TopLevelLines) => {
    const out: string[] = [];
    for (const b of ordered) for (const l of b[list]) out.push(l);
    return out;
  };
  return new Map([
    [`filter ${KUBE_SERVICES}`, collect('filterServices')],
    [`filter ${KUBE_EXTERNAL_SERVICES}`, collect('filterExternal')],
    [`filter ${KUBE_NODEPORTS}`, collect('filterNodePorts')],
    [`filter ${KUBE_PROXY_FIREWALL}`, collect('filterFirewall')],
    [
      `filter ${KUBE_FORWARD}`,
      [
        `-A ${KUBE_FORWARD} -m conntrack --ctstate INVALID -j DROP`,
        `-A ${KUBE_FORWARD} ${comment('kubernetes forwarding rules')} -m mark --mark ${mark}/${mark} -j ACCEPT`,
        `-A ${KUBE_FORWARD} ${comment('kubernetes forwarding conntrack rule')} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
      ],
    ],
    [
      `nat ${KUBE_POSTROUTING}`,
      [
        `-A ${KUBE_POSTROUTING} -m mark ! --mark ${mark}/${mark} -j RETURN`,
        `-A ${KUBE_POSTROUTING} -j MARK --xor-mark ${mark}`,
        `-A ${KUBE_POSTROUTING} ${comment('kubernetes service traffic requiring SNAT')} -j MASQUERADE --random-fully`,
      ],
    ],
    [`nat ${KUBE_MARK_MASQ}`, [`-A ${KUBE_MARK_MASQ} -j MARK --or-mark ${mark}`]],
    [`nat ${KUBE_SERVICES}`, [...collect('natServices'), ...nodePortsTail(node)]],
    [`nat ${KUBE_NODEPORTS}`, collect('natNodePorts')],
  ]);
}

/** The rules `chain` had in an applied block (rendered as `body`); undefined when it had no such chain. */
function appliedChain(block: ServiceBlock, body: Body, chain: string): Span | undefined {
  let i: number | undefined;
  if (block.chains.length <= 16) i = block.chains.indexOf(chain);
  else {
    block.chainIndex ??= new Map(block.chains.map((c, k) => [c, k]));
    i = block.chainIndex.get(chain);
  }
  return i === undefined || i < 0 ? undefined : chainSpan(block, body, i);
}

/** The rules of chain `i` of a block, rendered as `body`. */
function chainSpan(b: ServiceBlock, body: Body, i: number): Span {
  const { span, layout } = body;
  return {
    block: span.block,
    start: span.start + layout[i]!,
    end: span.start + layout[i + 1]!,
    lines: layout[b.chains.length + 1 + i]!,
  };
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

/** What a traffic policy without endpoints does: [target, comment]. */
function noEndpointRule(name: string, action: NoEndpointAction): [string, string] {
  return action === 'reject'
    ? ['REJECT', `${name} has no endpoints`]
    : ['DROP', `${name} has no local endpoints`];
}

type TopLevelLines =
  'natServices' | 'natNodePorts' | 'filterServices' | 'filterExternal' | 'filterNodePorts' | 'filterFirewall';

/** Shared by every block without rules in a top-level chain (most have one or two): no array each. */
const NONE: readonly string[] = Object.freeze([]);

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
function planBlock(p: ServicePortState): ServiceBlock {
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

/**
 * Renders the rules of a block's chains into `arena` as one range, chain after chain in the order of
 * `b.chains`, so consecutive blocks make one contiguous range of output. Each rule goes into the arena
 * as soon as it is made. Without `keepLayout` the body's layout is shared scratch, valid until the next
 * call (enough for writing the body out; not for comparing it).
 */
function writeBody(
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
  const layout = keepLayout ? new Uint32Array(2 * n + 1) : scratchLayout(2 * n + 1);
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

/** A layout written and read within one step (a full render's bodies are written out, not compared). */
let scratch = new Uint32Array(64);
function scratchLayout(size: number): Uint32Array {
  if (scratch.length < size) scratch = new Uint32Array(2 * size);
  return scratch;
}

/** The parts of rules that depend on the protocol only, made once per protocol. */
const PROTOCOL_PIECES = new Map<string, { destination: string; dnat: string }>();
function protocolPieces(protocol: string): { destination: string; dnat: string } {
  let pieces = PROTOCOL_PIECES.get(protocol);
  if (!pieces) {
    const p = protocol.toLowerCase();
    pieces = { destination: ` -m ${p} -p ${p} -d `, dnat: ` -m ${p} -p ${p} -j DNAT --to-destination ` };
    PROTOCOL_PIECES.set(protocol, pieces);
  }
  return pieces;
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

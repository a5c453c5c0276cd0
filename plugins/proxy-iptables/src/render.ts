import {
  AppliedPorts,
  type Body,
  BlockRecycler,
  type ChangeSet,
  changedChains,
  type ChunkWriter,
  drain,
  droppedChains,
  NEED_KERNEL_STATE,
  OutputStream,
  paced,
  plannedPort,
  type ProxyState,
  type RenderedText,
  type RenderStep,
  type ServicePortState,
  type Span,
  sortedServicePorts,
  sortedUpdatedPorts,
  staleAfterPartial,
  TextArena,
  unusedAmong,
} from '@nodelet/proxy';
import { FILTER_CHAINS, isServiceChain, type JumpRule, KUBE_PROXY_CANARY, NAT_CHAINS } from './chains.js';
import { NONE, planBlock, type ServiceBlock } from './port-plan.js';
import { writeBody } from './port-rules.js';
import { comment } from './rule-text.js';
import { sameLines, sameTopLevelLines, type TopLevel, topLevelLines } from './top-level.js';

export { NEED_KERNEL_STATE, type RenderStep } from '@nodelet/proxy';
export type { ServiceBlock } from './port-plan.js';
export type { TopLevel } from './top-level.js';

/** Above this many endpoints, per-endpoint comments are left out (upstream's "large cluster mode"). */
export const LARGE_CLUSTER_ENDPOINTS = 1000;

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

/** A render's iptables-restore input, and what it wrote. */
export interface RenderOutput extends RenderedText {
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

/** A chain line (`:NAME - [0:0]`): creates the chain, or flushes it if it exists. */
function declare(out: ChunkWriter, chain: string): void {
  out.piece().text(':').text(chain).text(' - [0:0]\n');
  out.wrote();
}

function declareAll(out: ChunkWriter, chains: readonly string[]): number {
  for (const c of chains) declare(out, c);
  return chains.length;
}

/**
 * Renders upstream-shaped iptables rules (filter + nat) as iptables-restore input on the proxy's
 * render engine (`AppliedPorts`, `changedChains`, `OutputStream`): partial renders write only the
 * chains of changed service ports, only the top-level chains whose content changed, and delete the
 * chains nothing uses any more. After a successful restore call `applied(output)`; after a failed one
 * `reset()`, which makes the next render full.
 *
 * A full render can be consumed as `steps()`: its output comes in chunks while the per-service rules are
 * still being rendered, so a restore reading them parses the beginning while the rest is produced. A
 * streamed render writes those chunks into the same few blocks over and over (each chunk is to be
 * consumed before the next step): its memory does not grow with the number of services.
 */
export class IptablesRenderer {
  private readonly ports = new AppliedPorts<ServiceBlock, TopLevel>(true);
  /** The blocks streamed renders write into, kept from one to the next. */
  private readonly recycler = new BlockRecycler();

  /** Whether a partial render is possible (a full one was applied and nothing failed since). */
  get canPartial(): boolean {
    return this.ports.canPartial;
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
    const ports = this.ports;
    let totalEndpoints = 0;
    for (const p of state.servicePorts.values()) totalEndpoints += p.endpoints.length;
    const large = totalEndpoints > LARGE_CLUSTER_ENDPOINTS;
    const { full, sameContext } = ports.begin(input.full, { node: state.node, variant: large });
    /** Blocks this render writes out, in rule order: a full render's are all of them. */
    const rerendered: ServiceBlock[] = [];
    /** A partial render's new rules, one per block of `rerendered`. */
    const bodies: Body[] = [];
    let portsRendered = 0;
    let sorted: ServicePortState[] | undefined;
    if (full) {
      ports.startFull();
      sorted = sortedServicePorts(state);
    } else {
      ports.startPartial(changes);
      const arena = new TextArena();
      for (const p of sortedUpdatedPorts(state, changes)) {
        const b = planBlock(p);
        bodies.push(writeBody(b, state.node, large, arena));
        portsRendered++;
        ports.plans.set(p.name, b);
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
      if (sameTopLevelLines(changes, ports.appliedPlans, ports.plans)) {
        topLevel = ports.appliedTop!;
      } else {
        sorted ??= sortedServicePorts(state);
        ordered = sorted.map((p) => ports.plans.get(p.name)!);
        topLevel = topLevelLines(ordered, state.node);
      }
    }
    const appliedTop = ports.appliedTop;
    const changedTop = (key: string) =>
      full || !sameLines(appliedTop!.get(key) ?? NONE, topLevel!.get(key) ?? NONE);

    const stream = new OutputStream(full && streamed ? this.recycler : undefined);
    const out = stream.out;
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
    let stale = full ? new Set<string>() : staleAfterPartial(changes, ports.appliedPlans, ports.plans).chains;

    // nat. Partial: only chains whose rules differ from what the kernel has. Full: every chain, its
    // rules rendered after the declarations, while the output streams.
    const natTops = NAT_CHAINS.filter((c) => changedTop(`nat ${c}`));
    // Full: every chain of every block (declared straight from the blocks); partial: the changed ones.
    let serviceChains: readonly string[] = [];
    let serviceSpans: readonly Span[] = [];
    if (!full) {
      const again = (b: ServiceBlock, arena: TextArena) => writeBody(b, state.node, large, arena);
      ({ names: serviceChains, texts: serviceSpans } = changedChains(
        rerendered,
        bodies,
        ports.appliedPlans,
        again,
      ));
    }
    const natJumps = () => (kernel.missingJumps ?? []).filter((j) => j.table === 'nat');
    if (full || natTops.length + serviceChains.length + stale.size + natJumps().length > 0) {
      out.line('*nat');
      chainsWritten += declareAll(out, natTops);
      if (full) {
        // Every port planned and its chains declared, the top-level rules, every block's rules: a
        // chunk at a time. The header goes first, on its own: the restore takes the table (reading
        // what the kernel has) while the ports are planned.
        yield stream.take();
        stream.consumed();
        const applied = sameContext ? ports.appliedPlans : undefined;
        const blocks = ports.plans;
        const planAndDeclare = (p: ServicePortState) => {
          const b = plannedPort(p, applied, planBlock);
          blocks.set(p.name, b);
          rerendered.push(b);
          chainsWritten += declareAll(out, b.chains);
        };
        const line = (l: string) => out.line(l);
        const body = (b: ServiceBlock) => {
          const { span } = writeBody(b, state.node, large, out.arena, false);
          out.span(span);
          rulesWritten += span.lines;
        };
        yield* paced(sorted!, planAndDeclare, stream);
        ordered = rerendered;
        topLevel = topLevelLines(ordered, state.node);
        const natTopLines = natTops.flatMap((c) => topLevel!.get(`nat ${c}`)!);
        yield* paced(natTopLines, line, stream);
        yield* paced(rerendered, body, stream);
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
      declareAll(out, staleSorted);
      for (const c of staleSorted) out.line(`-X ${c}`);
      writeJumps(natJumps());
      out.line('COMMIT');
    }

    // filter: the top-level chains only (REJECT/DROP for services without endpoints, firewalls).
    const filterTops = FILTER_CHAINS.filter((c) => changedTop(`filter ${c}`));
    const filterJumps = (kernel.missingJumps ?? []).filter((j) => j.table === 'filter');
    if (filterTops.length + filterJumps.length > 0) {
      out.line('*filter');
      chainsWritten += declareAll(out, filterTops);
      writeTops('filter', filterTops);
      writeJumps(filterJumps);
      out.line('COMMIT');
    }
    if (full) {
      // The canary: an empty chain whose disappearance means someone flushed the tables (upstream's
      // KUBE-PROXY-CANARY). Partial syncs check it and turn into a full sync when it is gone.
      out.line('*mangle');
      declare(out, KUBE_PROXY_CANARY);
      out.line('COMMIT');
    }
    const last = stream.take();
    if (last.length > 0) yield last;
    const written = stream.finish();
    return {
      chunks: written.chunks,
      bytes: written.bytes,
      get text() {
        return written.text;
      },
      full,
      topLevel: topLevel!,
      blocks: ports.plans,
      portsRendered,
      chainsWritten,
      rulesWritten,
      deletedChains: [...stale].sort(),
    };
  }

  /** Records that `output` is now in the kernel: the base for the next partial render. */
  applied(output: RenderOutput): void {
    this.ports.applied(output.topLevel, output.blocks);
  }

  /** Bytes of the blocks this renderer's streamed renders have written into, all of them together. */
  get streamedBlockBytes(): number {
    return this.recycler.allocated;
  }

  /** Forgets what was applied: the next render is full. */
  reset(): void {
    this.ports.reset();
  }

  /**
   * Per-service chains to delete after a full render: those the kernel has (iptables-save) or that the
   * last applied render wrote, and that no service port uses now.
   */
  private staleAfterFull(ordered: readonly ServiceBlock[], kernel: KernelState): Set<string> {
    const candidates: string[] = [];
    for (const c of kernel.existingChains ?? []) if (isServiceChain(c)) candidates.push(c);
    for (const c of droppedChains(this.ports.appliedPlans, this.ports.plans)) candidates.push(c);
    return unusedAmong(candidates, ordered, 'chains');
  }
}

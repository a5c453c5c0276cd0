import {
  AppliedPorts,
  type Body,
  type ChangeSet,
  changedChains,
  type ChunkWriter,
  ownedBy,
  OutputStream,
  paced,
  plannedPort,
  type ProxyState,
  type RenderedText,
  type ServicePortState,
  sortedServicePorts,
  sortedUpdatedPorts,
  type Stale,
  staleAfterPartial,
  TextArena,
  unusedAmong,
} from '@nodelet/proxy';
import { elementCommands, ElementStore } from './elements.js';
import { isAffinitySet, isServiceChain } from './names.js';
import { ELEMENT_CONTAINERS, type ElementContainer, type NftPortPlan, planPort } from './port-plan.js';
import { writeBody } from './port-rules.js';
import { setupCommands, T } from './setup.js';

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

/** The transaction as `nft -f` input: `chunks` of about 64 KiB (to be written one after another). */
export interface NftRenderOutput extends RenderedText {
  full: boolean;
  /** Commands (lines) in the transaction. */
  commands: number;
  /** Stale chains flushed but not deleted (delete them in a later transaction). */
  deferredChains: string[];
}

/** Commands a transaction holds: setup lines, flushes up front, chain and element statements. */
interface Tally {
  statements: number;
  setup: number;
  flushes: number;
}

/** The adds and deletes a render collects per set or map. */
type PendingElements = Map<ElementStore, { adds: string[]; deletes: string[] }>;

/**
 * Renders upstream's nftables layout as one `nft -f` transaction on the proxy's render engine
 * (`AppliedPorts`, `changedChains`, `OutputStream`), so the next transaction carries only changes: the
 * elements of changed service ports, their chains whose rules differ, and deletion of what nothing
 * uses any more. Every render counts as applied; after a failed transaction call `reset()`.
 */
export class NftRenderer {
  private readonly stores = new Map<ElementContainer, ElementStore>(
    ELEMENT_CONTAINERS.map(([field, name, kind]) => [field, new ElementStore(name, kind)]),
  );
  /** Rules written for another node are compared with what the kernel has: no full render for that. */
  private readonly ports = new AppliedPorts<NftPortPlan, true>(false);

  get canPartial(): boolean {
    return this.ports.canPartial;
  }

  reset(): void {
    this.ports.reset();
    for (const s of this.stores.values()) s.clear();
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
   * parses it while the next is rendered; a piece's memory is not written again): every chain that
   * exists is flushed up front, so no later line changes an earlier one. A partial render decides its
   * flushes per chain and yields at the end. After a failed transaction (or a render abandoned half
   * way) call `reset()`.
   */
  *steps(input: NftRenderInput): Generator<Buffer, NftRenderOutput, void> {
    const { state } = input;
    const ports = this.ports;
    const { full, sameContext } = ports.begin(input.full, { node: state.node, variant: '' });
    const stream = new OutputStream();
    const pieces = new Pieces();
    const out = stream.out;
    const pending: PendingElements = new Map();
    for (const store of this.stores.values()) pending.set(store, { adds: [], deletes: [] });
    const tally = { statements: 0, setup: 0, flushes: 0 };
    const stale = full
      ? yield* this.writeFull(input, stream, pieces, pending, tally, sameContext)
      : this.writePartial(input, out, pending, tally);

    // Flush every stale chain before deleting any: stale chains reference each other (a service
    // chain's vmap names its endpoint chains), and a referenced chain cannot be deleted. (A full
    // render flushed every existing chain up front.)
    const tail: string[] = [];
    const deferredChains: string[] = [];
    const staleChains = [...stale.chains].sort();
    if (!full) for (const c of staleChains) tail.push(`flush chain ${T} ${c}`);
    for (const c of staleChains) {
      if (input.deleteStaleNow ?? true) tail.push(`delete chain ${T} ${c}`);
      else deferredChains.push(c); // handed to the caller, which deletes them in a later transaction
    }
    for (const s of [...stale.sets].sort()) tail.push(`delete set ${T} ${s}`);
    ports.applied(true);
    writeElements(out, pending, tally);
    for (const l of tail) out.line(l);
    const last = stream.take();
    if (last.length > 0) yield pieces.add(last);
    const { bytes } = stream.finish();
    let text: string | undefined;
    return {
      chunks: pieces.all,
      bytes,
      get text() {
        return (text ??= Buffer.concat(pieces.all).toString('utf8'));
      },
      full,
      commands: tally.setup + tally.flushes + tally.statements + tail.length,
      deferredChains,
    };
  }

  /**
   * A full transaction's setup, flushes of every per-service chain that exists, and every port's
   * chains, yielded in whole pieces while the ports are rendered; returns what is stale.
   */
  private *writeFull(
    input: NftRenderInput,
    stream: OutputStream,
    pieces: Pieces,
    pending: PendingElements,
    tally: Tally,
    sameContext: boolean,
  ): Generator<Buffer, Stale, void> {
    const { state } = input;
    const { ports, stores } = this;
    const out = stream.out;
    const fresh = !!input.fresh;
    // The per-service chains in the kernel: what the listing showed, else what was written.
    const existing = fresh
      ? []
      : [...(input.existingChains ?? ownedBy(ports.appliedPlans.values(), 'chains'))]
          .filter(isServiceChain)
          .sort();
    const setup = setupCommands(state.node, fresh, !!input.recreateBaseChains);
    for (const l of setup) out.line(l);
    for (const c of existing) out.line(`flush chain ${T} ${c}`);
    tally.setup = setup.length;
    tally.flushes = existing.length;
    for (const s of stores.values()) s.clear();
    const applied = sameContext ? ports.appliedPlans : undefined;
    ports.startFull();
    const opened = { table: false };
    const writePort = (p: ServicePortState) => {
      const plan = plannedPort(p, applied, planPort);
      ports.plans.set(p.name, plan);
      this.replaceElements(plan.port.name, plan, pending);
      if (plan.chains.length === 0) return;
      if (!opened.table) out.line(`table ${T} {`);
      opened.table = true;
      const { span } = writeBody(plan, state.node, out.arena, false);
      out.span(span);
      tally.statements += plan.chains.length + span.lines;
    };
    for (const chunk of paced(sortedServicePorts(state), writePort, stream, true)) yield pieces.add(chunk);
    if (opened.table) out.line('}');
    return this.staleAfterFull(input, existing);
  }

  /**
   * A partial transaction's elements of changed and removed ports, and the chains whose rules differ
   * from what the kernel has (flushed first when they exist); returns what is stale.
   */
  private writePartial(
    input: NftRenderInput,
    out: ChunkWriter,
    pending: PendingElements,
    tally: Tally,
  ): Stale {
    const { state, changes } = input;
    const ports = this.ports;
    ports.startPartial(changes);
    for (const name of changes.removed) this.replaceElements(name, undefined, pending);
    const plans: NftPortPlan[] = [];
    const bodies: Body[] = [];
    const arena = new TextArena();
    for (const p of sortedUpdatedPorts(state, changes)) {
      const plan = planPort(p);
      ports.plans.set(p.name, plan);
      this.replaceElements(p.name, plan, pending);
      plans.push(plan);
      bodies.push(writeBody(plan, state.node, arena));
    }
    // The kernel has the applied rules as they were written: for the node of then.
    const node = ports.appliedContext!.node;
    const again = (plan: NftPortPlan, scratch: TextArena) => writeBody(plan, node, scratch);
    const changed = changedChains(plans, bodies, ports.appliedPlans, again);
    // An existing chain is flushed first; a chain never written needs no flush.
    changed.names.forEach((c, i) => {
      if (changed.existed[i]) out.line(`flush chain ${T} ${c}`);
    });
    tally.flushes = changed.existed.filter(Boolean).length;
    if (changed.names.length > 0) {
      out.line(`table ${T} {`);
      for (const text of changed.texts) {
        out.span(text);
        tally.statements += 1 + text.lines;
      }
      out.line('}');
    }
    return staleAfterPartial(changes, ports.appliedPlans, ports.plans);
  }

  /** Sets the elements the port `name` wants (none when `plan` is undefined), collecting the changes. */
  private replaceElements(name: string, plan: NftPortPlan | undefined, pending: PendingElements): void {
    for (const [field, store] of this.stores) {
      const p = pending.get(store)!;
      store.replace(name, plan?.elements[field] ?? [], p.adds, p.deletes);
    }
  }

  /**
   * After a full render: the per-service chains `existing` names and the affinity sets the kernel has
   * (listed, or written by this renderer) that no service port uses now.
   */
  private staleAfterFull(input: NftRenderInput, existing: readonly string[]): Stale {
    const active = [...this.ports.plans.values()];
    const sets = input.fresh ? [] : (input.existingSets ?? ownedBy(this.ports.appliedPlans.values(), 'sets'));
    return {
      chains: unusedAmong(existing, active, 'chains'),
      sets: unusedAmong([...sets].filter(isAffinitySet), active, 'sets'),
    };
  }
}

/** The pieces of a transaction: each step's chunks as one (more than one where the arena took a new block). */
class Pieces {
  readonly all: Buffer[] = [];

  add(chunks: Buffer[]): Buffer {
    const piece = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    this.all.push(piece);
    return piece;
  }
}

/** `delete element` and `add element` commands of every set and map, each batched. */
function writeElements(out: ChunkWriter, pending: PendingElements, tally: { statements: number }): void {
  for (const [store, { adds, deletes }] of pending) {
    for (const c of elementCommands(T, store.name, adds, deletes)) out.line(c);
    tally.statements += adds.length + deletes.length;
  }
}

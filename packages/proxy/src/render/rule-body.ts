import type { ServicePortState } from '../state.js';
import type { Span } from './text-arena.js';

/**
 * What a backend plans for one service port: the chains it owns, in the order their rules are
 * written (its body's entries), and the sets it owns. A backend's plan adds what its rules need.
 */
export interface PortPlan {
  readonly port: ServicePortState;
  readonly chains: readonly string[];
  /** Sets of this port (nftables' affinity sets); none when undefined. */
  readonly sets?: readonly string[];
  /** Position of each chain in `chains`, built when a large plan is first searched. */
  chainIndex?: Map<string, number>;
}

/**
 * A port's rules as its backend rendered them: one range of an arena, and where each chain's text is
 * in it. With n chains, chain i is bytes [layout[i], layout[i + 1]) of the range and holds
 * layout[n + 1 + i] rules; its first layout[2n + 1 + i] bytes are a preamble written with it but not
 * part of its rules (nftables declares an endpoint's affinity set there). One small array, not one
 * object per chain. Rules are not kept from one render to the next: a renderer keeps what it needs to
 * render them again (the port's state), not their text.
 */
export interface Body {
  readonly span: Span;
  readonly layout: Uint32Array;
}

/**
 * A layout for `chains` chains; `keep`: a new one (to compare later), else scratch valid until the next
 * call and holding what that call wrote only (enough for writing the body out; not for comparing it).
 */
export function bodyLayout(chains: number, keep: boolean): Uint32Array {
  const size = 3 * chains + 1;
  if (keep) return new Uint32Array(size);
  if (scratch.length < size) scratch = new Uint32Array(2 * size);
  return scratch;
}
/** A layout written and read within one step (a full render's bodies are written out, not compared). */
let scratch = new Uint32Array(64);

/** The text of chain `i` of a plan rendered as `body`, its preamble included. */
export function chainText(plan: PortPlan, body: Body, i: number): Span {
  const { span, layout } = body;
  const n = plan.chains.length;
  return {
    block: span.block,
    start: span.start + layout[i]!,
    end: span.start + layout[i + 1]!,
    lines: layout[n + 1 + i]!,
  };
}

/** The rules of chain `i` of a plan rendered as `body`: its text without the preamble. */
export function chainRules(plan: PortPlan, body: Body, i: number): Span {
  const text = chainText(plan, body, i);
  const preamble = body.layout[2 * plan.chains.length + 1 + i]!;
  return preamble === 0 ? text : { ...text, start: text.start + preamble };
}

/** Where `chain` is in a plan's chains; undefined when it has no such chain. */
export function chainPosition(plan: PortPlan, chain: string): number | undefined {
  if (plan.chains.length <= 16) {
    const i = plan.chains.indexOf(chain);
    return i < 0 ? undefined : i;
  }
  plan.chainIndex ??= new Map(plan.chains.map((c, k) => [c, k]));
  return plan.chainIndex.get(chain);
}

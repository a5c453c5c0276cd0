import { type Body, chainPosition, chainRules, chainText, type PortPlan } from './rule-body.js';
import { sameSpan, type Span, TextArena } from './text-arena.js';

/** The chains a partial render writes, in order: name, text (preamble included), and whether it exists. */
export interface ChangedChains {
  readonly names: string[];
  readonly texts: Span[];
  /** The chain is in the kernel (an applied plan has it): some tools must flush it first. */
  readonly existed: boolean[];
}

/**
 * The chains of re-planned ports (`plans`, their new rules `bodies`) whose rules differ from what the
 * kernel has: an endpoint change rewrites the service chain and adds one endpoint chain, not every
 * endpoint chain of the service. What the kernel has is rendered again (`writeAgain`) from the applied
 * plan, as it was written then.
 */
export function changedChains<P extends PortPlan>(
  plans: readonly P[],
  bodies: readonly Body[],
  applied: ReadonlyMap<string, P>,
  writeAgain: (plan: P, arena: TextArena) => Body,
): ChangedChains {
  const changed: ChangedChains = { names: [], texts: [], existed: [] };
  const scratch = new TextArena();
  for (let k = 0; k < plans.length; k++) {
    const plan = plans[k]!;
    const body = bodies[k]!;
    const before = applied.get(plan.port.name);
    const beforeBody = before && writeAgain(before, scratch);
    for (let i = 0; i < plan.chains.length; i++) {
      const name = plan.chains[i]!;
      const at = before && chainPosition(before, name);
      if (at !== undefined && sameSpan(chainRules(before!, beforeBody!, at), chainRules(plan, body, i))) {
        continue;
      }
      changed.names.push(name);
      changed.texts.push(chainText(plan, body, i));
      changed.existed.push(at !== undefined);
    }
  }
  return changed;
}

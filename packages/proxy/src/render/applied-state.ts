import type { ChangeSet, NodeContext, ServicePortState } from '../state.js';
import type { PortPlan } from './rule-body.js';

/** What a render's rules are written for: the node, and a backend's variant (iptables: large-cluster mode). */
export interface RenderContext {
  readonly node: NodeContext;
  readonly variant: string | boolean;
}

/**
 * What a renderer knows of the kernel's rules, service port by service port: the plans of its last
 * render, and those last applied (their chains and rules are in the kernel), which partial renders
 * compare against (KEP-3453). The top-level part (`Top`) is the backend's: it is only kept here.
 * After a successful apply call `applied()`; after a failed one `reset()`, which makes the next
 * render full.
 */
export class AppliedPorts<P extends PortPlan, Top> {
  /** The plans of the last render (of the render under way, while it runs), by service port name. */
  plans = new Map<string, P>();
  /** Each service port's plan as last applied. */
  appliedPlans: ReadonlyMap<string, P> = new Map();
  /** The top-level part as last applied; undefined until a full render is applied, and after `reset()`. */
  appliedTop: Top | undefined;
  /** What the last render's rules were written for, and the applied ones'. */
  private context: RenderContext | undefined;
  private appliedContextValue: RenderContext | undefined;

  constructor(
    /** Whether rules written for another node or variant are all rewritten (a full render), none carried over. */
    private readonly fullOnNewContext: boolean,
  ) {}

  /** Whether a partial render is possible (a full one was applied and nothing failed since). */
  get canPartial(): boolean {
    return this.appliedTop !== undefined;
  }

  /** What the applied plans' rules were written for (to render them again as the kernel has them). */
  get appliedContext(): RenderContext | undefined {
    return this.appliedContextValue;
  }

  /**
   * Starts a render for `context`: whether it is full (asked, nothing applied, or a new context), and
   * whether the last render was for the same context (its plans may be carried over).
   */
  begin(full: boolean, context: RenderContext): { full: boolean; sameContext: boolean } {
    const last = this.context;
    const sameContext = last?.node === context.node && last.variant === context.variant;
    if (!sameContext) this.context = context;
    return { full: full || !this.canPartial || (!sameContext && this.fullOnNewContext), sameContext };
  }

  /** A full render starts: until it is applied, nothing partial may build on the plans it replaces. */
  startFull(): void {
    this.appliedTop = undefined;
    this.plans = new Map(); // planned port by port as the render goes
  }

  /** A partial render starts from the last render's plans, without the removed ports. */
  startPartial(changes: ChangeSet): void {
    this.plans = new Map(this.plans);
    for (const name of changes.removed) this.plans.delete(name);
  }

  /** Records that the last render is now in the kernel, with `top`: the base for the next partial render. */
  applied(top: Top, plans: ReadonlyMap<string, P> = this.plans): void {
    this.appliedTop = top;
    this.appliedPlans = plans;
    this.appliedContextValue = this.context;
  }

  /** Forgets that anything was applied: the next render is full (the applied plans still name what may exist). */
  reset(): void {
    this.appliedTop = undefined;
  }
}

/**
 * A full render's plan for `p`. A service port whose state is the very object an applied plan was made
 * from (the tracker keeps it while nothing about the port changes) keeps that plan.
 */
export function plannedPort<P extends PortPlan>(
  p: ServicePortState,
  applied: ReadonlyMap<string, P> | undefined,
  plan: (p: ServicePortState) => P,
): P {
  const a = applied?.get(p.name);
  return a?.port === p ? a : plan(p);
}

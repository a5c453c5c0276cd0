/**
 * The contract of a probe handler and the `probe.handler` capability are defined in `@nodelet/cri`
 * (where plugins may import them) and re-exported here; this module adds what only the kubelet uses:
 * the User-Agent probes announce and the registry of handlers by type.
 */
import type { Probe } from '@nodelet/api';
import type { ProbeContext, ProbeHandler } from '@nodelet/cri';

export {
  type ProbeContext,
  type ProbeHandler,
  ProbeHandlerCapability,
  type ProbeOutcome,
  type ProbeResult,
  type ProbeType,
} from '@nodelet/cri';

/** The Kubernetes minor version nodelet follows, as probes announce it (`User-Agent: kube-probe/1.34`). */
export const KUBE_PROBE_USER_AGENT = 'kube-probe/1.34';

/** Handlers by type; a later handler of a type replaces an earlier one. */
export class ProbeHandlerRegistry {
  private readonly byType = new Map<string, ProbeHandler>();

  constructor(handlers: Iterable<ProbeHandler>) {
    for (const h of handlers) this.byType.set(h.type, h);
  }

  /** The handler for the field `probe` sets, or undefined when no registered handler matches. */
  handlerFor(probe: Probe): ProbeHandler | undefined {
    const fields = probe as Record<string, unknown>;
    for (const [type, handler] of this.byType) {
      const value = fields[type];
      if (value !== undefined && value !== null) return handler;
    }
    return undefined;
  }

  types(): string[] {
    return [...this.byType.keys()];
  }
}

/**
 * The deadline of one run of a handler: the prober's (`ctx.signal`), or — for a handler called outside
 * the prober — a new `clock.deadline` of the probe's timeout. Cancel it when the run is done.
 */
export function runDeadline(ctx: ProbeContext): { readonly signal: AbortSignal; cancel(): void } {
  return ctx.signal ? { signal: ctx.signal, cancel: () => undefined } : ctx.clock.deadline(ctx.timeoutMs);
}

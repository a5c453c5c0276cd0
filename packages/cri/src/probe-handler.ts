import type { Container, Pod, Probe } from '@nodelet/api';
import { type Clock, defineCapability, type Logger } from '@nodelet/kernel';
import type { RuntimeService } from './capabilities.js';

/**
 * The contract of a probe handler, and the `probe.handler` capability that lets a plugin add one.
 *
 * A handler runs one kind of check — `httpGet`, `tcpSocket`, `exec`, `grpc`, or a kind of its own — once,
 * and says what it found. Thresholds, periods, startup gating and what a failure leads to are the prober
 * manager's business, never a handler's. A probe spec picks its handler by the field it sets: a probe with
 * `httpGet: {…}` goes to the handler whose `type` is `httpGet`.
 *
 * Plugins provide handlers through `ProbeHandlerCapability` (cardinality `many`); the kubelet collects
 * them with `getAll`. A plugin's handler of a built-in type replaces the built-in one (a proxying
 * `httpGet`, say); a handler of a new type serves probes that set that field (which validation and the
 * strict manifest decoder only let through where the schema allows it).
 *
 * It lives here, beside `cri.runtime`, and not in the kubelet, because its providers are plugins — a
 * runtime answering probes of its own containers (runtime-fake), a proxying prober — and plugins depend
 * on capability packages, never on `@nodelet/kubelet`. The kubelet re-exports it.
 */
export type ProbeType = 'liveness' | 'readiness' | 'startup';

/**
 * What one run of a handler found:
 *  - `success`: healthy; `output` is kept for the log (an HTTP body, an exec's stdout).
 *  - `warning`: healthy, with something to tell (upstream's probe.Warning: a redirect to another host
 *    that was not followed). Counts as a success and is recorded as a `ProbeWarning` event.
 *  - `failure`: unhealthy; `output` says why and becomes the event message
 *    (`Liveness probe failed: HTTP probe failed with statuscode: 500`).
 *  - `unknown`: the check could not be made (no such port, the runtime did not answer). Like a thrown
 *    error, it is retried at once (three attempts in all, as upstream) and then thrown away: it changes
 *    nothing.
 */
export type ProbeResult = 'success' | 'warning' | 'failure' | 'unknown';

export interface ProbeOutcome {
  result: ProbeResult;
  output: string;
}

/** Everything a handler may use for one run. */
export interface ProbeContext {
  readonly probeType: ProbeType;
  /** The probe as the pod spec has it (with API defaults); the handler reads its own field. */
  readonly probe: Probe;
  readonly pod: Pod;
  readonly container: Container;
  /** The runtime container being probed. */
  readonly containerId: string;
  /** The pod's IP (the node's for host-network pods); '' while the pod has none. */
  readonly podIP: string;
  /** The probe's `timeoutSeconds`, in ms. */
  readonly timeoutMs: number;
  /**
   * Aborts when `timeoutMs` has passed on the kernel clock (the prober's `clock.deadline`): a handler
   * bounds its I/O by it. A handler that has not answered a little after it is cut off by the prober.
   * Absent when a handler is called outside the prober; it then makes its own `clock.deadline`.
   */
  readonly signal?: AbortSignal;
  /** CRI runtime service (ExecSync). */
  readonly runtime: RuntimeService;
  /**
   * The kernel clock. A handler that does real I/O (sockets) wraps the promise it awaits in
   * `clock.track(…, timeoutMs)`, so a kubelet under virtual time waits for it (up to the timeout in real
   * time) before moving time on; its timeout is a `clock.deadline`, so a server that never answers fails
   * the probe at exactly `timeoutSeconds` of virtual time. A handler that only talks to the runtime
   * (exec) does not track: the runtime measures the timeout on the clock.
   */
  readonly clock: Clock;
  readonly logger: Logger;
  /** `kube-probe/<major>.<minor>`, for handlers that identify themselves. */
  readonly userAgent: string;
  /**
   * Set when the handler runs a container's lifecycle hook (`lifecycle.postStart`/`preStop`), not a
   * probe; `probe` then holds the hook's action and `probeType` is meaningless. An `httpGet` hook
   * fails only when no answer comes (upstream judges the transport, not the HTTP status): a handler
   * answers `success` for any response. A scripted handler (runtime-fake) does not count a hook as a
   * probe.
   */
  readonly hook?: 'postStart' | 'preStop';
}

export interface ProbeHandler {
  /** The probe field this handler serves: `httpGet`, `tcpSocket`, `exec`, `grpc`, or a new one. */
  readonly type: 'httpGet' | 'tcpSocket' | 'exec' | 'grpc' | (string & {});
  /** Runs the check once. Throwing is the same as answering `unknown` with the error's message. */
  probe(ctx: ProbeContext): Promise<ProbeOutcome>;
}

export const ProbeHandlerCapability = defineCapability<ProbeHandler>('probe.handler', {
  version: 1,
  cardinality: 'many',
  description: 'a kind of container probe (httpGet, tcpSocket, exec, grpc, or a new one)',
});

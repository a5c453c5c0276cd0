/**
 * A timeout on a clock, as an AbortSignal: what a probe's `timeoutSeconds`, a hook's grace or a request's
 * limit hands to the I/O it bounds (fetch, a socket, a gRPC call). On the virtual clock it expires when
 * virtual time reaches it, so a test of a timeout takes no real time.
 */

/** The reason a deadline's signal carries; `name` is 'TimeoutError' as for AbortSignal.timeout. */
export class DeadlineExceededError extends Error {
  override readonly name = 'TimeoutError';
  constructor(readonly ms: number) {
    super(`deadline of ${ms} ms exceeded`);
  }
}

export interface Deadline {
  /** Aborts when the deadline passes (reason: DeadlineExceededError) or when the parent signal aborts. */
  readonly signal: AbortSignal;
  /** True once the time ran out (not when the parent aborted). */
  readonly expired: boolean;
  /** Ends the deadline early and frees its timer; the signal does not abort. Call it when the work is done. */
  cancel(): void;
}

export function startDeadline(
  setTimer: (fn: () => void, ms: number) => () => void,
  ms: number,
  parent?: AbortSignal,
): Deadline {
  const controller = new AbortController();
  let expired = false;
  const onParentAbort = () => finish(parent!.reason);
  const cancelTimer = setTimer(() => {
    expired = true;
    finish(new DeadlineExceededError(ms));
  }, ms);
  function finish(reason?: unknown) {
    cancelTimer();
    parent?.removeEventListener('abort', onParentAbort);
    if (reason !== undefined && !controller.signal.aborted) controller.abort(reason);
  }
  if (parent?.aborted) finish(parent.reason);
  else parent?.addEventListener('abort', onParentAbort, { once: true });
  return {
    signal: controller.signal,
    get expired() {
      return expired;
    },
    cancel: () => finish(),
  };
}

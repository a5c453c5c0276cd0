/**
 * Upstream's max-in-flight filter (--max-requests-inflight, --max-mutating-requests-inflight): at most so
 * many read-only and so many mutating requests are served at once; one more is answered 429 "Too many
 * requests, please try again later." with Retry-After: 1, so clients back off and retry instead of piling
 * up work. Long-running requests are not counted, and a member of system:masters is never turned away
 * (upstream: "a super-admin or a loopback connection"). A limit of 0 means no limit.
 */
import { ApiError } from '../status.js';

export interface InFlightLimits {
  /** Read-only requests (GET, HEAD) served at once (upstream's default 400). */
  maxReadOnly: number;
  /** Mutating requests served at once (upstream's default 200). */
  maxMutating: number;
}

export const defaultInFlightLimits: InFlightLimits = { maxReadOnly: 400, maxMutating: 200 };

export const tooManyRequests = () =>
  new ApiError(429, 'TooManyRequests', 'Too many requests, please try again later.', {
    retryAfterSeconds: 1,
  });

export class MaxInFlight {
  private readOnly = 0;
  private mutating = 0;

  constructor(private readonly limits: InFlightLimits) {}

  /**
   * Counts a request in, or throws 429 when its kind is at its limit. Returns the function that counts
   * it out (call it once, when the answer is done).
   */
  admit(method: string, groups: readonly string[]): () => void {
    const mutating = method !== 'GET' && method !== 'HEAD';
    const limit = mutating ? this.limits.maxMutating : this.limits.maxReadOnly;
    const current = mutating ? this.mutating : this.readOnly;
    if (limit > 0 && current >= limit && !groups.includes('system:masters')) throw tooManyRequests();
    if (mutating) this.mutating++;
    else this.readOnly++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (mutating) this.mutating--;
      else this.readOnly--;
    };
  }

  /** Requests being served now, for tests and metrics. */
  get inFlight(): { readOnly: number; mutating: number } {
    return { readOnly: this.readOnly, mutating: this.mutating };
  }
}

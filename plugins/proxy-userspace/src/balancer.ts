import type { Clock } from '@nodelet/kernel';
import type { EndpointInfo } from '@nodelet/proxy';

/**
 * Picks an endpoint for a new connection: round-robin, or — with ClientIP session affinity — the
 * endpoint this client IP used within the last `stickySeconds` (upstream userspace proxy's
 * LoadBalancerRR). Affinity entries of endpoints that went away are dropped on the next pick.
 */
export class RoundRobin {
  private endpoints: readonly EndpointInfo[] = [];
  private next = 0;
  private readonly affinity = new Map<string, { endpoint: string; last: number }>();

  constructor(
    private readonly clock: Clock,
    private stickySeconds = 0,
  ) {}

  update(endpoints: readonly EndpointInfo[], stickySeconds: number): void {
    this.endpoints = endpoints;
    this.stickySeconds = stickySeconds;
    if (this.next >= endpoints.length) this.next = 0;
    const present = new Set(endpoints.map((e) => e.endpoint));
    for (const [ip, a] of this.affinity) if (!present.has(a.endpoint)) this.affinity.delete(ip);
    if (stickySeconds === 0) this.affinity.clear();
  }

  get size(): number {
    return this.endpoints.length;
  }

  /** The endpoint for `clientIP`, skipping `exclude` (endpoints that just refused); undefined when none. */
  pick(clientIP: string, exclude: ReadonlySet<string> = new Set()): EndpointInfo | undefined {
    const now = this.clock.now();
    if (this.stickySeconds > 0) {
      const a = this.affinity.get(clientIP);
      if (a && now - a.last < this.stickySeconds * 1000 && !exclude.has(a.endpoint)) {
        const ep = this.endpoints.find((e) => e.endpoint === a.endpoint);
        if (ep) {
          a.last = now;
          return ep;
        }
      }
    }
    for (let i = 0; i < this.endpoints.length; i++) {
      const ep = this.endpoints[this.next]!;
      this.next = (this.next + 1) % this.endpoints.length;
      if (exclude.has(ep.endpoint)) continue;
      if (this.stickySeconds > 0) this.affinity.set(clientIP, { endpoint: ep.endpoint, last: now });
      return ep;
    }
    return undefined;
  }
}

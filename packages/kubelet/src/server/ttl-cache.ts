import type { Clock } from '@nodelet/kernel';

/**
 * Answers remembered for a while on the kernel clock (upstream's webhook caches): each entry lives for
 * the TTL given when it was stored. Expired entries are dropped when read and, past `maxEntries`, the
 * oldest go first, so a stream of distinct keys cannot grow it without bound.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (this.clock.now() >= entry.expires) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { value, expires: this.clock.now() + ttlMs });
  }

  get size(): number {
    return this.entries.size;
  }
}

import type { KubeObject } from '../object.js';

/**
 * ClusterIP and NodePort allocation. What is allocated is not stored on its own: it is read off the
 * Services (rebuilt at start, then kept current from every Service write), so an allocation can never
 * outlive its Service or be lost by a restart.
 */
export interface Cidr {
  base: number;
  bits: number;
  size: number;
  text: string;
}

/** `what` names the range in errors, with an example of it: `service CIDR` (`10.96.0.0/12`). */
export function parseCidr(text: string, what = 'service CIDR', example = '10.96.0.0/12'): Cidr {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`${what} ${JSON.stringify(text)} is not an IPv4 CIDR such as ${example}`);
  const octets = m.slice(1, 5).map(Number);
  const bits = Number(m[5]);
  if (octets.some((o) => o > 255) || bits < 8 || bits > 30) {
    throw new Error(`${what} ${JSON.stringify(text)} must be an IPv4 CIDR with a prefix from /8 to /30`);
  }
  const size = 2 ** (32 - bits);
  const address = ((octets[0]! << 24) >>> 0) + (octets[1]! << 16) + (octets[2]! << 8) + octets[3]!;
  const base = Math.floor(address / size) * size;
  return { base, bits, size, text: `${ipToString(base)}/${bits}` };
}

export function ipToNumber(ip: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(ip);
  if (!m) return undefined;
  const o = m.slice(1).map(Number);
  if (o.some((x) => x > 255)) return undefined;
  return ((o[0]! << 24) >>> 0) + (o[1]! << 16) + (o[2]! << 8) + o[3]!;
}

export function ipToString(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export interface PortRange {
  min: number;
  max: number;
}

export function parsePortRange(text: string): PortRange {
  const m = /^(\d+)-(\d+)$/.exec(text.trim());
  const min = Number(m?.[1]);
  const max = Number(m?.[2]);
  if (!m || min < 1 || max > 65535 || min > max) {
    throw new Error(`node port range ${JSON.stringify(text)} must look like 30000-32767`);
  }
  return { min, max };
}

const key = (svc: KubeObject) => `${svc.metadata.namespace}/${svc.metadata.name}`;

export class ServiceAllocator {
  /** IP (as a number) → owning service key. */
  private readonly ips = new Map<number, string>();
  /** `port/protocol` → owning service key. */
  private readonly ports = new Map<string, string>();
  private ipCursor = 0;
  private portCursor = 0;

  constructor(
    readonly cidr: Cidr,
    readonly nodePorts: PortRange,
  ) {}

  /** The first usable address: the `kubernetes` Service's ClusterIP. */
  get firstIP(): string {
    return ipToString(this.cidr.base + 1);
  }

  reset(services: readonly KubeObject[]): void {
    this.ips.clear();
    this.ports.clear();
    for (const svc of services) this.observe(undefined, svc);
  }

  /** Accounts for a write: `prev` is released, `next` is held. */
  observe(prev: KubeObject | undefined, next: KubeObject | undefined): void {
    if (prev) {
      const k = key(prev);
      for (const [ip, owner] of this.ips) if (owner === k) this.ips.delete(ip);
      for (const [p, owner] of this.ports) if (owner === k) this.ports.delete(p);
    }
    if (next) {
      const k = key(next);
      for (const ip of clusterIPsOf(next)) {
        const n = ipToNumber(ip);
        if (n !== undefined) this.ips.set(n, k);
      }
      for (const p of next.spec?.ports ?? []) {
        if (typeof p?.nodePort === 'number' && p.nodePort > 0)
          this.ports.set(`${p.nodePort}/${p.protocol ?? 'TCP'}`, k);
      }
    }
  }

  inRange(ip: string): boolean {
    const n = ipToNumber(ip);
    return n !== undefined && n > this.cidr.base && n < this.cidr.base + this.cidr.size - 1;
  }

  /** The service holding `ip`, if any. */
  ipOwner(ip: string): string | undefined {
    const n = ipToNumber(ip);
    return n === undefined ? undefined : this.ips.get(n);
  }

  portOwner(port: number, protocol: string): string | undefined {
    return this.ports.get(`${port}/${protocol}`);
  }

  /** A free ClusterIP (not the network or broadcast address, not the reserved first address). */
  allocateIP(): string | undefined {
    const usable = this.cidr.size - 3;
    for (let i = 0; i < usable; i++) {
      const n = this.cidr.base + 2 + ((this.ipCursor + i) % usable);
      if (!this.ips.has(n)) {
        this.ipCursor = (this.ipCursor + i + 1) % usable;
        return ipToString(n);
      }
    }
    return undefined;
  }

  /** A free node port for `protocol`, not in `taken` (ports this same service is taking now). */
  allocatePort(protocol: string, taken: ReadonlySet<number>): number | undefined {
    const span = this.nodePorts.max - this.nodePorts.min + 1;
    for (let i = 0; i < span; i++) {
      const port = this.nodePorts.min + ((this.portCursor + i) % span);
      if (!this.ports.has(`${port}/${protocol}`) && !taken.has(port)) {
        this.portCursor = (this.portCursor + i + 1) % span;
        return port;
      }
    }
    return undefined;
  }
}

export function clusterIPsOf(svc: KubeObject): string[] {
  const ips: string[] = Array.isArray(svc.spec?.clusterIPs) ? svc.spec.clusterIPs : [];
  const one = svc.spec?.clusterIP;
  const all = typeof one === 'string' && one && !ips.includes(one) ? [one, ...ips] : ips;
  return all.filter((ip) => ip && ip !== 'None');
}

import { invalidInput, NodeletError } from '@nodelet/kernel';

/**
 * Pod IPs from one IPv4 CIDR, handed out the way CNI's host-local IPAM does it: the network address
 * and the gateway (`.1`) and the broadcast address are never given out; allocation goes on from the
 * address after the last one handed out, wrapping at the end of the range, so a released address
 * is reused only after the rest of the range has been offered (a fresh pod does not inherit the IP
 * a dead one had a moment ago). Allocation and release are O(1) while the range has room.
 */
export class IpAllocator {
  readonly cidr: string;
  private readonly first: number;
  private readonly last: number;
  private readonly used = new Set<number>();
  private cursor: number;

  constructor(cidr: string) {
    const { network, prefix } = parseIpv4Cidr(cidr);
    const size = 2 ** (32 - prefix);
    this.cidr = `${formatIpv4(network)}/${prefix}`;
    this.first = network + 2;
    this.last = network + size - 2;
    this.cursor = this.last;
  }

  /** Number of addresses this range can hand out. */
  get capacity(): number {
    return Math.max(0, this.last - this.first + 1);
  }

  get allocated(): number {
    return this.used.size;
  }

  allocate(): string {
    const capacity = this.capacity;
    let candidate = this.cursor;
    for (let i = 0; i < capacity; i++) {
      candidate = candidate >= this.last ? this.first : candidate + 1;
      if (!this.used.has(candidate)) {
        this.used.add(candidate);
        this.cursor = candidate;
        return formatIpv4(candidate);
      }
    }
    const range = capacity > 0 ? `${formatIpv4(this.first)}-${formatIpv4(this.last)}` : this.cidr;
    throw new NodeletError(
      'Internal',
      `plugin type="host-local" failed (add): failed to allocate for range 0: no IP addresses available in range set: ${range}`,
    );
  }

  /** Gives `ip` back; an address this allocator did not hand out is ignored. */
  release(ip: string): void {
    const n = parseIpv4(ip);
    if (n !== undefined) this.used.delete(n);
  }

  has(ip: string): boolean {
    const n = parseIpv4(ip);
    return n !== undefined && this.used.has(n);
  }
}

export function parseIpv4Cidr(cidr: string): { network: number; prefix: number } {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(cidr);
  const address = m ? parseIpv4(m[1]!) : undefined;
  const prefix = m ? Number(m[2]) : NaN;
  if (address === undefined || !(prefix >= 0 && prefix <= 32)) {
    throw invalidInput(
      `pod CIDR "${cidr}" is not an IPv4 CIDR such as 10.244.0.0/16 (the fake runtime hands out IPv4 addresses only)`,
    );
  }
  if (prefix > 30)
    throw invalidInput(`pod CIDR "${cidr}" is too small: it needs a prefix of /30 or shorter to hold a pod`);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return { network: (address & mask) >>> 0, prefix };
}

function parseIpv4(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    n = n * 256 + octet;
  }
  return n;
}

function formatIpv4(n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

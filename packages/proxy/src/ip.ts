import { isIPv4 } from 'node:net';

/** An IPv4 address as an unsigned 32-bit number. */
export function ipv4ToNumber(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

/** Whether IPv4 `ip` is inside IPv4 `cidr` (`a.b.c.d/n`). IPv6 on either side: false. */
export function cidrContains(cidr: string, ip: string): boolean {
  const [base, bitsText] = cidr.split('/');
  if (!base || !isIPv4(base) || !isIPv4(ip)) return false;
  const bits = bitsText === undefined ? 32 : Number(bitsText);
  if (!Number.isInteger(bits) || bits < 0 || bits > 32) return false;
  if (bits === 0) return true;
  const mask = bits === 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
  return (ipv4ToNumber(base) & mask) >>> 0 === (ipv4ToNumber(ip) & mask) >>> 0;
}

/** The node IPs that accept NodePort traffic: all of them when `cidrs` is empty, else those inside one. */
export function nodePortIPs(nodeIPs: readonly string[], cidrs: readonly string[]): string[] {
  if (cidrs.length === 0) return [...nodeIPs];
  return nodeIPs.filter((ip) => cidrs.some((c) => cidrContains(c, ip)));
}

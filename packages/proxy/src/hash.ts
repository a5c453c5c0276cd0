import { hash } from 'node:crypto';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 (standard alphabet, with padding), as Go's base32.StdEncoding. */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += '=';
  return out;
}

const cache = new Map<string, string>();
const CACHE_LIMIT = 1 << 20;

/**
 * The first `length` characters of base32(sha256(text)): how upstream kube-proxy names its chains, so
 * chain names are stable across restarts and equal to what kube-proxy would use for the same service.
 * Results are remembered (upstream computes a service's chain names once, not on every sync); the memo
 * is dropped when it passes a million names.
 */
export function hashName(text: string, length = 16): string {
  const key = length === 16 ? text : `${length}\u0000${text}`;
  let hit = cache.get(key);
  if (hit === undefined) {
    if (cache.size >= CACHE_LIMIT) cache.clear();
    // Base32 turns each 5 bytes into 8 characters: the digest's first bytes give the first characters.
    const digest = hash('sha256', text, 'buffer');
    hit = base32(digest.subarray(0, Math.ceil(length / 8) * 5)).slice(0, length);
    cache.set(key, hit);
  }
  return hit;
}

/**
 * Quantities as exact fractions, for the API server's arithmetic on them (defaulting rounds every
 * resource quantity up to 1m and sums container requests): floats would turn `0.29` into
 * `290.00000000000006m`. Malformed quantities throw, naming them.
 */
interface Exact {
  num: bigint;
  den: bigint;
}

const decimalExponents: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const binaryExponents: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };

const pattern = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/;

function exact(quantity: string | number): Exact {
  const text = String(quantity).trim();
  const m = pattern.exec(text);
  if (!m || (m[2] === '' && (m[3] ?? '') === ''))
    throw new Error(
      `quantity "${quantity}" is not valid: use a number with an optional suffix like 500m, 128Mi or 1G`,
    );
  const [, sign, whole, fraction = '', exponent, suffix = ''] = m;
  let num = BigInt(`${whole}${fraction}` || '0');
  let den = 10n ** BigInt(fraction.length);
  const power = exponent !== undefined ? Number(exponent) : (decimalExponents[suffix] ?? 0);
  if (power >= 0) num *= 10n ** BigInt(power);
  else den *= 10n ** BigInt(-power);
  if (binaryExponents[suffix]) num *= 1024n ** BigInt(binaryExponents[suffix]);
  return { num: sign === '-' ? -num : num, den };
}

/** `q` itself when it is a whole number of millis, else the next multiple of 1m away from zero (`1u` → `1m`). */
export function roundUpToMilli(q: string | number): string | number {
  const { num, den } = exact(q);
  const millis = num * 1000n;
  if (millis % den === 0n) return q;
  const truncated = millis / den;
  return `${num < 0n ? truncated - 1n : truncated + 1n}m`;
}

/** The sum of quantities, written in the binary form of the first when it has one and the sum allows it. */
export function sumQuantities(quantities: readonly (string | number)[]): string {
  let num = 0n;
  let den = 1n;
  for (const q of quantities) {
    const e = exact(q);
    num = num * e.den + e.num * den;
    den *= e.den;
  }
  if (num % den === 0n) {
    const whole = num / den;
    if (/[KMGTPE]i$/.test(String(quantities[0] ?? ''))) {
      for (const [suffix, k] of Object.entries(binaryExponents).reverse()) {
        const unit = 1024n ** BigInt(k);
        if (whole !== 0n && whole % unit === 0n) return `${whole / unit}${suffix}`;
      }
    }
    return String(whole);
  }
  const millis = (num * 1000n) / den;
  return `${(num * 1000n) % den === 0n ? millis : millis + 1n}m`;
}

/** Negative, zero or positive as `a` is less than, equal to or more than `b`. */
export function compareQuantities(a: string | number, b: string | number): number {
  const x = exact(a);
  const y = exact(b);
  const diff = x.num * y.den - y.num * x.den;
  return diff < 0n ? -1 : diff > 0n ? 1 : 0;
}

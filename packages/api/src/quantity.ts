/**
 * Kubernetes resource quantities ("500m", "1.5", "128Mi", "1G", "1e3") as numbers: CPU in millicores,
 * everything else in base units. Throws on a malformed quantity, naming it.
 */
const suffixes: Record<string, number> = {
  '': 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const pattern = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

export function parseQuantity(quantity: string | number): number {
  if (typeof quantity === 'number') return quantity;
  const m = pattern.exec(quantity.trim());
  if (!m)
    throw new Error(
      `quantity "${quantity}" is not valid: use a number with an optional suffix like 500m, 128Mi or 1G`,
    );
  const value = Number(m[1]);
  if (m[2]) return value * 10 ** Number(m[2].slice(1));
  return value * suffixes[m[3] ?? '']!;
}

/** CPU quantity in millicores, rounded up as upstream's MilliValue. */
export function milliCpu(quantity: string | number): number {
  return Math.ceil(parseQuantity(quantity) * 1000 - 1e-9);
}

/** Bytes (or any base unit), rounded up. */
export function quantityValue(quantity: string | number): number {
  return Math.ceil(parseQuantity(quantity) - 1e-9);
}

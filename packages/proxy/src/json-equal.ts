import { hash } from 'node:crypto';

/**
 * Whether two JSON values are the same data: primitives equal, arrays equal item by item, objects with
 * the same keys (a key whose value is `undefined` counts as absent, as in JSON) holding equal values.
 * The change tracker compares a service port's new state with its last one this way, instead of
 * keeping the JSON text of every state (megabytes at a thousand services) and writing it anew.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let keys = 0;
  for (const k in x) {
    if (x[k] === undefined) continue;
    keys++;
    if (!jsonEqual(x[k], y[k])) return false;
  }
  for (const k in y) if (y[k] !== undefined) keys--;
  return keys === 0;
}

/**
 * A short digest of a value's JSON text: what the tracker keeps of the objects it is handed, to tell
 * an unchanged object from a changed one (even one changed in place) without keeping the text.
 */
export function jsonFingerprint(value: unknown): string {
  return hash('sha1', JSON.stringify(value), 'base64');
}

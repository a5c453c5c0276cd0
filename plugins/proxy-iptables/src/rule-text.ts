import { KUBE_MARK_MASQ } from './chains.js';

/** Pieces of iptables rule text every part of a render writes. */

const quote = (s: string) => (/[\s"]/.test(s) ? `"${s.replace(/"/g, '\\"')}"` : s);
export const comment = (s: string) => `-m comment --comment ${quote(s)}`;
export const MASQ_TAIL = ` -j ${KUBE_MARK_MASQ}\n`;
const probabilities: string[] = [];
/** `1/n` with 10 decimals, remembered: the same few values recur in every service chain. */
export const probability = (n: number) => (probabilities[n] ??= (1 / n).toFixed(10));

/** The parts of rules that depend on the protocol only, made once per protocol. */
const PROTOCOL_PIECES = new Map<string, { destination: string; dnat: string }>();
export function protocolPieces(protocol: string): { destination: string; dnat: string } {
  let pieces = PROTOCOL_PIECES.get(protocol);
  if (!pieces) {
    const p = protocol.toLowerCase();
    pieces = { destination: ` -m ${p} -p ${p} -d `, dnat: ` -m ${p} -p ${p} -j DNAT --to-destination ` };
    PROTOCOL_PIECES.set(protocol, pieces);
  }
  return pieces;
}

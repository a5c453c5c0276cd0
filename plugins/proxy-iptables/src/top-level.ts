import { type ChangeSet, type NodeContext, nodePortIPs } from '@nodelet/proxy';
import {
  KUBE_EXTERNAL_SERVICES,
  KUBE_FORWARD,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
} from './chains.js';
import { NONE, type ServiceBlock, type TopLevelLines } from './port-plan.js';
import { comment } from './rule-text.js';

/** The rules of the top-level chains (KUBE-SERVICES, KUBE-NODEPORTS, …), keyed `table chain`. */
export type TopLevel = ReadonlyMap<string, readonly string[]>;

/** Lines a service port has in the top-level chains (`planBlock` fills them). */
const TOP_LEVEL_LISTS = [
  'natServices',
  'natNodePorts',
  'filterServices',
  'filterExternal',
  'filterNodePorts',
  'filterFirewall',
] as const;

/** Whether every changed or removed service port has the same top-level lines in `now` as in `before`. */
export function sameTopLevelLines(
  changes: ChangeSet,
  before: ReadonlyMap<string, ServiceBlock>,
  now: ReadonlyMap<string, ServiceBlock>,
): boolean {
  for (const names of [changes.updated, changes.removed]) {
    for (const name of names) {
      const a = before.get(name);
      const b = now.get(name);
      for (const list of TOP_LEVEL_LISTS) {
        const x = a?.[list] ?? NONE;
        const y = b?.[list] ?? NONE;
        if (!sameLines(x, y)) return false;
      }
    }
  }
  return true;
}

/** Whether two chains have the same rules (most lines are the very same strings: planned once per port). */
export function sameLines(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The top-level chains' rules (keyed `table chain`): every service port's lines, then the node's. */
export function topLevelLines(ordered: readonly ServiceBlock[], node: NodeContext): TopLevel {
  const mark = `0x${(1 << node.masqueradeBit).toString(16)}`;
  const collect = (list: TopLevelLines) => {
    const out: string[] = [];
    for (const b of ordered) for (const l of b[list]) out.push(l);
    return out;
  };
  return new Map([
    [`filter ${KUBE_SERVICES}`, collect('filterServices')],
    [`filter ${KUBE_EXTERNAL_SERVICES}`, collect('filterExternal')],
    [`filter ${KUBE_NODEPORTS}`, collect('filterNodePorts')],
    [`filter ${KUBE_PROXY_FIREWALL}`, collect('filterFirewall')],
    [
      `filter ${KUBE_FORWARD}`,
      [
        `-A ${KUBE_FORWARD} -m conntrack --ctstate INVALID -j DROP`,
        `-A ${KUBE_FORWARD} ${comment('kubernetes forwarding rules')} -m mark --mark ${mark}/${mark} -j ACCEPT`,
        `-A ${KUBE_FORWARD} ${comment('kubernetes forwarding conntrack rule')} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
      ],
    ],
    [
      `nat ${KUBE_POSTROUTING}`,
      [
        `-A ${KUBE_POSTROUTING} -m mark ! --mark ${mark}/${mark} -j RETURN`,
        `-A ${KUBE_POSTROUTING} -j MARK --xor-mark ${mark}`,
        `-A ${KUBE_POSTROUTING} ${comment('kubernetes service traffic requiring SNAT')} -j MASQUERADE --random-fully`,
      ],
    ],
    [`nat ${KUBE_MARK_MASQ}`, [`-A ${KUBE_MARK_MASQ} -j MARK --or-mark ${mark}`]],
    [`nat ${KUBE_SERVICES}`, [...collect('natServices'), ...nodePortsTail(node)]],
    [`nat ${KUBE_NODEPORTS}`, collect('natNodePorts')],
  ]);
}

function nodePortsTail(node: NodeContext): string[] {
  const c = comment('kubernetes service nodeports; NOTE: this must be the last rule in this chain');
  if (node.nodePortAddresses.length === 0) {
    return [`-A ${KUBE_SERVICES} ${c} -m addrtype --dst-type LOCAL ! -d 127.0.0.0/8 -j ${KUBE_NODEPORTS}`];
  }
  return nodePortIPs(node.nodeIPs, node.nodePortAddresses)
    .filter((ip) => !ip.startsWith('127.'))
    .map((ip) => `-A ${KUBE_SERVICES} ${c} -d ${ip} -j ${KUBE_NODEPORTS}`);
}

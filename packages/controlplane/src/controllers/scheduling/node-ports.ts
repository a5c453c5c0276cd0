import type { KubeObject } from '../../object.js';
import type { FilterPlugin } from './framework.js';

interface HostPort {
  ip: string;
  protocol: string;
  port: number;
}

/** The host ports a pod asks for (containers' ports with a hostPort; init containers too, as upstream). */
export function hostPorts(pod: KubeObject): HostPort[] {
  const out: HostPort[] = [];
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  for (const c of containers) {
    for (const p of Array.isArray(c?.ports) ? c.ports : []) {
      const port = Number(p?.hostPort);
      if (!Number.isInteger(port) || port <= 0) continue;
      out.push({ ip: p.hostIP || '0.0.0.0', protocol: p.protocol || 'TCP', port });
    }
  }
  return out;
}

/** Two host ports clash on the same port and protocol when either binds every address or both bind one. */
function conflicts(a: HostPort, b: HostPort): boolean {
  if (a.port !== b.port || a.protocol !== b.protocol) return false;
  return a.ip === '0.0.0.0' || b.ip === '0.0.0.0' || a.ip === b.ip;
}

/** NodePorts: a pod's host ports must be free on the node. */
export const nodePorts: FilterPlugin = {
  name: 'NodePorts',
  preFilter(ctx) {
    ctx.state.set('NodePorts', hostPorts(ctx.pod));
  },
  filter(ctx, { pods }) {
    const wanted = ctx.state.get('NodePorts') as HostPort[];
    if (wanted.length === 0) return [];
    for (const other of pods) {
      const used = hostPorts(other);
      if (wanted.some((w) => used.some((u) => conflicts(w, u))))
        return ["node(s) didn't have free ports for the requested pod ports"];
    }
    return [];
  },
};

import { milliCpu, quantityValue } from '@nodelet/api';
import type { KubeObject } from '../../object.js';

/** What a pod asks of a node, or what a node has: millicores, bytes and a pod count. */
export interface Resources {
  cpu: number;
  memory: number;
  'ephemeral-storage': number;
  pods: number;
}

export const resourceNames = ['cpu', 'memory', 'ephemeral-storage'] as const;

export const noResources = (): Resources => ({ cpu: 0, memory: 0, 'ephemeral-storage': 0, pods: 0 });

function quantity(name: string, q: unknown): number {
  try {
    if (typeof q !== 'string' && typeof q !== 'number') return 0;
    return name === 'cpu' ? milliCpu(q) : quantityValue(q);
  } catch {
    return 0;
  }
}

/**
 * For scoring only, a container that requests no CPU or memory counts as 100m and 200 MiB (upstream's
 * non-zero defaults), so pods without requests still spread over the nodes.
 */
const nonZeroDefaults: Record<string, number> = { cpu: 100, memory: 200 * 1024 * 1024 };

/**
 * What a pod asks of a node: the larger of its containers' sum (with sidecars) and its largest init
 * container, plus overhead. `nonZero` applies the scoring defaults to containers that request nothing.
 */
export function podRequests(pod: KubeObject, nonZero = false): Resources {
  const out: Resources = { cpu: 0, memory: 0, 'ephemeral-storage': 0, pods: 1 };
  const spec = pod.spec ?? {};
  const request = (c: any, name: string) => {
    const v = quantity(name, c?.resources?.requests?.[name]);
    return nonZero && v === 0 ? (nonZeroDefaults[name] ?? 0) : v;
  };
  for (const name of resourceNames) {
    let sum = 0;
    for (const c of spec.containers ?? []) sum += request(c, name);
    let init = 0;
    let sidecars = 0;
    for (const c of spec.initContainers ?? []) {
      const v = request(c, name);
      if (c?.restartPolicy === 'Always') sidecars += v;
      else init = Math.max(init, sidecars + v);
    }
    out[name] = Math.max(sum + sidecars, init) + quantity(name, spec.overhead?.[name]);
  }
  return out;
}

export function nodeAllocatable(node: KubeObject): Resources {
  const a = node.status?.allocatable ?? node.status?.capacity ?? {};
  return {
    cpu: quantity('cpu', a.cpu),
    memory: quantity('memory', a.memory),
    'ephemeral-storage':
      a['ephemeral-storage'] === undefined ? Infinity : quantity('ephemeral-storage', a['ephemeral-storage']),
    pods: a.pods === undefined ? 110 : quantity('pods', a.pods),
  };
}

/** `into` += `sign` × `r`. */
export function addResources(into: Resources, r: Resources, sign: 1 | -1): void {
  for (const n of [...resourceNames, 'pods'] as const) into[n] += sign * r[n];
}

import type { Clock, Logger } from '@nodelet/kernel';
import type { Registry } from '../apiserver/registry.js';
import type { KubeObject } from '../object.js';
import { nodes } from '../resources/nodes.js';
import { WorkQueue } from './work-queue.js';

/**
 * The condition taints of upstream's node lifecycle controller (doNoScheduleTaintingPass): a Node whose
 * kubelet reports MemoryPressure, DiskPressure or PIDPressure True gets the matching `NoSchedule` taint
 * (`node.kubernetes.io/memory-pressure`, …), and loses it when the condition is no longer True, so the
 * scheduler places no new pods there. Other taints (an administrator's, `--register-with-taints`) are
 * left alone.
 */
export const conditionTaints: Record<string, string> = {
  MemoryPressure: 'node.kubernetes.io/memory-pressure',
  DiskPressure: 'node.kubernetes.io/disk-pressure',
  PIDPressure: 'node.kubernetes.io/pid-pressure',
};

interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

/** The taints the node should have: its own, with the condition taints as its conditions say. */
export function wantedTaints(node: KubeObject, now: string): Taint[] | undefined {
  const current: Taint[] = node.spec?.taints ?? [];
  const ours = new Set(Object.values(conditionTaints));
  const wanted = new Set<string>();
  for (const c of (node.status?.conditions ?? []) as { type: string; status: string }[]) {
    const key = conditionTaints[c.type];
    if (key && c.status === 'True') wanted.add(key);
  }
  const kept = current.filter((t) => !ours.has(t.key) || (wanted.has(t.key) && t.effect === 'NoSchedule'));
  const have = new Set(kept.map((t) => t.key));
  const added = [...wanted]
    .filter((k) => !have.has(k))
    .map((key) => ({ key, effect: 'NoSchedule', timeAdded: now }));
  if (added.length === 0 && kept.length === current.length) return undefined;
  return [...kept, ...added];
}

export class NodeTaintController {
  private readonly queue: WorkQueue;
  private unsubscribe?: () => void;

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.queue = new WorkQueue('node-taint', (name) => this.sync(name), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    this.unsubscribe = store.subscribe(nodes.storage, (e) => {
      if (e.op !== 'delete') this.queue.add(e.name);
    });
    for (const node of store.listAll(nodes.storage)) this.queue.add(node.object.metadata.name!);
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.stop();
  }

  private async sync(name: string): Promise<void> {
    const node = this.registry.store.get(nodes.storage, '', name)?.object;
    if (!node) return;
    const taints = wantedTaints(node, new Date(this.clock.now()).toISOString().replace(/\.\d+Z$/, 'Z'));
    if (!taints) return;
    const next = structuredClone(node);
    next.spec = { ...(next.spec ?? {}), taints };
    this.registry.update(nodes, '', name, next);
    this.logger.info('updated the condition taints of a node', {
      node: name,
      taints: taints.map((t) => t.key).join(','),
    });
  }
}

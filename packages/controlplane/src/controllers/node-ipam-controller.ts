import type { Clock, Logger } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { Registry } from '../apiserver/registry.js';
import type { StoreEvent } from '../storage/revision-store.js';
import type { EventRecorder } from './event-recorder.js';
import type { NodeCidrSet } from './node-cidr-set.js';
import { WorkQueue } from './work-queue.js';

/** The IPv4 pod CIDR a Node holds, if any. */
function podCidrOf(node: KubeObject | undefined): string | undefined {
  const cidrs: unknown[] = Array.isArray(node?.spec?.podCIDRs) ? node.spec.podCIDRs : [];
  const all = [node?.spec?.podCIDR, ...cidrs].filter((c): c is string => typeof c === 'string' && c !== '');
  return all.find((c) => c.includes('.'));
}

/**
 * The node IPAM controller (kube-controller-manager's range allocator): every Node without a pod CIDR
 * gets the next free one of the cluster CIDR in `spec.podCIDR` and `spec.podCIDRs`; its kubelet hands it
 * to the runtime, so pod IPs are unique in the cluster. A deleted Node's CIDR is free again. What is taken
 * is not stored on its own: it is read off the Nodes at start, so it survives a restart. When the range
 * is full, the Node gets a `CIDRNotAvailable` event and waits until another Node goes.
 */
export class NodeIpamController {
  private readonly queue: WorkQueue;
  private unsubscribe: (() => void) | undefined;
  /** Nodes that found no free CIDR, tried again when one is released. */
  private readonly waiting = new Set<string>();

  constructor(
    private readonly registry: Registry,
    private readonly cidrs: NodeCidrSet,
    clock: Clock,
    private readonly logger: Logger,
    private readonly events: EventRecorder,
  ) {
    this.queue = new WorkQueue('node-ipam-controller', (name) => this.sync(name), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    const nodes = store.listAll('nodes').map((s) => s.object);
    // First every CIDR in use, then the nodes without one: a restart never hands out a taken CIDR.
    for (const node of nodes) this.occupy(node);
    for (const node of nodes) if (!podCidrOf(node)) this.queue.add(node.metadata.name!);
    this.unsubscribe = store.subscribe('nodes', (e) => this.onNode(e));
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.stop();
  }

  private onNode(e: StoreEvent): void {
    const before = podCidrOf(e.prev);
    const after = e.op === 'delete' ? undefined : podCidrOf(e.object);
    if (before && before !== after) {
      this.cidrs.release(before);
      for (const name of this.waiting) this.queue.add(name);
    }
    if (e.op === 'delete') {
      this.waiting.delete(e.name);
      return;
    }
    if (after) this.occupy(e.object);
    else this.queue.add(e.name);
  }

  private occupy(node: KubeObject): void {
    const cidr = podCidrOf(node);
    if (cidr && !this.cidrs.occupy(cidr)) {
      this.logger.warn('node pod CIDR is outside the cluster CIDR; not tracked', {
        node: node.metadata.name,
        podCIDR: cidr,
        clusterCIDR: this.cidrs.cluster.text,
      });
    }
  }

  private sync(name: string): void {
    const node = this.registry.store.get('nodes', '', name)?.object;
    if (!node || podCidrOf(node)) {
      this.waiting.delete(name);
      return;
    }
    const cidr = this.cidrs.allocate();
    if (!cidr) {
      if (!this.waiting.has(name)) {
        this.waiting.add(name);
        this.events.record(
          node,
          'Normal',
          'CIDRNotAvailable',
          `Node ${name} status is now: CIDRNotAvailable`,
        );
        this.logger.warn('no pod CIDR left for the node', {
          node: name,
          clusterCIDR: this.cidrs.cluster.text,
        });
      }
      return;
    }
    this.waiting.delete(name);
    try {
      this.registry.store.update('nodes', '', name, (n) => {
        n.spec = { ...(n.spec ?? {}), podCIDR: cidr, podCIDRs: [cidr] };
        return n;
      });
      this.logger.info('set node pod CIDR', { node: name, podCIDR: cidr });
    } catch (err) {
      this.cidrs.release(cidr);
      throw err;
    }
  }
}

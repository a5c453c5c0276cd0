import type { KubeObject } from '../../object.js';
import { hasPodAffinity } from './affinity-terms.js';
import type { NodeInfo } from './framework.js';
import { addResources, noResources, podRequests, type Resources } from './resources.js';

/** Counted against its node until it has finished. */
export function holdsResources(pod: KubeObject): boolean {
  const phase = pod.status?.phase;
  return !!pod.spec?.nodeName && phase !== 'Succeeded' && phase !== 'Failed';
}

const podKey = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** One node's pods and their summed requests, kept current pod by pod. */
class NodeEntry implements NodeInfo {
  node: KubeObject = { metadata: {} } as KubeObject;
  readonly byKey = new Map<string, { pod: KubeObject; requests: Resources; scored: Resources }>();
  readonly requested = noResources();
  readonly nonZeroRequested = noResources();
  private list?: KubeObject[];
  private withAffinity?: KubeObject[];
  private byNamespace?: Map<string, KubeObject[]>;

  constructor(readonly name: string) {}

  get pods(): readonly KubeObject[] {
    return (this.list ??= [...this.byKey.values()].map((e) => e.pod));
  }

  get podsWithAffinity(): readonly KubeObject[] {
    return (this.withAffinity ??= this.pods.filter(hasPodAffinity));
  }

  podsInNamespace(namespace: string): readonly KubeObject[] {
    if (!this.byNamespace) {
      this.byNamespace = new Map();
      for (const p of this.pods) {
        const ns = p.metadata.namespace ?? 'default';
        const list = this.byNamespace.get(ns);
        if (list) list.push(p);
        else this.byNamespace.set(ns, [p]);
      }
    }
    return this.byNamespace.get(namespace) ?? [];
  }

  add(key: string, pod: KubeObject): void {
    const entry = { pod, requests: podRequests(pod), scored: podRequests(pod, true) };
    this.byKey.set(key, entry);
    addResources(this.requested, entry.requests, 1);
    addResources(this.nonZeroRequested, entry.scored, 1);
    this.changed();
  }

  remove(key: string): void {
    const entry = this.byKey.get(key);
    if (!entry) return;
    this.byKey.delete(key);
    addResources(this.requested, entry.requests, -1);
    addResources(this.nonZeroRequested, entry.scored, -1);
    this.changed();
  }

  private changed(): void {
    this.list = undefined;
    this.withAffinity = undefined;
    this.byNamespace = undefined;
  }
}

/**
 * What the scheduler knows of the cluster, kept in memory from the store's events (upstream's scheduler
 * cache): the nodes, and per node the pods bound to it that still hold resources. A decision reads it
 * without listing pods, so it costs O(nodes) plus what a plugin's terms need to look at.
 */
export class SchedulerCache {
  private readonly entries = new Map<string, NodeEntry>();
  private readonly nodes = new Set<string>();
  /** Pod key → the node it is counted on. */
  private readonly placed = new Map<string, string>();
  private sorted?: NodeInfo[];

  setNode(node: KubeObject): void {
    const name = node.metadata.name!;
    this.entry(name).node = node;
    if (!this.nodes.has(name)) this.sorted = undefined;
    this.nodes.add(name);
  }

  deleteNode(name: string): void {
    this.nodes.delete(name);
    this.sorted = undefined;
  }

  /** A pod changed from `prev` to `next` (undefined: created / deleted). */
  account(prev: KubeObject | undefined, next: KubeObject | undefined): void {
    const key = podKey((next ?? prev)!);
    const was = this.placed.get(key);
    if (was) {
      this.entries.get(was)?.remove(key);
      this.placed.delete(key);
    }
    if (next && holdsResources(next)) {
      const node = next.spec.nodeName as string;
      this.entry(node).add(key, next);
      this.placed.set(key, node);
    }
  }

  /** Every node, sorted by name. */
  snapshot(): readonly NodeInfo[] {
    return (this.sorted ??= [...this.nodes].sort().map((n) => this.entries.get(n)!));
  }

  private entry(name: string): NodeEntry {
    let e = this.entries.get(name);
    if (!e) this.entries.set(name, (e = new NodeEntry(name)));
    return e;
  }
}

import type { KubeObject } from '../object.js';
import { podConfigMapNames, podSecretNames } from '../admission/pod-references.js';
import type { RevisionStore, StoreEvent } from '../storage/revision-store.js';

/**
 * Which objects each node may read, as the edges of upstream's node authorizer graph
 * (plugin/pkg/auth/authorizer/node/graph.go) that nodelet's kinds have: a pod bound to a node links the
 * node to the pod and to the Secrets, ConfigMaps, PersistentVolumeClaims and ServiceAccount the pod
 * names. The index is kept from the store's writes, so a question costs a map lookup, and an edge
 * goes the moment the pod is deleted or moves.
 *
 *   node ◄── pod ◄── secret | configmap | persistentvolumeclaim | serviceaccount
 */
export type VertexType = 'pods' | 'secrets' | 'configmaps' | 'persistentvolumeclaims' | 'serviceaccounts';

type Obj = Record<string, any>;

/** `type/namespace/name` of every object a pod links to its node, the pod itself included. */
function podEdges(pod: KubeObject): string[] {
  const ns = pod.metadata.namespace ?? '';
  const spec: Obj = (pod.spec as Obj | undefined) ?? {};
  const key = (type: VertexType, name: string) => `${type}/${ns}/${name}`;
  const edges = [key('pods', pod.metadata.name ?? '')];
  for (const name of podSecretNames(spec)) edges.push(key('secrets', name));
  for (const name of podConfigMapNames(spec)) edges.push(key('configmaps', name));
  for (const v of Array.isArray(spec.volumes) ? (spec.volumes as Obj[]) : []) {
    const claim = v?.persistentVolumeClaim?.claimName;
    if (typeof claim === 'string' && claim) edges.push(key('persistentvolumeclaims', claim));
    const ephemeral = v?.ephemeral?.volumeClaimTemplate;
    // A generic ephemeral volume's claim is named <pod>-<volume>.
    if (ephemeral && typeof v.name === 'string') {
      edges.push(key('persistentvolumeclaims', `${pod.metadata.name}-${v.name}`));
    }
  }
  const sa = spec.serviceAccountName ?? spec.serviceAccount;
  if (typeof sa === 'string' && sa) edges.push(key('serviceaccounts', sa));
  return edges;
}

const nodeOf = (pod: KubeObject | undefined): string => {
  const name = (pod?.spec as Obj | undefined)?.nodeName;
  return typeof name === 'string' ? name : '';
};

export class NodeGraph {
  /** node → object key → how many of the node's pods link it. */
  private readonly reachable = new Map<string, Map<string, number>>();
  /** namespace/name of each bound pod → its node and the edges it added (removed from these, not from
   * the write's `prev`, so a missed or partial event cannot leave an edge behind). */
  private readonly pods = new Map<string, { node: string; edges: string[] }>();
  private readonly unsubscribe: () => void;

  constructor(store: RevisionStore) {
    for (const { object } of store.listAll('pods')) this.set(object);
    this.unsubscribe = store.subscribe('pods', (e) => this.observe(e));
  }

  /** Whether a pod bound to `node` links the object `type/namespace/name`. */
  hasPath(node: string, type: VertexType, namespace: string, name: string): boolean {
    return (this.reachable.get(node)?.get(`${type}/${namespace}/${name}`) ?? 0) > 0;
  }

  close(): void {
    this.unsubscribe();
  }

  private observe(e: StoreEvent): void {
    if (e.op === 'delete') this.unset(`${e.namespace}/${e.name}`);
    else this.set(e.object);
  }

  private set(pod: KubeObject): void {
    const key = `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
    this.unset(key);
    const node = nodeOf(pod);
    if (!node) return;
    const edges = podEdges(pod);
    this.pods.set(key, { node, edges });
    let counts = this.reachable.get(node);
    if (!counts) this.reachable.set(node, (counts = new Map()));
    for (const edge of edges) counts.set(edge, (counts.get(edge) ?? 0) + 1);
  }

  private unset(key: string): void {
    const known = this.pods.get(key);
    if (!known) return;
    this.pods.delete(key);
    const counts = this.reachable.get(known.node);
    if (!counts) return;
    for (const edge of known.edges) {
      const left = (counts.get(edge) ?? 0) - 1;
      if (left > 0) counts.set(edge, left);
      else counts.delete(edge);
    }
    if (counts.size === 0) this.reachable.delete(known.node);
  }
}

import type { ContainerFilter, PodSandboxFilter } from '@nodelet/cri';
import type { ContainerRecord, SandboxRecord } from './records.js';

/** The label the kubelet puts on sandboxes and containers; lists filtered by it use an index. */
export const POD_UID_LABEL = 'io.kubernetes.pod.uid';

/**
 * Sandboxes and containers by id, by reserved name and by pod UID, so that every lookup the kubelet
 * makes is O(1) or O(pod): status by id, ListContainers by sandbox, lists by the pod-UID label
 * (PLEG, the pod workers). Only an unfiltered list (or a selector without the pod UID) walks
 * everything. Iteration order is creation order.
 */
export class RuntimeStore {
  private readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly containers = new Map<string, ContainerRecord>();
  private readonly sandboxesByPodUid = new Map<string, Set<SandboxRecord>>();
  private readonly containersByPodUid = new Map<string, Set<ContainerRecord>>();
  private readonly sandboxNames = new Map<string, string>();
  private readonly containerNames = new Map<string, string>();

  /** The sandbox with this id, or with this unique id prefix (as containerd's truncindex allows). */
  sandbox(id: string): SandboxRecord | undefined {
    return this.sandboxes.get(id) ?? byUniquePrefix(this.sandboxes, id);
  }

  /** The container with this id, or with this unique id prefix (as containerd's truncindex allows). */
  container(id: string): ContainerRecord | undefined {
    return this.containers.get(id) ?? byUniquePrefix(this.containers, id);
  }

  /** The id holding a reserved sandbox name (`<pod>_<namespace>_<uid>_<attempt>`), if any. */
  sandboxNameHolder(name: string): string | undefined {
    return this.sandboxNames.get(name);
  }

  /** The id holding a reserved container name (`<container>_<pod>_<namespace>_<uid>_<attempt>`), if any. */
  containerNameHolder(name: string): string | undefined {
    return this.containerNames.get(name);
  }

  addSandbox(s: SandboxRecord): void {
    this.sandboxes.set(s.id, s);
    this.sandboxNames.set(s.reservedName, s.id);
    if (s.podUid !== undefined) addToIndex(this.sandboxesByPodUid, s.podUid, s);
  }

  deleteSandbox(s: SandboxRecord): void {
    this.sandboxes.delete(s.id);
    this.sandboxNames.delete(s.reservedName);
    if (s.podUid !== undefined) removeFromIndex(this.sandboxesByPodUid, s.podUid, s);
  }

  addContainer(c: ContainerRecord): void {
    this.containers.set(c.id, c);
    this.containerNames.set(c.reservedName, c.id);
    c.sandbox.containers.add(c);
    if (c.podUid !== undefined) addToIndex(this.containersByPodUid, c.podUid, c);
  }

  deleteContainer(c: ContainerRecord): void {
    this.containers.delete(c.id);
    this.containerNames.delete(c.reservedName);
    c.sandbox.containers.delete(c);
    if (c.podUid !== undefined) removeFromIndex(this.containersByPodUid, c.podUid, c);
  }

  allSandboxes(): IterableIterator<SandboxRecord> {
    return this.sandboxes.values();
  }

  allContainers(): IterableIterator<ContainerRecord> {
    return this.containers.values();
  }

  get sandboxCount(): number {
    return this.sandboxes.size;
  }

  get containerCount(): number {
    return this.containers.size;
  }

  /** The sandboxes a filter matches, starting from the narrowest index it allows. */
  *findSandboxes(filter: PodSandboxFilter | undefined): Generator<SandboxRecord> {
    for (const s of this.sandboxCandidates(filter)) if (matchesSandboxFilter(s, filter)) yield s;
  }

  /** The containers a filter matches, starting from the narrowest index it allows. */
  *findContainers(filter: ContainerFilter | undefined): Generator<ContainerRecord> {
    const sandboxId = filter?.podSandboxId ? this.sandbox(filter.podSandboxId)?.id : undefined;
    for (const c of this.containerCandidates(filter))
      if (matchesContainerFilter(c, filter, sandboxId)) yield c;
  }

  private sandboxCandidates(filter: PodSandboxFilter | undefined): Iterable<SandboxRecord> {
    if (filter?.id) {
      const s = this.sandbox(filter.id);
      return s ? [s] : [];
    }
    const uid = filter?.labelSelector?.[POD_UID_LABEL];
    if (uid !== undefined) return this.sandboxesByPodUid.get(uid) ?? [];
    return this.sandboxes.values();
  }

  private containerCandidates(filter: ContainerFilter | undefined): Iterable<ContainerRecord> {
    if (filter?.id) {
      const c = this.container(filter.id);
      return c ? [c] : [];
    }
    if (filter?.podSandboxId) return this.sandbox(filter.podSandboxId)?.containers ?? [];
    const uid = filter?.labelSelector?.[POD_UID_LABEL];
    if (uid !== undefined) return this.containersByPodUid.get(uid) ?? [];
    return this.containers.values();
  }
}

/** CRI label selection: every key of the selector present with the same value. */
export function matchesLabels(
  labels: { readonly [key: string]: string },
  selector: { readonly [key: string]: string } | undefined,
): boolean {
  if (!selector) return true;
  for (const key in selector) if (labels[key] !== selector[key]) return false;
  return true;
}

/**
 * containerd resolves ids through a truncated index: a prefix names the one object whose id starts
 * with it, and nothing when several do. Only a short id that misses the map pays for the scan.
 */
function byUniquePrefix<T>(records: Map<string, T>, prefix: string): T | undefined {
  if (prefix === '' || prefix.length >= 64) return undefined; // a whole id that missed is absent
  let found: T | undefined;
  for (const [id, record] of records) {
    if (!id.startsWith(prefix)) continue;
    if (found !== undefined) return undefined;
    found = record;
  }
  return found;
}

// The candidates already honour `id` (and `podSandboxId`), prefixes included.
function matchesSandboxFilter(s: SandboxRecord, f: PodSandboxFilter | undefined): boolean {
  if (!f) return true;
  if (f.state && s.state !== f.state.state) return false;
  return matchesLabels(s.config.labels, f.labelSelector);
}

function matchesContainerFilter(
  c: ContainerRecord,
  f: ContainerFilter | undefined,
  sandboxId: string | undefined,
): boolean {
  if (!f) return true;
  if (f.podSandboxId && c.sandbox.id !== sandboxId) return false;
  if (f.state && c.state !== f.state.state) return false;
  return matchesLabels(c.config.labels, f.labelSelector);
}

function addToIndex<T>(index: Map<string, Set<T>>, key: string, value: T): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(value);
}

function removeFromIndex<T>(index: Map<string, Set<T>>, key: string, value: T): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) index.delete(key);
}

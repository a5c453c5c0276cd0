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

  sandbox(id: string): SandboxRecord | undefined {
    return this.sandboxes.get(id);
  }

  container(id: string): ContainerRecord | undefined {
    return this.containers.get(id);
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
    for (const c of this.containerCandidates(filter)) if (matchesContainerFilter(c, filter)) yield c;
  }

  private sandboxCandidates(filter: PodSandboxFilter | undefined): Iterable<SandboxRecord> {
    if (filter?.id) {
      const s = this.sandboxes.get(filter.id);
      return s ? [s] : [];
    }
    const uid = filter?.labelSelector?.[POD_UID_LABEL];
    if (uid !== undefined) return this.sandboxesByPodUid.get(uid) ?? [];
    return this.sandboxes.values();
  }

  private containerCandidates(filter: ContainerFilter | undefined): Iterable<ContainerRecord> {
    if (filter?.id) {
      const c = this.containers.get(filter.id);
      return c ? [c] : [];
    }
    if (filter?.podSandboxId) return this.sandboxes.get(filter.podSandboxId)?.containers ?? [];
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

function matchesSandboxFilter(s: SandboxRecord, f: PodSandboxFilter | undefined): boolean {
  if (!f) return true;
  if (f.id && s.id !== f.id) return false;
  if (f.state && s.state !== f.state.state) return false;
  return matchesLabels(s.config.labels, f.labelSelector);
}

function matchesContainerFilter(c: ContainerRecord, f: ContainerFilter | undefined): boolean {
  if (!f) return true;
  if (f.id && c.id !== f.id) return false;
  if (f.podSandboxId && c.sandbox.id !== f.podSandboxId) return false;
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

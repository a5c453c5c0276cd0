// Test support (not part of the package's API): an in-memory API server behind the KubeApi interface,
// so the node agent runs under virtual time, deterministically. It keeps resource versions, answers
// watches (with bookmarks and 410 Gone after `compact()`), deletes pods gracefully as an API server
// does, and can be taken down (`down = true`) to simulate an outage.
import type { Pod } from '@nodelet/api';
import {
  ApiError,
  type CertificateSigningRequest,
  type CoreEvent,
  type KubeApi,
  type Lease,
  type Node,
  type PodListResult,
  type WatchEvent,
  type WatchHandle,
} from './kube-api.js';
import { mergePatch } from './merge-patch.js';

interface Watcher {
  selector: (pod: Pod) => boolean;
  onEvent: (e: WatchEvent) => void;
  finish: (err: unknown) => void;
}

export interface FakeCall {
  verb: string;
  what: string;
  body?: unknown;
}

const clone = <T>(v: T): T => structuredClone(v);

export class FakeKubeApi implements KubeApi {
  readonly server = 'https://fake.invalid';
  readonly nodes = new Map<string, Node>();
  readonly leases = new Map<string, Lease>();
  readonly pods = new Map<string, Pod>();
  readonly events = new Map<string, CoreEvent>();
  readonly csrs = new Map<string, CertificateSigningRequest>();
  readonly calls: FakeCall[] = [];
  /** When true every call fails as an unreachable server would, and watches end. */
  private isDown = false;
  private rv = 1;
  private compactedBelow = 0;
  private uidCounter = 0;
  private readonly watchers = new Set<Watcher>();
  /** Calls that fail once with this error, by `verb what` prefix (conflicts, say). */
  readonly failNext = new Map<string, ApiError>();
  /** The time the fake stamps deletionTimestamp with. */
  now: () => number = () => Date.UTC(2026, 0, 1);

  get down(): boolean {
    return this.isDown;
  }

  set down(value: boolean) {
    this.isDown = value;
    if (value)
      for (const w of [...this.watchers]) w.finish(new ApiError(0, 'Unavailable', 'connection reset'));
  }

  /** Makes resource versions older than the current one unusable for watches (410 Gone). */
  compact(): void {
    this.compactedBelow = this.rv;
    for (const w of [...this.watchers]) {
      w.onEvent({
        type: 'ERROR',
        object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' },
      });
      w.finish(undefined);
    }
  }

  callsOf(verb: string, what?: string): FakeCall[] {
    return this.calls.filter((c) => c.verb === verb && (what === undefined || c.what.startsWith(what)));
  }

  // --- nodes ---------------------------------------------------------------------------------------

  async getNode(name: string): Promise<Node> {
    this.enter('get', `node/${name}`);
    return clone(this.must(this.nodes, name, 'nodes'));
  }

  async createNode(node: Node): Promise<Node> {
    const name = node.metadata!.name!;
    this.enter('create', `node/${name}`, node);
    if (this.nodes.has(name)) throw alreadyExists('nodes', name);
    const stored = this.stamp(clone(node));
    this.nodes.set(name, stored);
    return clone(stored);
  }

  async patchNode(name: string, patch: object): Promise<Node> {
    this.enter('patch', `node/${name}`, patch);
    const node = this.must(this.nodes, name, 'nodes');
    const { status, ...rest } = patch as Node;
    void status;
    const next = this.stamp(mergePatch(node, rest) as Node);
    this.nodes.set(name, next);
    return clone(next);
  }

  async patchNodeStatus(name: string, patch: object): Promise<Node> {
    this.enter('patch', `node/${name}/status`, patch);
    const node = this.must(this.nodes, name, 'nodes');
    const next = this.stamp({ ...node, status: mergePatch(node.status ?? {}, (patch as Node).status ?? {}) });
    this.nodes.set(name, next);
    return clone(next);
  }

  // --- leases --------------------------------------------------------------------------------------

  async getLease(namespace: string, name: string): Promise<Lease> {
    this.enter('get', `lease/${namespace}/${name}`);
    return clone(this.must(this.leases, `${namespace}/${name}`, 'leases.coordination.k8s.io'));
  }

  async createLease(lease: Lease): Promise<Lease> {
    const key = `${lease.metadata!.namespace}/${lease.metadata!.name}`;
    this.enter('create', `lease/${key}`, lease);
    if (this.leases.has(key)) throw alreadyExists('leases.coordination.k8s.io', lease.metadata!.name!);
    const stored = this.stamp(clone(lease));
    this.leases.set(key, stored);
    return clone(stored);
  }

  async updateLease(lease: Lease): Promise<Lease> {
    const key = `${lease.metadata!.namespace}/${lease.metadata!.name}`;
    this.enter('update', `lease/${key}`, lease);
    const current = this.must(this.leases, key, 'leases.coordination.k8s.io');
    if (lease.metadata?.resourceVersion !== current.metadata?.resourceVersion) {
      throw new ApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on leases "${lease.metadata!.name}"`,
      );
    }
    const stored = this.stamp(clone(lease));
    this.leases.set(key, stored);
    return clone(stored);
  }

  // --- pods ----------------------------------------------------------------------------------------

  async listPods(fieldSelector: string): Promise<PodListResult> {
    this.enter('list', 'pods', fieldSelector);
    const select = selectorOf(fieldSelector);
    return {
      items: [...this.pods.values()].filter(select).map(clone),
      resourceVersion: String(this.rv),
    };
  }

  watchPods(fieldSelector: string, resourceVersion: string, onEvent: (e: WatchEvent) => void): WatchHandle {
    let finish!: (err: unknown) => void;
    const done = new Promise<unknown>((resolve) => (finish = resolve));
    try {
      this.enter('watch', 'pods', { fieldSelector, resourceVersion });
    } catch (err) {
      finish(err);
      return { stop: () => undefined, done };
    }
    if (Number(resourceVersion) < this.compactedBelow) {
      finish(new ApiError(410, 'Expired', `too old resource version: ${resourceVersion}`));
      return { stop: () => undefined, done };
    }
    const watcher: Watcher = {
      selector: selectorOf(fieldSelector),
      onEvent,
      finish: (err) => {
        this.watchers.delete(watcher);
        finish(err);
      },
    };
    this.watchers.add(watcher);
    return { stop: () => watcher.finish(undefined), done };
  }

  /** Sends a bookmark to every watcher. */
  bookmark(): void {
    for (const w of this.watchers) {
      w.onEvent({
        type: 'BOOKMARK',
        object: { kind: 'Pod', metadata: { resourceVersion: String(this.rv) } },
      });
    }
  }

  async getPod(namespace: string, name: string): Promise<Pod> {
    this.enter('get', `pod/${namespace}/${name}`);
    return clone(this.must(this.pods, `${namespace}/${name}`, 'pods'));
  }

  async createPod(pod: Pod): Promise<Pod> {
    const namespace = pod.metadata?.namespace ?? 'default';
    const key = `${namespace}/${pod.metadata!.name}`;
    this.enter('create', `pod/${key}`, pod);
    if (this.pods.has(key)) throw alreadyExists('pods', pod.metadata!.name!);
    const stored = this.stamp(clone(pod));
    stored.metadata!.namespace = namespace;
    stored.metadata!.uid ??= `api-uid-${++this.uidCounter}`;
    stored.metadata!.creationTimestamp ??= new Date(this.now()).toISOString().replace('.000Z', 'Z');
    stored.status ??= { phase: 'Pending' };
    this.pods.set(key, stored);
    this.notify('ADDED', stored);
    return clone(stored);
  }

  /** A user's update of a pod (labels, say), notified to watchers. */
  updatePodDirect(pod: Pod): void {
    const key = `${pod.metadata!.namespace ?? 'default'}/${pod.metadata!.name}`;
    const stored = this.stamp(clone(pod));
    this.pods.set(key, stored);
    this.notify('MODIFIED', stored);
  }

  async patchPodStatus(namespace: string, name: string, patch: object): Promise<Pod> {
    const key = `${namespace}/${name}`;
    this.enter('patch', `pod/${key}/status`, patch);
    const pod = this.must(this.pods, key, 'pods');
    const uid = (patch as Pod).metadata?.uid;
    if (uid && uid !== pod.metadata?.uid) {
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${pod.metadata?.uid}`,
      );
    }
    const next = this.stamp({ ...pod, status: mergePatch(pod.status ?? {}, (patch as Pod).status ?? {}) });
    this.pods.set(key, next);
    this.notify('MODIFIED', next);
    return clone(next);
  }

  async deletePod(
    namespace: string,
    name: string,
    options: { gracePeriodSeconds?: number; uid?: string },
  ): Promise<void> {
    const key = `${namespace}/${name}`;
    this.enter('delete', `pod/${key}`, options);
    const pod = this.must(this.pods, key, 'pods');
    if (options.uid && options.uid !== pod.metadata?.uid) {
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: UID in precondition: ${options.uid}, UID in object meta: ${pod.metadata?.uid}`,
      );
    }
    const grace = options.gracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    // As the API server: a pod bound to a node is deleted gracefully (the kubelet confirms with grace 0).
    if (grace > 0 && pod.spec?.nodeName) {
      if (pod.metadata?.deletionTimestamp && (pod.metadata.deletionGracePeriodSeconds ?? 0) <= grace) return;
      const next = this.stamp(clone(pod));
      next.metadata!.deletionTimestamp = new Date(this.now()).toISOString().replace('.000Z', 'Z');
      next.metadata!.deletionGracePeriodSeconds = grace;
      this.pods.set(key, next);
      this.notify('MODIFIED', next);
      return;
    }
    this.pods.delete(key);
    this.rv++;
    this.notify('DELETED', { ...pod, metadata: { ...pod.metadata, resourceVersion: String(this.rv) } });
  }

  // --- events, CSRs --------------------------------------------------------------------------------

  async createEvent(event: CoreEvent): Promise<CoreEvent> {
    const key = `${event.metadata!.namespace}/${event.metadata!.name}`;
    this.enter('create', `event/${key}`, event);
    if (this.events.has(key)) throw alreadyExists('events', event.metadata!.name!);
    const stored = this.stamp(clone(event));
    this.events.set(key, stored);
    return clone(stored);
  }

  async patchEvent(namespace: string, name: string, patch: object): Promise<CoreEvent> {
    const key = `${namespace}/${name}`;
    this.enter('patch', `event/${key}`, patch);
    const next = this.stamp(mergePatch(this.must(this.events, key, 'events'), patch) as CoreEvent);
    this.events.set(key, next);
    return clone(next);
  }

  async createCertificateSigningRequest(csr: CertificateSigningRequest): Promise<CertificateSigningRequest> {
    const name = csr.metadata!.name!;
    this.enter('create', `csr/${name}`, csr);
    if (this.csrs.has(name)) throw alreadyExists('certificatesigningrequests.certificates.k8s.io', name);
    const stored = this.stamp(clone(csr));
    this.csrs.set(name, stored);
    return clone(stored);
  }

  async getCertificateSigningRequest(name: string): Promise<CertificateSigningRequest> {
    this.enter('get', `csr/${name}`);
    return clone(this.must(this.csrs, name, 'certificatesigningrequests.certificates.k8s.io'));
  }

  // --- helpers -------------------------------------------------------------------------------------

  private enter(verb: string, what: string, body?: unknown): void {
    if (this.isDown) throw new ApiError(0, 'Unavailable', `${verb} ${what}: the API server is unreachable`);
    this.calls.push({ verb, what, body: body === undefined ? undefined : clone(body) });
    for (const [prefix, err] of this.failNext) {
      if (`${verb} ${what}`.startsWith(prefix)) {
        this.failNext.delete(prefix);
        throw err;
      }
    }
  }

  private must<T>(map: Map<string, T>, key: string, resource: string): T {
    const v = map.get(key);
    if (!v) throw new ApiError(404, 'NotFound', `${resource} "${key.split('/').pop()}" not found`);
    return v;
  }

  private stamp<T extends { metadata?: { resourceVersion?: string; uid?: string } }>(obj: T): T {
    obj.metadata ??= {};
    obj.metadata.resourceVersion = String(++this.rv);
    obj.metadata.uid ??= `api-uid-${++this.uidCounter}`;
    return obj;
  }

  private notify(type: WatchEvent['type'], pod: Pod): void {
    for (const w of this.watchers) if (w.selector(pod)) w.onEvent({ type, object: clone(pod) });
  }
}

function alreadyExists(resource: string, name: string): ApiError {
  return new ApiError(409, 'AlreadyExists', `${resource} "${name}" already exists`);
}

/** `spec.nodeName=x` (the only field selector the kubelet uses). */
function selectorOf(fieldSelector: string): (pod: Pod) => boolean {
  const [field, value] = fieldSelector.split('=');
  if (field !== 'spec.nodeName') return () => true;
  return (pod) => (pod.spec?.nodeName ?? '') === value;
}

// Test support: an in-memory API server behind the KubeApi interface, so the kubelet's node agent and
// the proxy's API source run under virtual time, deterministically. It keeps resource versions, answers
// lists and watches of any collection path (with selectors, bookmarks and 410 Gone after `compact()`),
// deletes pods gracefully as an API server does, issues service-account tokens (deterministic, expiring
// by `now`), and can be taken down (`down = true`) to simulate an outage. A namespaced path
// (`/api/v1/namespaces/<ns>/configmaps`) is the cluster-wide collection seen through that namespace.
import type { ConfigMap, Pod, Secret, TokenRequest } from '@nodelet/api';
import {
  ApiError,
  type CertificateSigningRequest,
  type CoreEvent,
  type KubeApi,
  type Lease,
  type ListOptions,
  type Node,
  type ObjectList,
  objectRef,
  type PodListResult,
  type SubjectAccessReview,
  type TokenReview,
  type WatchEvent,
  type WatchHandle,
  type WatchOptions,
} from '../kube-api.js';
import { mergePatch } from '../merge-patch.js';
import { fakeTokenRequest } from './fake-token.js';
import { selectorMatcher } from './selectors.js';

interface Watcher {
  /** The cluster-wide collection (`/api/v1/configmaps`); `namespace` narrows it. */
  path: string;
  namespace?: string;
  selector: (obj: any) => boolean;
  fieldSelector?: string;
  onEvent: (e: WatchEvent) => void;
  finish: (err: unknown) => void;
}

const PODS = '/api/v1/pods';
const NODES = '/api/v1/nodes';
const CONFIGMAPS = '/api/v1/configmaps';
const SECRETS = '/api/v1/secrets';
const SERVICEACCOUNTS = '/api/v1/serviceaccounts';

/** `/api/v1/namespaces/ns/configmaps` → the collection `/api/v1/configmaps` in namespace `ns`. */
function scopeOf(path: string): { path: string; namespace?: string } {
  const m = /^(\/api\/v1|\/apis\/[^/]+\/[^/]+)\/namespaces\/([^/]+)\/([^/]+)$/.exec(path);
  return m ? { path: `${m[1]}/${m[3]}`, namespace: m[2] } : { path };
}

const inNamespace = (namespace: string | undefined) => (obj: any) =>
  namespace === undefined || (obj?.metadata?.namespace ?? 'default') === namespace;

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
  /** Objects of other collections (Services, EndpointSlices, …) by path, then `namespace/name`. */
  readonly collections = new Map<string, Map<string, any>>();
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
    this.notify(NODES, 'ADDED', stored);
    return clone(stored);
  }

  async patchNode(name: string, patch: object): Promise<Node> {
    this.enter('patch', `node/${name}`, patch);
    const node = this.must(this.nodes, name, 'nodes');
    const { status, ...rest } = patch as Node;
    void status;
    const next = this.stamp(mergePatch(node, rest) as Node);
    this.nodes.set(name, next);
    this.notify(NODES, 'MODIFIED', next);
    return clone(next);
  }

  async patchNodeStatus(name: string, patch: object): Promise<Node> {
    this.enter('patch', `node/${name}/status`, patch);
    const node = this.must(this.nodes, name, 'nodes');
    const next = this.stamp({ ...node, status: mergePatch(node.status ?? {}, (patch as Node).status ?? {}) });
    this.nodes.set(name, next);
    this.notify(NODES, 'MODIFIED', next);
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

  listPods(fieldSelector: string): Promise<PodListResult> {
    return this.list<Pod>(PODS, { fieldSelector });
  }

  watchPods(fieldSelector: string, resourceVersion: string, onEvent: (e: WatchEvent) => void): WatchHandle {
    return this.watch(PODS, { fieldSelector, resourceVersion }, onEvent);
  }

  // --- any collection ------------------------------------------------------------------------------

  async list<T>(path: string, options: ListOptions = {}): Promise<ObjectList<T>> {
    // A list with only a field selector records the selector (what the kubelet's tests read).
    const body = options.labelSelector === undefined ? options.fieldSelector : options;
    this.enter('list', resourceOf(path), body);
    const scope = scopeOf(path);
    const select = selectorMatcher(options);
    const here = inNamespace(scope.namespace);
    return {
      items: [...this.collection(scope.path).values()].filter((o) => here(o) && select(o)).map(clone),
      resourceVersion: String(this.rv),
    };
  }

  watch<T>(path: string, options: WatchOptions, onEvent: (e: WatchEvent<T>) => void): WatchHandle {
    let finish!: (err: unknown) => void;
    const done = new Promise<unknown>((resolve) => (finish = resolve));
    const { resourceVersion } = options;
    try {
      this.enter('watch', resourceOf(path), { ...options });
    } catch (err) {
      finish(err);
      return { stop: () => undefined, done };
    }
    if (Number(resourceVersion) < this.compactedBelow) {
      finish(new ApiError(410, 'Expired', `too old resource version: ${resourceVersion}`));
      return { stop: () => undefined, done };
    }
    const scope = scopeOf(path);
    const watcher: Watcher = {
      path: scope.path,
      namespace: scope.namespace,
      selector: selectorMatcher(options),
      fieldSelector: options.fieldSelector,
      onEvent,
      finish: (err) => {
        this.watchers.delete(watcher);
        finish(err);
      },
    };
    this.watchers.add(watcher);
    return { stop: () => watcher.finish(undefined), done };
  }

  /**
   * Stores an object of any collection (a new resource version) and tells its watchers. On a namespaced
   * path an object without a namespace gets the path's.
   */
  put(path: string, obj: any): any {
    const scope = scopeOf(path);
    const copy = clone(obj);
    if (scope.namespace !== undefined) (copy.metadata ??= {}).namespace ??= scope.namespace;
    const key = objectRef(copy);
    const map = this.collection(scope.path);
    const type = map.has(key) ? 'MODIFIED' : 'ADDED';
    const stored = this.stamp(copy);
    map.set(key, stored);
    this.notify(scope.path, type, stored);
    return clone(stored);
  }

  /** Deletes an object of any collection by `namespace/name` and tells its watchers. */
  remove(path: string, key: string): void {
    const scope = scopeOf(path);
    const map = this.collection(scope.path);
    const obj = map.get(key);
    if (!obj) return;
    map.delete(key);
    this.rv++;
    this.notify(scope.path, 'DELETED', {
      ...obj,
      metadata: { ...obj.metadata, resourceVersion: String(this.rv) },
    });
  }

  /** Ends every open watch (as a server's watch timeout does), of one collection or all. */
  endWatches(path?: string): void {
    for (const w of [...this.watchers]) if (this.covers(w, path)) w.finish(undefined);
  }

  /** Watches open now, of one collection (a namespaced path: of that namespace) or all. */
  openWatches(path?: string): number {
    return [...this.watchers].filter((w) => this.covers(w, path)).length;
  }

  /** The field selectors of the watches open now on a collection (`metadata.name=x`, …). */
  watchedSelectors(path: string): string[] {
    return [...this.watchers]
      .filter((w) => this.covers(w, path))
      .map((w) => w.fieldSelector ?? '')
      .sort();
  }

  private covers(w: Watcher, path: string | undefined): boolean {
    if (path === undefined) return true;
    const scope = scopeOf(path);
    return w.path === scope.path && (scope.namespace === undefined || w.namespace === scope.namespace);
  }

  /** Sends a bookmark to every watcher. */
  bookmark(): void {
    for (const w of this.watchers) {
      w.onEvent({
        type: 'BOOKMARK',
        object: {
          ...(w.path === PODS ? { kind: 'Pod' } : {}),
          metadata: { resourceVersion: String(this.rv) },
        },
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
    this.notify(PODS, 'ADDED', stored);
    return clone(stored);
  }

  /** A user's update of a pod (labels, say), notified to watchers. */
  updatePodDirect(pod: Pod): void {
    const key = `${pod.metadata!.namespace ?? 'default'}/${pod.metadata!.name}`;
    const stored = this.stamp(clone(pod));
    this.pods.set(key, stored);
    this.notify(PODS, 'MODIFIED', stored);
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
    this.notify(PODS, 'MODIFIED', next);
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
      this.notify(PODS, 'MODIFIED', next);
      return;
    }
    this.pods.delete(key);
    this.rv++;
    this.notify(PODS, 'DELETED', { ...pod, metadata: { ...pod.metadata, resourceVersion: String(this.rv) } });
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

  // --- configmaps, secrets, service-account tokens --------------------------------------------------

  async getConfigMap(namespace: string, name: string): Promise<ConfigMap> {
    this.enter('get', `configmap/${namespace}/${name}`);
    return clone(this.must(this.collection(CONFIGMAPS), `${namespace}/${name}`, 'configmaps'));
  }

  async getSecret(namespace: string, name: string): Promise<Secret> {
    this.enter('get', `secret/${namespace}/${name}`);
    return clone(this.must(this.collection(SECRETS), `${namespace}/${name}`, 'secrets'));
  }

  /**
   * A TokenRequest as the API server answers it, for a service account that exists: the lifetime asked
   * for (default 3600 s; at least 600 s), expiring `now` + that; the token is a JWT-shaped string of its
   * claims, the same for the same request at the same time.
   */
  async createServiceAccountToken(
    namespace: string,
    name: string,
    request: TokenRequest,
  ): Promise<TokenRequest> {
    this.enter('create', `serviceaccount/${namespace}/${name}/token`, request);
    this.must(this.collection(SERVICEACCOUNTS), `${namespace}/${name}`, 'serviceaccounts');
    return fakeTokenRequest(namespace, name, request, this.now());
  }

  /** Who a bearer token is (TokenReview answers); default: no token authenticates. */
  tokenReviewer: (token: string) => TokenReview['status'] = () => ({
    authenticated: false,
    error: 'unknown token',
  });
  /** SubjectAccessReview answers; default: everything is allowed. */
  accessReviewer: (spec: NonNullable<SubjectAccessReview['spec']>) => boolean = () => true;

  async createTokenReview(review: TokenReview): Promise<TokenReview> {
    this.enter('create', 'tokenreview', review);
    return { ...clone(review), status: this.tokenReviewer(review.spec?.token ?? '') };
  }

  async createSubjectAccessReview(review: SubjectAccessReview): Promise<SubjectAccessReview> {
    this.enter('create', 'subjectaccessreview', review);
    return { ...clone(review), status: { allowed: this.accessReviewer(review.spec!) } };
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

  private collection(path: string): Map<string, any> {
    if (path === PODS) return this.pods;
    if (path === NODES) return this.nodes;
    let map = this.collections.get(path);
    if (!map) this.collections.set(path, (map = new Map()));
    return map;
  }

  private notify(path: string, type: WatchEvent['type'], obj: unknown): void {
    for (const w of this.watchers) {
      if (w.path === path && inNamespace(w.namespace)(obj) && w.selector(obj))
        w.onEvent({ type, object: clone(obj) });
    }
  }
}

function alreadyExists(resource: string, name: string): ApiError {
  return new ApiError(409, 'AlreadyExists', `${resource} "${name}" already exists`);
}

/** `services` of `/api/v1/services`, as the call log names it. */
const resourceOf = (path: string) => path.slice(path.lastIndexOf('/') + 1);

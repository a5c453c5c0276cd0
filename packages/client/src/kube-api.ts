import type * as k8s from '@kubernetes/client-node';
import type { ConfigMap, Pod, Secret, TokenRequest, Wire } from '@nodelet/api';

/**
 * The API server as nodelet uses it: the few calls the kubelet makes (node, lease, pods, events, CSRs,
 * the ConfigMaps, Secrets and service-account tokens its pods reference) and a generic list + watch (what a `Reflector` needs: the proxy's Services, EndpointSlices and Node),
 * on plain JSON objects, with a typed error crossing the boundary so callers decide retry vs give up.
 * `ClientNodeApi` implements it with @kubernetes/client-node (a real cluster or `nodelet up`, by
 * kubeconfig); `FakeKubeApi` (`@nodelet/client/testing`) keeps objects in memory, so the kubelet's and
 * the proxy's API tests run under virtual time.
 */
export type Node = Wire<k8s.V1Node>;
export type NodeStatus = Wire<k8s.V1NodeStatus>;
export type NodeCondition = Wire<k8s.V1NodeCondition>;
export type Taint = Wire<k8s.V1Taint>;
export type Lease = Wire<k8s.V1Lease>;
export type CoreEvent = Wire<k8s.CoreV1Event>;
export type ObjectReference = Wire<k8s.V1ObjectReference>;
export type CertificateSigningRequest = Wire<k8s.V1CertificateSigningRequest>;

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent<T = any> {
  type: WatchEventType;
  /** The object; for ERROR, a `Status` (410 Gone when the resource version is too old); for BOOKMARK,
   * an object with only `metadata.resourceVersion`. */
  object: T;
}

export interface WatchHandle {
  /** Ends the watch; `done` then resolves. */
  stop(): void;
  /** Resolves when the watch ended: undefined when the server closed it (or `stop`), else the error. */
  readonly done: Promise<unknown>;
}

export interface ObjectList<T> {
  items: T[];
  resourceVersion: string;
}

export type PodListResult = ObjectList<Pod>;

/** Which objects a list or watch covers (selectors as the API server spells them). */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
}

export interface WatchOptions extends ListOptions {
  /** Where the watch starts: the list's resource version, or the last event's or bookmark's. */
  resourceVersion: string;
  /** Server-side timeout; the client's default when unset. Bookmarks are always asked for. */
  timeoutSeconds?: number;
}

/**
 * List and watch of any resource by its collection path (`/api/v1/services`,
 * `/apis/discovery.k8s.io/v1/endpointslices`): all a `Reflector` needs.
 */
export interface ListWatchApi {
  /** The API server address, for messages. */
  readonly server: string;
  list<T = any>(path: string, options?: ListOptions): Promise<ObjectList<T>>;
  /** Watches from `options.resourceVersion`, with bookmarks. */
  watch<T = any>(path: string, options: WatchOptions, onEvent: (e: WatchEvent<T>) => void): WatchHandle;
}

export interface KubeApi extends ListWatchApi {
  getNode(name: string): Promise<Node>;
  createNode(node: Node): Promise<Node>;
  /** A JSON merge patch of the node (metadata, spec). */
  patchNode(name: string, patch: object): Promise<Node>;
  /** A JSON merge patch of `nodes/<name>/status`. */
  patchNodeStatus(name: string, patch: object): Promise<Node>;

  getLease(namespace: string, name: string): Promise<Lease>;
  createLease(lease: Lease): Promise<Lease>;
  /** Replaces the lease (optimistic concurrency: its resourceVersion must be current). */
  updateLease(lease: Lease): Promise<Lease>;

  /** Pods of every namespace matching the field selector (`spec.nodeName=<node>`). */
  listPods(fieldSelector: string): Promise<PodListResult>;
  /** Watches pods from `resourceVersion`, with bookmarks. */
  watchPods(fieldSelector: string, resourceVersion: string, onEvent: (e: WatchEvent) => void): WatchHandle;
  getPod(namespace: string, name: string): Promise<Pod>;
  createPod(pod: Pod): Promise<Pod>;
  /** A JSON merge patch of `pods/<name>/status`. */
  patchPodStatus(namespace: string, name: string, patch: object): Promise<Pod>;
  /** Deletes a pod; `uid` is a precondition (409 Conflict when the pod there now has another UID). */
  deletePod(
    namespace: string,
    name: string,
    options: { gracePeriodSeconds?: number; uid?: string },
  ): Promise<void>;

  createEvent(event: CoreEvent): Promise<CoreEvent>;
  /** A JSON merge patch of an event (its count and last timestamp, when a repeat is aggregated). */
  patchEvent(namespace: string, name: string, patch: object): Promise<CoreEvent>;

  createCertificateSigningRequest(csr: CertificateSigningRequest): Promise<CertificateSigningRequest>;
  getCertificateSigningRequest(name: string): Promise<CertificateSigningRequest>;

  getConfigMap(namespace: string, name: string): Promise<ConfigMap>;
  /** A Secret as the API returns it: `data` values base64-encoded. */
  getSecret(namespace: string, name: string): Promise<Secret>;
  /**
   * A token of the service account (`POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`, an
   * authentication.k8s.io/v1 TokenRequest): the answer's `status` holds the token and its expiry.
   */
  createServiceAccountToken(namespace: string, name: string, request: TokenRequest): Promise<TokenRequest>;

  /**
   * An authentication.k8s.io/v1 TokenReview: who the API server says a bearer token is (the kubelet's
   * webhook authentication). Optional: clients that cannot ask leave it out.
   */
  createTokenReview?(review: TokenReview): Promise<TokenReview>;
  /** An authorization.k8s.io/v1 SubjectAccessReview: may this user do this (webhook authorization). */
  createSubjectAccessReview?(review: SubjectAccessReview): Promise<SubjectAccessReview>;
}

export type TokenReview = Wire<k8s.V1TokenReview>;
export type SubjectAccessReview = Wire<k8s.V1SubjectAccessReview>;

/**
 * An API call that failed: `code` is the HTTP status (0 when the server could not be reached or did not
 * answer in time), `reason` the Status reason (`NotFound`, `AlreadyExists`, `Conflict`, `Gone`, …).
 */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    /** The server's own message (the Status `message`), when it sent one. */
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const isNotFound = (err: unknown) => err instanceof ApiError && err.code === 404;
export const isAlreadyExists = (err: unknown) =>
  err instanceof ApiError && err.code === 409 && err.reason === 'AlreadyExists';
export const isConflict = (err: unknown) =>
  err instanceof ApiError && err.code === 409 && err.reason !== 'AlreadyExists';
export const isGone = (err: unknown) =>
  err instanceof ApiError && (err.code === 410 || err.reason === 'Expired');
/** The server was unreachable, timed out, or is failing (5xx, 429): retry later, the request may succeed. */
export const isTransient = (err: unknown) =>
  !(err instanceof ApiError) || err.code === 0 || err.code === 429 || err.code >= 500;

/** The `namespace/name` of an object, for logs. */
export const objectRef = (o: { metadata?: { namespace?: string; name?: string } }) =>
  o.metadata?.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : (o.metadata?.name ?? '');

/** RFC 3339 with seconds (`metav1.Time`). */
export function rfc3339Seconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** RFC 3339 with six fractional digits (`metav1.MicroTime`: lease renew times, event times). */
export function rfc3339Micro(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

import { Agent as HttpsAgent, type AgentOptions, type RequestOptions } from 'node:https';
import * as k8s from '@kubernetes/client-node';
import type { ConfigMap, Pod, Secret, TokenRequest } from '@nodelet/api';
import type { Clock } from '@nodelet/kernel';
import { resourceOf, toApiError } from './api-errors.js';
import { getList } from './http-get.js';
import {
  type CertificateSigningRequest,
  type CoreEvent,
  type KubeApi,
  type Lease,
  type ListOptions,
  type Node,
  type ObjectList,
  type PodListResult,
  type SubjectAccessReview,
  type TokenReview,
  type WatchEvent,
  type WatchHandle,
  type WatchOptions,
} from './kube-api.js';
import { TokenBucket } from './rate-limiter.js';

export interface ClientNodeApiOptions {
  clock: Clock;
  /** Client-side rate limit (upstream kubeAPIQPS / kubeAPIBurst: 50 / 100). */
  qps?: number;
  burst?: number;
  /** Per-request timeout (not watches); an API server that does not answer in time is `code 0`. */
  requestTimeoutMs?: number;
  /** Server-side watch timeout; the watch is then re-established from the last resource version. */
  watchTimeoutSeconds?: number;
}

/**
 * `KubeApi` over @kubernetes/client-node: CoreV1Api, CoordinationV1Api, CertificatesV1Api and its
 * Watch, so the kubelet and the proxy speak to any API server the kubeconfig points at (client
 * certificates, bearer tokens, exec credential plugins — whatever client-node supports). Every request
 * takes a token of the client's rate limiter (50 QPS, burst 100) first, and has a timeout on the clock.
 *
 * client-node hands back model classes (timestamps as `Date`); they are turned back into plain JSON
 * here, as the rest of nodelet reads API objects. Lists (`list`, `listPods`) skip the models: the JSON
 * the server sent is parsed once and handed on, which is what a list of thousands of objects costs.
 */
export class ClientNodeApi implements KubeApi {
  readonly server: string;
  private readonly core: k8s.CoreV1Api;
  private readonly coordination: k8s.CoordinationV1Api;
  private readonly certificates: k8s.CertificatesV1Api;
  private readonly authentication: k8s.AuthenticationV1Api;
  private readonly authorization: k8s.AuthorizationV1Api;
  private readonly watcher: k8s.Watch;
  private readonly limiter: TokenBucket;
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  /** One keep-alive agent for the current credentials (client-node makes a new agent, so a new TLS
   * connection, for every request). */
  private agent?: { agent: HttpsAgent; options: AgentOptions };

  constructor(
    readonly kubeConfig: k8s.KubeConfig,
    private readonly options: ClientNodeApiOptions,
  ) {
    this.server = kubeConfig.getCurrentCluster()?.server ?? '';
    this.core = kubeConfig.makeApiClient(k8s.CoreV1Api);
    this.coordination = kubeConfig.makeApiClient(k8s.CoordinationV1Api);
    this.certificates = kubeConfig.makeApiClient(k8s.CertificatesV1Api);
    this.authentication = kubeConfig.makeApiClient(k8s.AuthenticationV1Api);
    this.authorization = kubeConfig.makeApiClient(k8s.AuthorizationV1Api);
    this.watcher = new k8s.Watch(kubeConfig);
    this.clock = options.clock;
    this.limiter = new TokenBucket(options.clock, options.qps ?? 50, options.burst ?? 100);
    this.timeoutMs = options.requestTimeoutMs ?? 10_000;
  }

  /** Releases requests waiting for the rate limiter (shutdown). */
  close(): void {
    this.limiter.close();
    this.agent?.agent.destroy();
    this.agent = undefined;
  }

  /**
   * The keep-alive agent for the TLS options client-node just applied to a request; a new one when they
   * changed (an exec credential plugin rotated the client certificate, say).
   */
  private keepAlive(fresh: unknown): HttpsAgent | undefined {
    if (!(fresh instanceof HttpsAgent) || this.kubeConfig.getCurrentCluster()?.proxyUrl) return undefined;
    const options = fresh.options;
    const same = (a: AgentOptions, b: AgentOptions) =>
      (['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const).every(
        (k) => String(a[k] ?? '') === String(b[k] ?? ''),
      );
    if (!this.agent || !same(this.agent.options, options)) {
      this.agent = { agent: new HttpsAgent({ ...options, keepAlive: true, maxSockets: 16 }), options };
    }
    return this.agent.agent;
  }

  getNode(name: string): Promise<Node> {
    return this.call(`get node ${name}`, (o) => this.core.readNode({ name }, o));
  }

  createNode(node: Node): Promise<Node> {
    return this.call(`create node ${node.metadata?.name}`, (o) =>
      this.core.createNode({ body: node as any }, o),
    );
  }

  patchNode(name: string, patch: object): Promise<Node> {
    return this.call(`patch node ${name}`, (o) => this.core.patchNode({ name, body: patch }, o), merge);
  }

  patchNodeStatus(name: string, patch: object): Promise<Node> {
    return this.call(
      `patch node ${name} status`,
      (o) => this.core.patchNodeStatus({ name, body: patch }, o),
      merge,
    );
  }

  getLease(namespace: string, name: string): Promise<Lease> {
    return this.call(`get lease ${namespace}/${name}`, (o) =>
      this.coordination.readNamespacedLease({ namespace, name }, o),
    );
  }

  createLease(lease: Lease): Promise<Lease> {
    const namespace = lease.metadata!.namespace!;
    return this.call(`create lease ${namespace}/${lease.metadata?.name}`, (o) =>
      this.coordination.createNamespacedLease({ namespace, body: lease as any }, o),
    );
  }

  updateLease(lease: Lease): Promise<Lease> {
    const { namespace, name } = lease.metadata as { namespace: string; name: string };
    return this.call(`update lease ${namespace}/${name}`, (o) =>
      this.coordination.replaceNamespacedLease({ namespace, name, body: lease as any }, o),
    );
  }

  listPods(fieldSelector: string): Promise<PodListResult> {
    return this.list<Pod>('/api/v1/pods', { fieldSelector });
  }

  watchPods(fieldSelector: string, resourceVersion: string, onEvent: (e: WatchEvent) => void): WatchHandle {
    return this.watch('/api/v1/pods', { fieldSelector, resourceVersion }, onEvent);
  }

  async list<T>(path: string, options: ListOptions = {}): Promise<ObjectList<T>> {
    await this.limiter.take();
    const url = new URL(this.server.replace(/\/$/, '') + path);
    if (options.labelSelector) url.searchParams.set('labelSelector', options.labelSelector);
    if (options.fieldSelector) url.searchParams.set('fieldSelector', options.fieldSelector);
    return getList<T>(this.clock, this.timeoutMs, this.server, url, async () => {
      const request: RequestOptions = {};
      await this.kubeConfig.applyToHTTPSOptions(request);
      return { ...request, agent: this.keepAlive(request.agent) ?? request.agent };
    });
  }

  watch<T>(path: string, options: WatchOptions, onEvent: (e: WatchEvent<T>) => void): WatchHandle {
    const what = `watch ${resourceOf(path)}`;
    let controller: AbortController | undefined;
    let stopped = false;
    let finish!: (err: unknown) => void;
    const done = new Promise<unknown>((resolve) => (finish = resolve));
    const params = {
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      resourceVersion: options.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: options.timeoutSeconds ?? this.options.watchTimeoutSeconds ?? 300,
    };
    void this.limiter.take().then(async () => {
      if (stopped) return finish(undefined);
      try {
        controller = await this.watcher.watch(
          path,
          params,
          (type, object) => {
            if (!stopped) onEvent({ type: type as WatchEvent['type'], object });
          },
          (err) => finish(stopped || !err ? undefined : toApiError(err, this.server, what)),
        );
        if (stopped) controller.abort();
      } catch (err) {
        finish(toApiError(err, this.server, what));
      }
    });
    return {
      stop: () => {
        stopped = true;
        controller?.abort();
        finish(undefined);
      },
      done,
    };
  }

  getPod(namespace: string, name: string): Promise<Pod> {
    return this.call(`get pod ${namespace}/${name}`, (o) =>
      this.core.readNamespacedPod({ namespace, name }, o),
    );
  }

  createPod(pod: Pod): Promise<Pod> {
    const namespace = pod.metadata?.namespace ?? 'default';
    return this.call(`create pod ${namespace}/${pod.metadata?.name}`, (o) =>
      this.core.createNamespacedPod({ namespace, body: pod as any }, o),
    );
  }

  patchPodStatus(namespace: string, name: string, patch: object): Promise<Pod> {
    return this.call(
      `patch pod ${namespace}/${name} status`,
      (o) => this.core.patchNamespacedPodStatus({ namespace, name, body: patch }, o),
      merge,
    );
  }

  async deletePod(
    namespace: string,
    name: string,
    options: { gracePeriodSeconds?: number; uid?: string },
  ): Promise<void> {
    const body: k8s.V1DeleteOptions = {};
    if (options.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = options.gracePeriodSeconds;
    if (options.uid) body.preconditions = { uid: options.uid };
    await this.call(`delete pod ${namespace}/${name}`, (o) =>
      this.core.deleteNamespacedPod(
        { namespace, name, body, gracePeriodSeconds: options.gracePeriodSeconds },
        o,
      ),
    );
  }

  createEvent(event: CoreEvent): Promise<CoreEvent> {
    const namespace = event.metadata?.namespace ?? 'default';
    return this.call(`create event ${namespace}/${event.metadata?.name}`, (o) =>
      this.core.createNamespacedEvent({ namespace, body: event as any }, o),
    );
  }

  patchEvent(namespace: string, name: string, patch: object): Promise<CoreEvent> {
    return this.call(
      `patch event ${namespace}/${name}`,
      (o) => this.core.patchNamespacedEvent({ namespace, name, body: patch }, o),
      merge,
    );
  }

  createCertificateSigningRequest(csr: CertificateSigningRequest): Promise<CertificateSigningRequest> {
    return this.call(`create certificatesigningrequest ${csr.metadata?.name}`, (o) =>
      this.certificates.createCertificateSigningRequest({ body: csr as any }, o),
    );
  }

  getCertificateSigningRequest(name: string): Promise<CertificateSigningRequest> {
    return this.call(`get certificatesigningrequest ${name}`, (o) =>
      this.certificates.readCertificateSigningRequest({ name }, o),
    );
  }

  getConfigMap(namespace: string, name: string): Promise<ConfigMap> {
    return this.call(`get configmap ${namespace}/${name}`, (o) =>
      this.core.readNamespacedConfigMap({ namespace, name }, o),
    );
  }

  getSecret(namespace: string, name: string): Promise<Secret> {
    return this.call(`get secret ${namespace}/${name}`, (o) =>
      this.core.readNamespacedSecret({ namespace, name }, o),
    );
  }

  createServiceAccountToken(namespace: string, name: string, request: TokenRequest): Promise<TokenRequest> {
    const body = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', ...request };
    return this.call(`create token of serviceaccount ${namespace}/${name}`, (o) =>
      this.core.createNamespacedServiceAccountToken({ namespace, name, body: body as any }, o),
    );
  }

  createTokenReview(review: TokenReview): Promise<TokenReview> {
    const body = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', ...review };
    return this.call('create tokenreview', (o) =>
      this.authentication.createTokenReview({ body: body as any }, o),
    );
  }

  createSubjectAccessReview(review: SubjectAccessReview): Promise<SubjectAccessReview> {
    const body = { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', ...review };
    return this.call('create subjectaccessreview', (o) =>
      this.authorization.createSubjectAccessReview({ body: body as any }, o),
    );
  }

  /**
   * One request: a rate-limiter token (clock time, untracked), then the request itself as tracked I/O,
   * with a timeout; client-node's model objects come back as plain JSON, its errors as `ApiError`.
   */
  private async call<T>(
    what: string,
    request: (options: k8s.ConfigurationOptions) => Promise<unknown>,
    contentType = json,
  ): Promise<T> {
    await this.limiter.take();
    const deadline = this.clock.deadline(this.timeoutMs);
    const options: k8s.ConfigurationOptions = {
      middleware: [
        {
          // client-node's object API runs middleware as its own Observable stub.
          pre: (ctx: k8s.RequestContext) => {
            if (contentType !== json) ctx.setHeaderParam('Content-Type', contentType);
            const agent = this.keepAlive(ctx.getAgent());
            if (agent) ctx.setAgent(agent);
            ctx.setSignal(deadline.signal);
            return new k8s.Observable(Promise.resolve(ctx));
          },
          post: (res: k8s.ResponseContext) => new k8s.Observable(Promise.resolve(res)),
        } as k8s.ObservableMiddleware as any,
      ],
      middlewareMergeStrategy: 'append',
    };
    try {
      const response = request(options);
      // Tracked as a promise that never rejects: a rejection of the tracked copy would go unhandled.
      await this.clock.track(response.then(noop, noop));
      return toWire(await response) as T;
    } catch (err) {
      throw toApiError(err, this.server, what);
    } finally {
      deadline.cancel();
    }
  }
}

const json = 'application/json';
const noop = () => undefined;
const merge = 'application/merge-patch+json';

/** A client-node model (Dates, class instances) as plain JSON, the way the API server sent it. */
export function toWire(value: unknown): unknown {
  if (value instanceof Date) {
    return Number.isNaN(value.getTime()) ? undefined : value.toISOString().replace('.000Z', 'Z');
  }
  if (Array.isArray(value)) return value.map(toWire);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined) continue;
      out[k === '_continue' ? 'continue' : k] = toWire(v);
    }
    return out;
  }
  return value;
}

export { toApiError };

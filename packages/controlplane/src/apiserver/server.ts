import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Clock, hardenHttpServer, type Logger } from '@nodelet/kernel';
import type { Authenticator } from './authentication.js';
import type { AuthorizationResult, RequestAttributes } from '../authorization/attributes.js';
import { forbiddenError, type AuthorizationChain } from '../authorization/chain.js';
import { decodePathSegment, requestAttributes } from '../authorization/request-info.js';
import type { TokenRequestContext } from '../serviceaccount/token-request.js';
import {
  aggregatedDiscovery,
  aggregatedDiscoveryType,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  wantsAggregated,
} from './discovery.js';
import type { OpenApiDocuments } from './openapi.js';
import type { KubeletClient } from './kubelet-client.js';
import { podKubelet, proxyNode, proxyUpgrade, streamPath, type StreamSubresource } from './kubelet-proxy.js';
import type { PodLogProvider } from './pod-logs.js';
import {
  metricsAggregatedEntry,
  metricsGroup,
  metricsGroupEntry,
  serveMetrics,
} from '../metrics/metrics-api.js';
import type { ResourceMetrics } from '../metrics/resource-metrics.js';
import type { Registry } from './registry.js';
import { resolveResource, serveResource, type ServeContext } from './resource-handler.js';
import type { RequestUser } from './resource-type.js';
import { send } from './responses.js';
import type { Auditor, RequestAudit } from '../audit/request-audit.js';
import { ApiError, internalError, type Status } from './status.js';
import { isLongRunning } from './filters/long-running.js';
import { defaultInFlightLimits, type InFlightLimits, MaxInFlight } from './filters/max-inflight.js';
import {
  defaultRequestTimeoutMs,
  requestTimeoutFor,
  startRequestTimeout,
} from './filters/request-timeout.js';
import { maxHeaderBytes, parseRequestTarget } from './filters/request-target.js';
import { slowClientTimeouts, type SlowClientTimeouts } from './filters/slow-clients.js';

export type { PodLogOptions, PodLogProvider } from './pod-logs.js';

/**
 * The HTTPS front of the control plane: authentication (authentication.ts), the discovery and OpenAPI
 * endpoints, and the resource URLs (`/api/v1/namespaces/{ns}/pods/{name}/status`, …) mapped onto the
 * Registry, with content negotiation (JSON, YAML, Table, PartialObjectMetadata), watch streaming and
 * Status errors. The resource URLs are served by resource-handler.ts, watches by watch-stream.ts.
 */
export interface ServerVersion {
  major: string;
  minor: string;
  gitVersion: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  goVersion: string;
  compiler: string;
  platform: string;
}

export interface ApiServerOptions {
  registry: Registry;
  openapi: OpenApiDocuments;
  clock: Clock;
  logger: Logger;
  version: ServerVersion;
  tls: { key: string; cert: string; ca: string };
  /** Pod log providers by node name. */
  logProviders: ReadonlyMap<string, PodLogProvider>;
  /** Reaches kubelets (logs, exec, attach, port-forward, nodes/proxy); without it those answer 503. */
  kubelets?: KubeletClient;
  /** Serves metrics.k8s.io from these scrapes when given. */
  resourceMetrics?: ResourceMetrics;
  authenticator: Authenticator;
  /** Decides every request after authentication (`Node,RBAC` by default; control-plane.ts builds it). */
  authorizer: AuthorizationChain;
  /** Serves `serviceaccounts/<name>/token` (TokenRequest) when given. */
  tokenRequests?: TokenRequestContext;
  /** Largest accepted request body (upstream: 3 MiB). */
  maxBodyBytes?: number;
  /** Watches without timeoutSeconds end after a random time in [min, 2·min) (upstream: 30 min). */
  minWatchTimeoutMs?: number;
  /** The audit log's view of requests, when auditing is on. */
  auditor?: Auditor;
  /** Requests that are not long-running are answered 504 after this long (upstream: 60 s; 0: never). */
  requestTimeoutMs?: number;
  /** Read-only and mutating requests served at once (upstream: 400 and 200; 0: no limit). */
  inFlight?: Partial<InFlightLimits>;
  /** A watch whose client leaves more than this unread is ended (default 32 MiB). */
  maxWatchBufferBytes?: number;
  /** How long a client may take to send its headers, and its whole request (see slow-clients.ts). */
  slowClients?: Partial<SlowClientTimeouts>;
}

export class ApiServer {
  private server?: Server;
  private readonly watches = new Set<() => void>();
  private readonly sockets = new Set<Socket>();
  private address = '127.0.0.1:0';
  private readonly context: ServeContext;
  private readonly inFlight: MaxInFlight;

  constructor(private readonly options: ApiServerOptions) {
    this.inFlight = new MaxInFlight({ ...defaultInFlightLimits, ...options.inFlight });
    this.context = {
      registry: options.registry,
      clock: options.clock,
      maxBodyBytes: options.maxBodyBytes ?? 3 * 1024 * 1024,
      logProviders: options.logProviders,
      minWatchTimeoutMs: options.minWatchTimeoutMs,
      maxWatchBufferBytes: options.maxWatchBufferBytes ?? 32 * 1024 * 1024,
      watches: this.watches,
      authenticator: options.authenticator,
      authorizer: options.authorizer,
      tokenRequests: options.tokenRequests,
      kubelets: options.kubelets,
    };
  }

  async listen(port: number, host: string): Promise<AddressInfo> {
    const { tls } = this.options;
    const timeouts = slowClientTimeouts(this.options.slowClients, this.requestTimeoutMs);
    const server = createServer(
      {
        key: tls.key,
        cert: tls.cert,
        ca: tls.ca,
        requestCert: true,
        rejectUnauthorized: false,
        maxHeaderSize: maxHeaderBytes,
        connectionsCheckingInterval: timeouts.checkIntervalMs,
      },
      (req, res) => void this.handle(req, res),
    );
    hardenHttpServer(server);
    server.headersTimeout = timeouts.headersMs;
    server.requestTimeout = timeouts.requestMs;
    server.on(
      'upgrade',
      (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.upgrade(req, socket, head),
    );
    server.keepAliveTimeout = 65_000;
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.on('tlsClientError', (err) =>
      this.options.logger.debug('TLS handshake failed', { err: err.message }),
    );
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          err.code === 'EADDRINUSE'
            ? new Error(`port ${port} on ${host} is already in use; choose another with --port`)
            : err,
        ),
      );
      server.listen(port, host, () => resolve());
    });
    const info = server.address() as AddressInfo;
    this.address = `${info.address}:${info.port}`;
    return info;
  }

  /** Requests being served now, as the in-flight limits count them. */
  get requestsInFlight(): { readOnly: number; mutating: number } {
    return this.inFlight.inFlight;
  }

  /** Ends every open watch stream (clients resume from their last resourceVersion). Returns how many. */
  closeWatches(): number {
    const all = [...this.watches];
    for (const stop of all) stop();
    return all.length;
  }

  async close(): Promise<void> {
    for (const stop of [...this.watches]) stop();
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of this.sockets) socket.destroy();
    });
  }

  private get requestTimeoutMs(): number {
    return this.options.requestTimeoutMs ?? defaultRequestTimeoutMs;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let audit: RequestAudit | undefined;
    let release: (() => void) | undefined;
    try {
      const url = parseRequestTarget(req.url);
      const longRunning = isLongRunning(url);
      if (!longRunning) {
        const timeoutMs = requestTimeoutFor(url, this.requestTimeoutMs);
        startRequestTimeout(this.options.clock, timeoutMs, res);
      }
      const { user } = await this.authenticateAndAuthorize(
        req,
        url,
        (attributes) => (audit = this.options.auditor?.begin(req, res, attributes)),
        res,
      );
      if (!longRunning) release = this.inFlight.admit(req.method ?? 'GET', user.groups);
      await this.route(req, res, url, user);
    } catch (err) {
      this.fail(res, err, audit);
    } finally {
      // A request counts until its handler is done and its answer is out (or its client gone).
      if (release && (res.writableFinished || res.destroyed)) release();
      else if (release) res.once('close', release);
    }
  }

  /**
   * Who asks (authentication.ts) and whether they may (the authorization chain, on the request's
   * attributes: request-info.ts). The audit log hears of both: refused credentials, and through
   * `startAudit` (which begins the request's audit) the decision and its reason. Throws the 401 or 403
   * to send.
   */
  private async authenticateAndAuthorize(
    req: IncomingMessage,
    url: URL,
    startAudit: (attributes: RequestAttributes) => RequestAudit | undefined,
    res?: ServerResponse,
  ): Promise<{ user: RequestUser; attributes: RequestAttributes; decision: AuthorizationResult }> {
    let user: RequestUser;
    try {
      user = await this.options.authenticator.authenticate(req);
    } catch (err) {
      this.options.auditor?.failedAuthentication(req, res, url);
      throw err;
    }
    const attributes = requestAttributes(user, req.method ?? 'GET', url);
    const audit = startAudit(attributes);
    const decision = this.options.authorizer.authorize(attributes);
    audit?.authorized(decision.decision === 'allow' ? 'allow' : 'forbid', decision.reason);
    if (decision.decision !== 'allow') throw forbiddenError(attributes, decision.reason);
    return { user, attributes, decision };
  }

  private fail(res: ServerResponse, err: unknown, audit?: RequestAudit): void {
    let status: Status;
    if (err instanceof ApiError) status = err.toStatus();
    else {
      this.options.logger.error('request failed', {
        err: err instanceof Error ? (err.stack ?? err.message) : String(err),
      });
      status = internalError(err instanceof Error ? err.message : String(err)).toStatus();
    }
    // Already answered (the request timed out while the handler ran): nothing more to say.
    if (res.writableEnded) return;
    if (res.headersSent) {
      // Failed after the answer began: the audit log's Panic stage.
      audit?.panicked(status.message ?? 'the response failed after it started');
      res.destroy();
      return;
    }
    // As upstream's error writer: a Status that says when to retry says it in Retry-After too.
    const retryAfter = status.details?.retryAfterSeconds;
    if (retryAfter) res.setHeader('retry-after', String(retryAfter));
    send(res, status.code, status);
  }

  private async route(req: IncomingMessage, res: ServerResponse, url: URL, user: RequestUser): Promise<void> {
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    const { registry } = this.options;
    const types = registry.types;
    const get = method === 'GET' || method === 'HEAD';
    switch (path) {
      case '/healthz':
      case '/livez':
      case '/readyz':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('ok');
        return;
      case '/version':
        return send(res, 200, this.options.version);
      case '/api':
        if (wantsAggregated(req.headers.accept)) {
          res
            .writeHead(200, { 'content-type': aggregatedDiscoveryType })
            .end(JSON.stringify(aggregatedDiscovery(types, true)));
          return;
        }
        return send(res, 200, apiVersions(this.address));
      case '/apis':
        if (wantsAggregated(req.headers.accept)) {
          res
            .writeHead(200, { 'content-type': aggregatedDiscoveryType })
            .end(JSON.stringify(this.withMetrics(aggregatedDiscovery(types, false), metricsAggregatedEntry)));
          return;
        }
        return send(res, 200, this.withMetrics(apiGroupList(types), metricsGroupEntry, 'groups'));
      case '/openapi/v2':
        return this.openApiV2(req, res);
      case '/openapi/v3':
        res.writeHead(200, { 'content-type': 'application/json' }).end(this.options.openapi.v3Index);
        return;
    }
    if (path === '/apis/apiextensions.k8s.io/v1/customresourcedefinitions' && get) {
      // Not served (no CRDs), but kubectl's validation asks whether an unknown kind is a CRD: none is.
      return send(res, 200, {
        kind: 'CustomResourceDefinitionList',
        apiVersion: 'apiextensions.k8s.io/v1',
        metadata: { resourceVersion: String(registry.store.revision) },
        items: [],
      });
    }
    if (path.startsWith('/openapi/v3/')) {
      const doc = this.options.openapi.v3Document(path.slice('/openapi/v3/'.length));
      if (!doc) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      res
        .writeHead(200, {
          'content-type': 'application/json',
          'cache-control': 'public, immutable',
          etag: `"${this.options.openapi.v3Hash(path.slice(12))}"`,
        })
        .end(doc);
      return;
    }
    const segments = path.split('/').filter(Boolean).map(decodePathSegment);
    if (segments[0] === 'apis' && segments[1] === metricsGroup && this.options.resourceMetrics) {
      const m = this.options.resourceMetrics;
      return serveMetrics(registry.store, m, method, res, segments.slice(2), url.searchParams);
    }
    let group: string;
    let version: string;
    let rest: string[];
    if (segments[0] === 'api' && segments[1] === 'v1') {
      group = '';
      version = 'v1';
      rest = segments.slice(2);
    } else if (segments[0] === 'apis' && segments.length >= 2) {
      group = segments[1]!;
      if (segments.length === 2) {
        const doc = apiGroup(types, group);
        if (!doc || !get)
          throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
        return send(res, 200, doc);
      }
      version = segments[2]!;
      rest = segments.slice(3);
    } else {
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    if (rest.length === 0) {
      const doc = apiResourceList(types, group, version);
      if (!doc || !get)
        throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      return send(res, 200, doc);
    }
    if (group === '' && rest[0] === 'nodes' && rest[1] && rest[2] === 'proxy') {
      const sub = path.split('/').slice(6).join('/'); // kept encoded, as the kubelet will decode it
      return proxyNode(registry, this.options.kubelets, req, res, rest[1], sub, url.search);
    }
    const target = resolveResource(this.context, group, version, rest);
    await serveResource(this.context, req, res, url, target, user);
  }

  /** A discovery document with the metrics.k8s.io group added, when it is served. */
  private withMetrics(doc: object, entry: object, field = 'items'): object {
    if (!this.options.resourceMetrics) return doc;
    const d = doc as Record<string, unknown>;
    return { ...d, [field]: [...((d[field] as object[]) ?? []), entry] };
  }

  /** `pods/exec|attach|portforward` upgrade requests: authenticated, checked, then carried to the kubelet. */
  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    let audit: RequestAudit | undefined;
    try {
      const url = parseRequestTarget(req.url);
      await this.authenticateAndAuthorize(
        req,
        url,
        (attributes) => (audit = this.options.auditor?.beginUpgrade(req, attributes)),
      );
      const path = url.pathname.replace(/\/+$/, '');
      const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/(exec|attach|portforward)$/.exec(path);
      if (!m) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      const kubelets = this.options.kubelets;
      if (!kubelets) throw new ApiError(503, 'ServiceUnavailable', 'this API server has no kubelet client');
      const { registry } = this.options;
      const pod = registry.get(
        registry.byStorage('pods'),
        decodePathSegment(m[1]!),
        decodePathSegment(m[2]!),
      );
      const kubeletPath = streamPath(pod, m[3] as StreamSubresource, url.searchParams);
      const endpoint = podKubelet(registry, pod);
      // The kubelet's answer (101, or an error) starts the response; the connection's end completes it.
      let code = 502;
      socket.once('close', () => audit?.finish(code));
      await proxyUpgrade(kubelets, endpoint, kubeletPath, req, socket, head, (status) => {
        code = status;
        audit?.started(status);
      });
    } catch (err) {
      const status =
        err instanceof ApiError
          ? err.toStatus()
          : internalError(String((err as Error)?.message ?? err)).toStatus();
      audit?.finish(status.code, status);
      const body = JSON.stringify(status);
      if (!socket.writable) return;
      socket.end(
        `HTTP/1.1 ${status.code} ${status.reason ?? 'Error'}\r\ncontent-type: application/json\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    }
  }

  private openApiV2(req: IncomingMessage, res: ServerResponse): void {
    const accept = req.headers.accept ?? 'application/json';
    if (accept.includes('application/com.github.proto-openapi.spec.v2')) {
      res
        .writeHead(200, { 'content-type': 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf' })
        .end(this.options.openapi.v2Proto);
      return;
    }
    if (!/application\/json|\*\/\*/.test(accept)) {
      throw new ApiError(
        406,
        'NotAcceptable',
        'the OpenAPI v2 document is served as JSON or gnostic protobuf',
      );
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(this.options.openapi.v2);
  }
}

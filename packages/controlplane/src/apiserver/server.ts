import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { stringify as toYaml } from 'yaml';
import type { Clock, Logger } from '@nodelet/kernel';
import { isObject, type KubeObject } from '../object.js';
import { parseBody, parseFieldValidation } from './decode.js';
import {
  aggregatedDiscovery,
  aggregatedDiscoveryType,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  wantsAggregated,
} from './discovery.js';
import {
  negotiate,
  parseIncludeObject,
  toPartial,
  toPartialList,
  toTable,
  type Representation,
} from './negotiation.js';
import type { OpenApiDocuments } from './openapi.js';
import { patchTypeOf } from './patch.js';
import type { DeleteOptions, Registry, WatchEventType } from './registry.js';
import { authenticate, authorize } from './authentication.js';
import { apiVersionOf, type RequestUser, type ResourceType } from './resource-type.js';
import {
  ApiError,
  badRequest,
  internalError,
  methodNotAllowed,
  notImplemented,
  tooLarge,
  unsupportedMediaType,
  type Status,
} from './status.js';

/**
 * The HTTPS front of the control plane: authentication by client certificate or bootstrap token, the discovery and OpenAPI
 * endpoints, and the resource URLs (`/api/v1/namespaces/{ns}/pods/{name}/status`, …) mapped onto the
 * Registry, with content negotiation (JSON, YAML, Table, PartialObjectMetadata), watch streaming and
 * Status errors.
 */
export interface PodLogOptions {
  container: string;
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  sinceSeconds?: number;
  limitBytes?: number;
}

/**
 * Serves `pods/log` for the pods of one node. The kubelet of a node implements it and registers it with
 * the control plane (in-process for `nodelet up`); until then the endpoint answers 501.
 */
export interface PodLogProvider {
  logs(pod: KubeObject, options: PodLogOptions, signal: AbortSignal): Promise<Readable | string>;
}

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
  /** Largest accepted request body (upstream: 3 MiB). */
  maxBodyBytes?: number;
  /** Watches without timeoutSeconds end after a random time in [min, 2·min) (upstream: 30 min). */
  minWatchTimeoutMs?: number;
}

interface ResourceRequest {
  type: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  watchPath: boolean;
}

export class ApiServer {
  private server?: Server;
  private readonly watches = new Set<() => void>();
  private readonly sockets = new Set<Socket>();
  private address = '127.0.0.1:0';
  private readonly maxBody: number;

  constructor(private readonly options: ApiServerOptions) {
    this.maxBody = options.maxBodyBytes ?? 3 * 1024 * 1024;
  }

  async listen(port: number, host: string): Promise<AddressInfo> {
    const { tls } = this.options;
    const server = createServer(
      { key: tls.key, cert: tls.cert, ca: tls.ca, requestCert: true, rejectUnauthorized: false },
      (req, res) => void this.handle(req, res),
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

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const user = authenticate(req, this.options.registry.store, this.options.clock.now());
      const url = new URL(req.url ?? '/', 'https://localhost');
      authorize(user, req.method ?? 'GET', url.pathname.replace(/\/+$/, '') || '/');
      await this.route(req, res, url, user);
    } catch (err) {
      this.fail(res, err);
    }
  }

  private fail(res: ServerResponse, err: unknown): void {
    let status: Status;
    if (err instanceof ApiError) status = err.toStatus();
    else {
      this.options.logger.error('request failed', {
        err: err instanceof Error ? (err.stack ?? err.message) : String(err),
      });
      status = internalError(err instanceof Error ? err.message : String(err)).toStatus();
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    this.send(res, status.code, status);
  }

  private send(
    res: ServerResponse,
    code: number,
    body: unknown,
    representation: Representation = { kind: 'json' },
    warnings: string[] = [],
  ): void {
    const headers: Record<string, string | string[]> = {};
    if (warnings.length) headers.warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
    if (representation.kind === 'yaml') {
      headers['content-type'] = 'application/yaml';
      res.writeHead(code, headers).end(toYaml(body));
      return;
    }
    headers['content-type'] = 'application/json';
    res.writeHead(code, headers).end(typeof body === 'string' ? body : JSON.stringify(body));
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
        return this.send(res, 200, this.options.version);
      case '/api':
        if (wantsAggregated(req.headers.accept)) {
          res
            .writeHead(200, { 'content-type': aggregatedDiscoveryType })
            .end(JSON.stringify(aggregatedDiscovery(types, true)));
          return;
        }
        return this.send(res, 200, apiVersions(this.address));
      case '/apis':
        if (wantsAggregated(req.headers.accept)) {
          res
            .writeHead(200, { 'content-type': aggregatedDiscoveryType })
            .end(JSON.stringify(aggregatedDiscovery(types, false)));
          return;
        }
        return this.send(res, 200, apiGroupList(types));
      case '/openapi/v2':
        return this.openApiV2(req, res);
      case '/openapi/v3':
        res.writeHead(200, { 'content-type': 'application/json' }).end(this.options.openapi.v3Index);
        return;
    }
    if (path === '/apis/apiextensions.k8s.io/v1/customresourcedefinitions' && get) {
      // Not served (no CRDs), but kubectl's validation asks whether an unknown kind is a CRD: none is.
      return this.send(res, 200, {
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
    const segments = path.split('/').filter(Boolean).map(decodeURIComponent);
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
        return this.send(res, 200, doc);
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
      return this.send(res, 200, doc);
    }
    const target = this.resolve(group, version, rest);
    await this.serveResource(req, res, url, target, user);
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

  private resolve(group: string, version: string, rest: string[]): ResourceRequest {
    const { registry } = this.options;
    let watchPath = false;
    if (rest[0] === 'watch') {
      watchPath = true;
      rest = rest.slice(1);
    }
    let namespace: string | undefined;
    let parts = rest;
    if (rest[0] === 'namespaces' && rest.length >= 3 && registry.find(group, version, rest[2]!)?.namespaced) {
      namespace = rest[1]!;
      parts = rest.slice(2);
    }
    const [plural, name, subresource, ...extra] = parts;
    const type = plural ? registry.find(group, version, plural) : undefined;
    if (!type || extra.length > 0) {
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    if (type.namespaced && namespace === undefined && name !== undefined) {
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    if (subresource !== undefined && !type.subresources.some((s) => s.name === subresource)) {
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    return { type, namespace, name, subresource, watchPath };
  }

  private async readBody(req: IncomingMessage): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let size = 0;
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > this.maxBody) {
      this.drain(req);
      throw tooLarge(this.maxBody);
    }
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > this.maxBody) {
        this.drain(req);
        throw tooLarge(this.maxBody);
      }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  }

  /** Reads and discards the rest of a refused body (up to a bound), so the client sees the answer. */
  private drain(req: IncomingMessage): void {
    let left = 64 * 1024 * 1024;
    req.on('data', (chunk: Buffer) => {
      left -= chunk.length;
      if (left < 0) req.destroy();
    });
    req.resume();
  }

  private async serveResource(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    r: ResourceRequest,
    user: RequestUser,
  ): Promise<void> {
    const { registry } = this.options;
    const q = url.searchParams;
    const t = r.type;
    const method = req.method ?? 'GET';
    const dryRun = q.getAll('dryRun').includes('All');
    if (q.getAll('dryRun').some((v) => v !== 'All'))
      throw badRequest(`dryRun: Unsupported value: "${q.get('dryRun')}": supported values: "All"`);
    const namespace = r.namespace ?? '';
    if (r.name === undefined) {
      // Collection.
      const listOptions = {
        labelSelector: q.get('labelSelector') ?? undefined,
        fieldSelector: q.get('fieldSelector') ?? undefined,
        limit: intParam(q, 'limit'),
        continue: q.get('continue') ?? undefined,
        resourceVersion: q.get('resourceVersion') ?? undefined,
        resourceVersionMatch: q.get('resourceVersionMatch') ?? undefined,
      };
      switch (method) {
        case 'GET': {
          if (r.watchPath || boolParam(q, 'watch')) return this.serveWatch(req, res, q, r, listOptions);
          const representation = negotiate(req.headers.accept);
          const list = registry.list(t, r.namespace, listOptions);
          return this.sendList(res, t, list, representation, q);
        }
        case 'POST': {
          if (t.namespaced && r.namespace === undefined) throw methodNotAllowed();
          const body = parseBody(await this.readBody(req), req.headers['content-type']);
          const { object, warnings } = registry.create(t, namespace, body, {
            dryRun,
            user,
            fieldValidation: parseFieldValidation(q.get('fieldValidation')),
          });
          return this.sendObject(res, 201, t, object, negotiate(req.headers.accept), q, warnings);
        }
        case 'DELETE': {
          const raw = await this.readBody(req);
          const options = deleteOptions(raw, req, q);
          const list = registry.deleteCollection(t, r.namespace, listOptions, { ...options, dryRun });
          return this.send(res, 200, list);
        }
        default:
          throw methodNotAllowed();
      }
    }
    const name = r.name;
    const sub = r.subresource;
    if (sub === 'log') {
      if (method !== 'GET') throw methodNotAllowed();
      return this.serveLogs(res, namespace, name, q);
    }
    if (sub === 'binding') {
      if (method !== 'POST') throw methodNotAllowed();
      const body = parseBody(await this.readBody(req), req.headers['content-type']);
      const status = registry.bind(namespace, name, body);
      return this.send(res, 201, status);
    }
    switch (method) {
      case 'GET':
      case 'HEAD': {
        const representation = negotiate(req.headers.accept);
        const object = registry.get(t, namespace, name);
        return this.sendObject(res, 200, t, object, representation, q);
      }
      case 'PUT': {
        const body = parseBody(await this.readBody(req), req.headers['content-type']);
        if (sub === 'finalize') {
          // Finalizers of a namespace: only `spec.finalizers` changes.
          const current = registry.get(t, '', name);
          const next = {
            ...current,
            spec: {
              ...(current.spec ?? {}),
              finalizers: isObject(body) ? (body.spec?.finalizers ?? []) : [],
            },
          };
          registry.store.update('namespaces', '', name, () => next);
          return this.sendObject(res, 200, t, registry.get(t, '', name), negotiate(req.headers.accept), q);
        }
        const { object, warnings } = registry.update(t, namespace, name, body, {
          dryRun,
          fieldValidation: parseFieldValidation(q.get('fieldValidation')),
          ...(sub ? { subresource: sub } : {}),
        });
        return this.sendObject(res, 200, t, object, negotiate(req.headers.accept), q, warnings);
      }
      case 'PATCH': {
        const contentType = req.headers['content-type'] ?? '';
        const patchType = patchTypeOf(contentType);
        if (!patchType) throw unsupportedMediaType(contentType.split(';')[0] ?? '');
        const body = parseBody(
          await this.readBody(req),
          patchType === 'apply' ? 'application/yaml' : 'application/json',
        );
        const { object, warnings } = registry.patch(t, namespace, name, patchType, body, {
          dryRun,
          fieldValidation: parseFieldValidation(q.get('fieldValidation')),
          ...(sub ? { subresource: sub } : {}),
        });
        return this.sendObject(res, 200, t, object, negotiate(req.headers.accept), q, warnings);
      }
      case 'DELETE': {
        if (sub) throw methodNotAllowed();
        const raw = await this.readBody(req);
        const options = deleteOptions(raw, req, q);
        const result = registry.delete(t, namespace, name, { ...options, dryRun });
        const body = result.body;
        if ((body as Status).kind === 'Status') return this.send(res, 200, body);
        return this.sendObject(res, 200, t, body as KubeObject, negotiate(req.headers.accept), q);
      }
      default:
        throw methodNotAllowed();
    }
  }

  private sendObject(
    res: ServerResponse,
    code: number,
    t: ResourceType,
    object: KubeObject,
    representation: Representation,
    q: URLSearchParams,
    warnings: string[] = [],
  ): void {
    switch (representation.kind) {
      case 'table':
        return this.send(
          res,
          code,
          toTable(
            t,
            [object],
            { resourceVersion: object.metadata.resourceVersion ?? '' },
            {
              now: this.options.clock.now(),
              include: parseIncludeObject(q.get('includeObject')),
              version: representation.version,
              apiVersion: apiVersionOf(t),
            },
          ),
          { kind: 'json' },
          warnings,
        );
      case 'metadata':
        return this.send(res, code, toPartial(object, representation.version), { kind: 'json' }, warnings);
      default:
        return this.send(res, code, object, representation, warnings);
    }
  }

  private sendList(
    res: ServerResponse,
    t: ResourceType,
    list: KubeObject,
    representation: Representation,
    q: URLSearchParams,
  ): void {
    const items = list.items as KubeObject[];
    switch (representation.kind) {
      case 'table':
        return this.send(
          res,
          200,
          toTable(t, items, list.metadata, {
            now: this.options.clock.now(),
            include: parseIncludeObject(q.get('includeObject')),
            version: representation.version,
            apiVersion: apiVersionOf(t),
          }),
        );
      case 'metadata':
        return this.send(res, 200, toPartialList(items, list.metadata, representation.version));
      default:
        return this.send(res, 200, list, representation);
    }
  }

  private serveWatch(
    req: IncomingMessage,
    res: ServerResponse,
    q: URLSearchParams,
    r: ResourceRequest,
    listOptions: Record<string, unknown>,
  ): void {
    const { registry, clock } = this.options;
    const t = r.type;
    const representation = negotiate(req.headers.accept);
    if (representation.kind === 'yaml')
      throw new ApiError(406, 'NotAcceptable', 'watch streams are served as JSON');
    const include = parseIncludeObject(q.get('includeObject'));
    let headersSent = false;
    let first = true;
    let ended = false;
    const start = () => {
      if (headersSent) return;
      headersSent = true;
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
      res.flushHeaders();
    };
    const write = (type: WatchEventType, object: KubeObject, json?: string) => {
      if (ended) return;
      start();
      let line: string | Buffer;
      if (representation.kind === 'table' && type !== 'BOOKMARK' && type !== 'ERROR') {
        const table = toTable(
          t,
          [object],
          { resourceVersion: object.metadata.resourceVersion ?? '' },
          {
            now: clock.now(),
            include,
            version: representation.version,
            apiVersion: apiVersionOf(t),
            noHeaders: !first,
          },
        );
        first = false;
        line = `{"type":"${type}","object":${JSON.stringify(table)}}\n`;
      } else if (representation.kind === 'metadata' && type !== 'BOOKMARK' && type !== 'ERROR') {
        line = `{"type":"${type}","object":${JSON.stringify(toPartial(object, representation.version))}}\n`;
      } else if (json !== undefined) {
        line = sharedLine(type, json);
      } else {
        line = `{"type":"${type}","object":${JSON.stringify(object)}}\n`;
      }
      // Events of one turn of the event loop go out in one write (one TLS record run, one syscall).
      pending.push(typeof line === 'string' ? Buffer.from(line) : line);
      if (pending.length === 1) setImmediate(flush);
    };
    const pending: Buffer[] = [];
    const flush = () => {
      if (ended || pending.length === 0) return;
      res.write(pending.length === 1 ? pending[0]! : Buffer.concat(pending));
      pending.length = 0;
      // A consumer that stops reading is cut off; it resumes from its last resourceVersion.
      if (res.writableLength > 32 * 1024 * 1024) finish();
    };
    const timeoutSeconds = intParam(q, 'timeoutSeconds');
    const minMs = this.options.minWatchTimeoutMs ?? 30 * 60_000;
    const timeoutMs =
      timeoutSeconds !== undefined && timeoutSeconds > 0
        ? timeoutSeconds * 1000
        : minMs * (1 + Math.random());
    let cancelTimeout = () => {};
    let watch = { stop: () => {} };
    const finish = () => {
      if (ended) return;
      flush();
      ended = true;
      watch.stop();
      cancelTimeout();
      this.watches.delete(finish);
      start();
      res.end();
    };
    this.watches.add(finish);
    res.on('close', finish);
    try {
      watch = registry.watch(
        t,
        r.namespace,
        {
          ...listOptions,
          allowWatchBookmarks: boolParam(q, 'allowWatchBookmarks'),
          ...(q.has('sendInitialEvents') ? { sendInitialEvents: boolParam(q, 'sendInitialEvents') } : {}),
        },
        {
          send: write,
          fail: (status) => {
            write('ERROR', status as unknown as KubeObject);
            finish();
          },
        },
      );
    } catch (err) {
      this.watches.delete(finish);
      ended = true;
      throw err;
    }
    if (!ended) {
      start();
      cancelTimeout = clock.setTimeout(finish, timeoutMs);
    }
  }

  private async serveLogs(
    res: ServerResponse,
    namespace: string,
    name: string,
    q: URLSearchParams,
  ): Promise<void> {
    const { registry } = this.options;
    const pods = registry.byStorage('pods');
    const pod = registry.get(pods, namespace, name);
    const containers: string[] = (pod.spec?.containers ?? []).map((c: { name: string }) => c.name);
    const all = [...containers, ...(pod.spec?.initContainers ?? []).map((c: { name: string }) => c.name)];
    let container = q.get('container') ?? '';
    if (!container) {
      if (containers.length !== 1) {
        throw badRequest(
          `a container name must be specified for pod ${name}, choose one of: [${containers.join(' ')}]`,
        );
      }
      container = containers[0]!;
    } else if (!all.includes(container)) {
      throw badRequest(`container ${container} is not valid for pod ${name}`);
    }
    const node = pod.spec?.nodeName;
    if (!node) throw badRequest(`pod ${name} does not have a host assigned`);
    const provider = this.options.logProviders.get(node);
    if (!provider) {
      throw notImplemented(
        `logs of pod ${namespace}/${name} are served by the kubelet of node ${node}, and no kubelet on this control plane serves logs for that node`,
      );
    }
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const options: PodLogOptions = {
      container,
      follow: boolParam(q, 'follow'),
      previous: boolParam(q, 'previous'),
      timestamps: boolParam(q, 'timestamps'),
      ...optional('tailLines', intParam(q, 'tailLines')),
      ...optional('sinceSeconds', intParam(q, 'sinceSeconds')),
      ...optional('limitBytes', intParam(q, 'limitBytes')),
    };
    const out = await provider.logs(pod, options, abort.signal);
    res.writeHead(200, { 'content-type': 'text/plain' });
    if (typeof out === 'string') {
      res.end(out);
      return;
    }
    out.on('error', () => res.destroy());
    out.pipe(res);
  }
}

/**
 * The encoded line of a stored event, made once for every watcher it goes to: the registry hands each
 * watcher the same JSON string, one after the other, so the last one made is the one to reuse.
 */
let lastShared: { type: string; json: string; line: Buffer } | undefined;

function sharedLine(type: string, json: string): Buffer {
  if (lastShared && lastShared.json === json && lastShared.type === type) return lastShared.line;
  const line = Buffer.from(`{"type":"${type}","object":${json}}\n`);
  lastShared = { type, json, line };
  return line;
}

function optional<K extends string>(key: K, value: number | undefined): { [P in K]?: number } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: number };
}

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw badRequest(`${name}: Invalid value: "${v}": must be an integer`);
  return Number(v);
}

function boolParam(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  return v === 'true' || v === '1' || v === 'True';
}

function deleteOptions(raw: Buffer, req: IncomingMessage, q: URLSearchParams): DeleteOptions {
  let body: Record<string, any> = {};
  if (raw.length > 0) {
    const parsed = parseBody(raw, req.headers['content-type']);
    if (!isObject(parsed)) throw badRequest('the body of a delete must be a DeleteOptions object');
    body = parsed;
  }
  const grace =
    intParam(q, 'gracePeriodSeconds') ??
    (typeof body.gracePeriodSeconds === 'number' ? body.gracePeriodSeconds : undefined);
  const pre = isObject(body.preconditions) ? body.preconditions : undefined;
  return {
    gracePeriodSeconds: grace,
    preconditions: pre
      ? { uid: pre.uid ?? undefined, resourceVersion: pre.resourceVersion ?? undefined }
      : undefined,
    dryRun: Array.isArray(body.dryRun) && body.dryRun.includes('All'),
  };
}

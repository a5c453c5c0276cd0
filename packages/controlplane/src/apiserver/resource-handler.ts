/** The resource URLs: collections (list, watch, create, delete) and objects (get, update, patch, delete, subresources). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '@nodelet/kernel';
import { isObject, type KubeObject } from '../object.js';
import { parseBody, parseFieldValidation } from './decode.js';
import { negotiate } from './negotiation.js';
import { patchTypeOf } from './patch.js';
import type { KubeletClient } from './kubelet-client.js';
import { servePodLogs, type PodLogProvider } from './pod-logs.js';
import { requestToken, type TokenRequestContext } from '../serviceaccount/token-request.js';
import type { Authenticator } from './authentication.js';
import type { AuthorizationChain } from '../authorization/chain.js';
import { review } from './reviews.js';
import type { Registry } from './registry.js';
import { boolParam, deleteOptions, intParam, readBody, type ResourceRequest } from './request-params.js';
import type { RequestUser } from './resource-type.js';
import { send, sendList, sendObject } from './responses.js';
import { ApiError, badRequest, methodNotAllowed, unsupportedMediaType, type Status } from './status.js';
import { serveWatch } from './watch-stream.js';
import { patchScale, scaleOf, updateScale } from './scale.js';
import { evictPod } from './eviction.js';

/** What the request handlers share with the server. */
export interface ServeContext {
  readonly registry: Registry;
  readonly clock: Clock;
  readonly maxBodyBytes: number;
  readonly logProviders: ReadonlyMap<string, PodLogProvider>;
  /** Reaches kubelets for pods/log, pods/exec|attach|portforward and nodes/proxy. */
  readonly kubelets?: KubeletClient | undefined;
  readonly minWatchTimeoutMs: number | undefined;
  /** A watch whose client leaves more than this unread is cut off. */
  readonly maxWatchBufferBytes: number;
  /** The open watch streams, each by the function that ends it. */
  readonly watches: Set<() => void>;
  readonly authenticator: Authenticator;
  readonly authorizer: AuthorizationChain;
  /** `serviceaccounts/<name>/token`; absent: not served. */
  readonly tokenRequests: TokenRequestContext | undefined;
}

export function resolveResource(
  ctx: ServeContext,
  group: string,
  version: string,
  rest: string[],
): ResourceRequest {
  const { registry } = ctx;
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

export async function serveResource(
  ctx: ServeContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  r: ResourceRequest,
  user: RequestUser,
): Promise<void> {
  const { registry } = ctx;
  const q = url.searchParams;
  const t = r.type;
  const method = req.method ?? 'GET';
  const dryRun = q.getAll('dryRun').includes('All');
  if (q.getAll('dryRun').some((v) => v !== 'All'))
    throw badRequest(`dryRun: Unsupported value: "${q.get('dryRun')}": supported values: "All"`);
  const namespace = r.namespace ?? '';
  if (t.stateless) {
    if (method !== 'POST' || r.name !== undefined || r.watchPath) throw methodNotAllowed();
    const body = parseBody(await readBody(req, ctx.maxBodyBytes), req.headers['content-type']);
    const fieldValidation = parseFieldValidation(q.get('fieldValidation'));
    const { object, warnings } = await review(
      t,
      body,
      user,
      ctx.authenticator,
      ctx.authorizer,
      registry,
      fieldValidation,
    );
    return send(res, 201, object, negotiate(req.headers.accept), warnings);
  }
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
        if (r.watchPath || boolParam(q, 'watch')) return serveWatch(ctx, req, res, q, r, listOptions);
        const representation = negotiate(req.headers.accept);
        const list = registry.list(t, r.namespace, listOptions);
        return sendList(ctx.clock, res, t, list, representation, q);
      }
      case 'POST': {
        if (t.namespaced && r.namespace === undefined) throw methodNotAllowed();
        const body = parseBody(await readBody(req, ctx.maxBodyBytes), req.headers['content-type']);
        const { object, warnings } = registry.create(t, namespace, body, {
          dryRun,
          user,
          fieldValidation: parseFieldValidation(q.get('fieldValidation')),
        });
        return sendObject(ctx.clock, res, 201, t, object, negotiate(req.headers.accept), q, warnings);
      }
      case 'DELETE': {
        const raw = await readBody(req, ctx.maxBodyBytes);
        const options = deleteOptions(raw, req, q);
        const list = registry.deleteCollection(t, r.namespace, listOptions, { ...options, dryRun, user });
        return send(res, 200, list);
      }
      default:
        throw methodNotAllowed();
    }
  }
  const name = r.name;
  const sub = r.subresource;
  if (sub === 'log') {
    if (method !== 'GET') throw methodNotAllowed();
    return servePodLogs(ctx, req, res, namespace, name, q);
  }
  if (sub === 'exec' || sub === 'attach' || sub === 'portforward') {
    throw badRequest(`Upgrade request required: ${sub} streams over SPDY or WebSocket`);
  }
  if (sub === 'token') {
    if (method !== 'POST') throw methodNotAllowed();
    if (!ctx.tokenRequests)
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    const body = parseBody(await readBody(req, ctx.maxBodyBytes), req.headers['content-type']);
    const fieldValidation = parseFieldValidation(q.get('fieldValidation'));
    const { object, warnings } = await requestToken(
      ctx.tokenRequests,
      namespace,
      name,
      body,
      fieldValidation,
      user,
    );
    return send(res, 201, object, negotiate(req.headers.accept), warnings);
  }
  if (sub === 'binding') {
    if (method !== 'POST') throw methodNotAllowed();
    const body = parseBody(await readBody(req, ctx.maxBodyBytes), req.headers['content-type']);
    const status = registry.bind(namespace, name, body);
    return send(res, 201, status);
  }
  if (sub === 'eviction') {
    if (method !== 'POST') throw methodNotAllowed();
    const body = parseBody(await readBody(req, ctx.maxBodyBytes), req.headers['content-type']);
    const status = evictPod(registry, namespace, name, body, { dryRun, user });
    return send(res, status.code, status);
  }
  if (sub === 'scale') return serveScale(ctx, req, res, t, namespace, name, { dryRun, user });
  switch (method) {
    case 'GET':
    case 'HEAD': {
      const representation = negotiate(req.headers.accept);
      const object = registry.get(t, namespace, name);
      return sendObject(ctx.clock, res, 200, t, object, representation, q);
    }
    case 'PUT': {
      const body = parseBody(await readBody(req, ctx.maxBodyBytes), req.headers['content-type']);
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
        return sendObject(
          ctx.clock,
          res,
          200,
          t,
          registry.get(t, '', name),
          negotiate(req.headers.accept),
          q,
        );
      }
      const { object, warnings } = registry.update(t, namespace, name, body, {
        dryRun,
        user,
        fieldValidation: parseFieldValidation(q.get('fieldValidation')),
        ...(sub ? { subresource: sub } : {}),
      });
      return sendObject(ctx.clock, res, 200, t, object, negotiate(req.headers.accept), q, warnings);
    }
    case 'PATCH': {
      const contentType = req.headers['content-type'] ?? '';
      const patchType = patchTypeOf(contentType);
      if (!patchType) throw unsupportedMediaType(contentType.split(';')[0] ?? '');
      const body = parseBody(
        await readBody(req, ctx.maxBodyBytes),
        patchType === 'apply' ? 'application/yaml' : 'application/json',
      );
      const { object, warnings } = registry.patch(t, namespace, name, patchType, body, {
        dryRun,
        user,
        fieldValidation: parseFieldValidation(q.get('fieldValidation')),
        ...(sub ? { subresource: sub } : {}),
      });
      return sendObject(ctx.clock, res, 200, t, object, negotiate(req.headers.accept), q, warnings);
    }
    case 'DELETE': {
      if (sub) throw methodNotAllowed();
      const raw = await readBody(req, ctx.maxBodyBytes);
      const options = deleteOptions(raw, req, q);
      const result = registry.delete(t, namespace, name, { ...options, dryRun, user });
      const body = result.body;
      if ((body as Status).kind === 'Status') return send(res, 200, body);
      return sendObject(ctx.clock, res, 200, t, body as KubeObject, negotiate(req.headers.accept), q);
    }
    default:
      throw methodNotAllowed();
  }
}

/** `<resource>/<name>/scale`: an autoscaling/v1 Scale, always as JSON. */
async function serveScale(
  ctx: ServeContext,
  req: IncomingMessage,
  res: ServerResponse,
  t: ResourceRequest['type'],
  namespace: string,
  name: string,
  options: { dryRun: boolean; user: RequestUser | undefined },
): Promise<void> {
  const { registry } = ctx;
  switch (req.method) {
    case 'GET':
    case 'HEAD':
      return send(res, 200, scaleOf(registry.get(t, namespace, name)));
    case 'PUT': {
      const body = parseBody(await readBody(req, ctx.maxBodyBytes), req.headers['content-type']);
      return send(res, 200, updateScale(registry, t, namespace, name, body, options));
    }
    case 'PATCH': {
      const contentType = req.headers['content-type'] ?? '';
      const patchType = patchTypeOf(contentType);
      if (!patchType || patchType === 'apply') throw unsupportedMediaType(contentType.split(';')[0] ?? '');
      const body = parseBody(await readBody(req, ctx.maxBodyBytes), 'application/json');
      return send(res, 200, patchScale(registry, t, namespace, name, patchType, body, options));
    }
    default:
      throw methodNotAllowed();
  }
}
